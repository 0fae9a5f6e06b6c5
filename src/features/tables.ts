import type { FeatureTables } from './feature.js'
import { deploysMigrations, filesMigrations, foldersMigrations } from './sites/migrations.js'
import { formMigrations } from './forms/migrations.js'
import { hostedDataMigrations } from './hosted-data/migrations.js'
import { imageMigrations } from './image-host/migrations.js'
import { kvMigrations } from './kv/migrations.js'
import { domainMigrations } from './domains/migrations.js'
import { adminMigrations } from './admin/migrations.js'
import { abuseMigrations } from './abuse/migrations.js'
import { accountMigrations } from './accounts/migrations.js'

/**
 * Every feature's tables: its migrations and the columns where it keeps blob digests. The
 * composition root passes this list to db/migrate.ts and storage/sweeper.ts. It imports only
 * the features' store/migration modules, never their routes, so the admin commands that
 * migrate and sweep load no route code (no sharp, no argon2, no prom-client).
 */
export const FEATURE_TABLES: readonly FeatureTables[] = [
  { name: 'accounts', migrations: accountMigrations },
  { name: 'kv', migrations: kvMigrations },
  { name: 'forms', migrations: formMigrations, blobColumns: [{ table: 'form_files', column: 'digest' }] },
  { name: 'image-host', migrations: imageMigrations, blobColumns: [{ table: 'images', column: 'digest' }] },
  { name: 'hosted-data', migrations: hostedDataMigrations, blobColumns: [{ table: 'hosted_versions', column: 'digest' }] },
  { name: 'files', migrations: filesMigrations, blobColumns: [{ table: 'files', column: 'digest' }] },
  { name: 'folders', migrations: foldersMigrations, blobColumns: [{ table: 'folder_files', column: 'digest' }] },
  { name: 'deploys', migrations: deploysMigrations, blobColumns: [{ table: 'deploy_files', column: 'digest' }] },
  { name: 'domains', migrations: domainMigrations },
  { name: 'admin', migrations: adminMigrations },
  // evidence of abuse reports keeps its blobs (taken-down content has no other row)
  { name: 'abuse', migrations: abuseMigrations, blobColumns: [{ table: 'abuse_evidence', column: 'digest' }] },
]

/** The (table, column) pairs that hold blob digests, for the sweeper. */
export const BLOB_COLUMNS = FEATURE_TABLES.flatMap((f) => f.blobColumns ?? [])
