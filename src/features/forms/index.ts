import type { Feature } from '../feature.js'
import { formsUi } from './page.js'
import { formApi } from './routes.js'
import { notifyApi } from './notify-routes.js'
import { createNotifyService } from './notify-service.js'
import { createMailer } from './notify-mail.js'
import { startNotifier } from './notify-worker.js'

/**
 * Form collection: public submissions (CORS), the owner's management endpoints, and
 * notifications (signed webhooks, e-mail) delivered from a database outbox by a worker that
 * runs in every instance (notify-worker.ts).
 */
export const formsFeature: Feature = {
  name: 'forms',
  ui: formsUi,
  api(app, deps) {
    const mailer = createMailer(deps.config.smtpUrl, deps.config.smtpFrom, deps.config.smtpTimeoutMs)
    const notify = createNotifyService(deps, mailer)
    formApi(app, deps, notify)
    notifyApi(app, deps, notify)
    const worker = startNotifier(deps, mailer, app.log)
    app.addHook('onClose', async () => {
      await worker.stop()
      mailer?.close()
    })
  },
}
