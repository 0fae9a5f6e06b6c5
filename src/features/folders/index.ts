import type { Feature } from '../feature.js'
import { foldersApi } from './routes.js'
import { foldersMigrations } from './store.js'

/** Folder projects: batch upload, list, read, publish/unpublish, diff (served by the hosting feature). */
export const foldersFeature: Feature = {
  name: 'folders',
  migrations: foldersMigrations,
  blobColumns: [{ table: 'folder_files', column: 'digest' }],
  api: foldersApi,
}
