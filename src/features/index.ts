import type { AnyFeature } from './feature.js'
import { accountsFeature } from './accounts/index.js'
import { healthFeature } from './health/index.js'
import { docsFeature } from './docs/index.js'
import { kvFeature } from './kv/index.js'
import { formsFeature } from './forms/index.js'
import { imageHostFeature } from './image-host/index.js'
import { hostedDataFeature } from './hosted-data/index.js'
import { sitesFeature } from './sites/index.js'
import { exportFeature } from './export/index.js'
import { pagesFeature } from './pages/index.js'
import { domainsFeature } from './domains/index.js'
import { adminFeature } from './admin/index.js'
import { abuseFeature } from './abuse/index.js'
import { mcpFeature } from './mcp/index.js'

/** The parts of the service, in registration order. */
const PARTS: readonly AnyFeature[] = [
  healthFeature,
  accountsFeature,
  docsFeature,
  kvFeature,
  formsFeature,
  imageHostFeature,
  hostedDataFeature,
  domainsFeature,
  // before sites: the /.well-known/ paths of abuse handling are static routes on the service host
  adminFeature,
  abuseFeature,
  sitesFeature,
  mcpFeature,
  exportFeature,
]

/** Every feature: the parts, then the pages shell, which renders the parts' declared `ui`. */
export const FEATURES: readonly AnyFeature[] = [...PARTS, pagesFeature(PARTS)]
