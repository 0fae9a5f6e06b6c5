// Makes the run's shared test databases (templates.ts) into the folder given as the first
// argument; run by scripts/run-tests.mjs before the test processes start. PostgreSQL's is
// skipped when SVC_TEST_POSTGRES=0 (no PostgreSQL reachable).
import { writeTemplates } from './templates.js'

const dir = process.argv[2]
if (!dir) throw new Error('usage: make-templates.ts DIR')
const pgUrl = process.env.SVC_TEST_POSTGRES === '0' ? null : (process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test')
await writeTemplates(dir, pgUrl)
