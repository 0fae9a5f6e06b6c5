import { writeCrashSuite } from '../support/write-crash.js'

writeCrashSuite('sqlite')
