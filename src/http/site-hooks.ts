import type { IncomingMessage, ServerResponse } from 'node:http'

/**
 * What the public host asks the rest of the service about a request before it answers with
 * hosted bytes (implemented by src/features/domains/, handed over as that feature's state).
 * Invariants:
 * - a Host that is a verified custom domain serves exactly one project of one user;
 * - no hosted byte, status or validator of a protected name is sent before `access` said yes.
 */
export interface SiteHooks {
  /**
   * The project a custom domain (a host name, lowercased, no port) serves: the target; null:
   * not a verified domain. Answers at once from memory when it can, else a promise.
   */
  domain(host: string): DomainTarget | null | Promise<DomainTarget | null>
  /**
   * Visitor access of `/{name}/...` of a user (a project or a single page): true when it may
   * be served; 'private' when a visitor password let it through (the answer must not be kept
   * by shared caches); false when the hook has answered (401, the password form, 410, 429, a
   * 303 after a right password). Answers at once when it can, else a promise.
   */
  access(req: IncomingMessage, res: ServerResponse, at: AccessPoint): Access | Promise<Access>
  /** True only when `access` is known, from memory and at once, to let this name through. */
  openNow(username: string, name: string): boolean
  /**
   * The verified primary custom domain of a user's project (a host name), where browsers
   * opening its other URLs are sent; null: none. At once from memory when it can, else a promise.
   */
  primaryDomain(username: string, project: string): string | null | Promise<string | null>
}

/** What visitor access allows: serve (true), serve to this visitor only ('private'), or nothing more (false: answered). */
export type Access = boolean | 'private'

export interface DomainTarget {
  username: string
  project: string
  /** One kept deploy of the project (a preview's own origin); null or absent: the live deploy. */
  deploy?: string | null
}

export interface AccessPoint {
  username: string
  /** The raw (still percent-encoded) first path segment after the user: a project or page name. */
  rawName: string
  /**
   * Whether this origin takes the password form's cookie: a user's origin, a project's own
   * origin or a custom domain (the user's content only); false on the path form (the
   * service's host: HTTP Basic only).
   */
  cookies: boolean
}

/** Lets everything through: no custom domains, no visitor access. */
export const OPEN_SITES: SiteHooks = { domain: () => null, access: () => true, openNow: () => true, primaryDomain: () => null }
