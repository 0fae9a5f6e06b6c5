import type { Feature } from './feature.js'
import { accountsFeature } from './accounts/index.js'
import { docsFeature } from './docs/index.js'
import { kvFeature } from './kv/index.js'
import { formsFeature } from './forms/index.js'
import { imageHostFeature } from './image-host/index.js'
import { hostedDataFeature } from './hosted-data/index.js'
import { filesFeature } from './files/index.js'
import { foldersFeature } from './folders/index.js'
import { hostingFeature } from './hosting/index.js'
import { pagesFeature } from './pages/index.js'

/** Every part of the service, in registration order. */
export const FEATURES: Feature[] = [
  accountsFeature,
  docsFeature,
  kvFeature,
  formsFeature,
  imageHostFeature,
  hostedDataFeature,
  filesFeature,
  foldersFeature,
  hostingFeature,
  pagesFeature,
]
