// Makes the run's shared test databases (templates.ts) into the folder DIR; run by
// scripts/run-tests.mjs before the test processes start, with the PostgreSQL the tests use
// (none: no PostgreSQL reachable, its template is not made).
import { writeTemplates } from './templates.js'

const [dir, pgUrl] = process.argv.slice(2)
if (!dir) throw new Error('usage: make-templates.ts DIR [POSTGRES_URL]')
await writeTemplates(dir, pgUrl || null)
