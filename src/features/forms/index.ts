import type { Feature } from '../feature.js'
import { formMigrations } from './migrations.js'
import { formApi } from './routes.js'

/** Form collection: public submissions (CORS) and the owner's management endpoints. */
export const formsFeature: Feature = {
  name: 'forms',
  migrations: formMigrations,
  api: formApi,
}
