import type { FastifyReply, FastifyRequest } from 'fastify'
import type { User } from '../auth/users.js'
import type { SafeHtml } from './html.js'
import type { Lang, MessageTables, SharedKey, Translator } from './messages.js'

/** What a page handler sees; `t` knows the page's own keys and the shared ones. */
export interface PageCtx<K extends string = string> {
  req: FastifyRequest
  reply: FastifyReply
  lang: Lang
  t: Translator<K | SharedKey>
  nonce: string
  /** The logged-in account (pages with auth 'required' always have one). */
  user: User | null
  csrf: string | null
  /** Origin of the service and of user content, for absolute links. */
  origin: string
  contentOrigin: string
}

/** What a page handler returns: a title, the main content, and its script (/static/{script}.js). */
export interface PageOut {
  title: string
  body: SafeHtml
  script?: string
  /** Extra data for the page's script (JSON in the page; escaped). */
  data?: Record<string, unknown>
  status?: number
  /** Navigation entry to mark as current (default: the page's own nav entry). */
  nav?: string
}

/** required: signed in, else sent to /login; guest: signed out, else sent to /dashboard. */
export type PageAuth = 'required' | 'optional' | 'guest'

/** A GET page of the service; returning nothing means the handler answered itself (a redirect). */
export interface FeaturePage<K extends string = string> {
  path: string
  /** Default 'required'. */
  auth?: PageAuth
  /**
   * An entry in the navigation and a card on the dashboard (signed-in users), ordered by
   * `order`; `label` names it, `card` is the card's one-line text. `adminOnly`: shown to
   * admins only (the page itself still checks).
   */
  nav?: { id: string; order: number; label: K; card: K; adminOnly?: boolean }
  render(ctx: PageCtx<K>): Promise<PageOut | void> | PageOut | void
}

/**
 * A feature's web interface, declared on its Feature object (`ui`): its messages, its pages
 * and its browser scripts (absolute paths, see sourceFile; each served at /static/{file name}).
 * The pages shell (features/pages) renders them in the common frame.
 */
export interface FeatureUi<K extends string = string> {
  messages: MessageTables<K>
  pages: FeaturePage<K>[]
  scripts: string[]
}
