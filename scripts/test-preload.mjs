/**
 * Loads the dependencies that ship as hundreds of small ES modules (kysely, typebox, zod,
 * file-type) before tsx registers its loader hooks (scripts/run-tests.mjs imports this file
 * first). Loaded here, they are in the module map when the source imports them, so they skip
 * the hooks: through tsx each module costs a round trip to the hooks thread, a large share of
 * each server test file's start (docs/benchmarks/2026-11-27-redeploy-test-preload.md).
 */
import 'kysely'
import '@sinclair/typebox'
import 'zod'
import 'file-type'
