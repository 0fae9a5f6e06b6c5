import type { Feature } from '../feature.js'
import { filesApi } from './routes.js'
import { filesMigrations } from './store.js'

/** Single-file hosting: upload, configuration, list, delete (served by the hosting feature). */
export const filesFeature: Feature = {
  name: 'files',
  migrations: filesMigrations,
  blobColumns: [{ table: 'files', column: 'digest' }],
  api: filesApi,
}
