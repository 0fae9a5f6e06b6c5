import type { Feature } from '../feature.js'
import { hostedDataApi } from './routes.js'
import { hostedDataPublic } from './public.js'
import { hostedDataMigrations } from './store.js'

/** Hosted data: versioned UTF-8 text/JSON files with a public raw link to the default version. */
export const hostedDataFeature: Feature = {
  name: 'hosted-data',
  migrations: hostedDataMigrations,
  blobColumns: [{ table: 'hosted_versions', column: 'digest' }],
  api: hostedDataApi,
  public: hostedDataPublic,
}
