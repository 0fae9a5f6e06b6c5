import type { Feature } from './feature.js'
import { accountsFeature } from './accounts/index.js'
import { imageHostFeature } from './image-host/index.js'

/** Every part of the service, in registration order. */
export const FEATURES: Feature[] = [
  accountsFeature,
  imageHostFeature,
]
