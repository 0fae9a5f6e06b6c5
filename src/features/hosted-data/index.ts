import type { Feature } from '../feature.js'
import { hostedDataUi } from './page.js'
import { hostedDataApi } from './routes.js'
import { hostedDataPublic } from './public.js'

/** Hosted data: versioned UTF-8 text/JSON files with a public raw link to the default version. */
export const hostedDataFeature: Feature = {
  name: 'hosted-data',
  ui: hostedDataUi,
  api: hostedDataApi,
  public: hostedDataPublic,
}
