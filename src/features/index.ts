import type { Feature } from './feature.js'
import { accountsFeature } from './accounts/index.js'
import { docsFeature } from './docs/index.js'
import { pagesFeature } from './pages/index.js'

/** Every part of the service, in registration order. */
export const FEATURES: Feature[] = [
  accountsFeature,
  docsFeature,
  pagesFeature,
]
