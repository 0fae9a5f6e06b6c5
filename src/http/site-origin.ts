import type { IncomingMessage } from 'node:http'
import type { FastifyRequest } from 'fastify'
import type { Config } from '../config.js'

/**
 * Per-user origins: each user's content at {username}.{content domain}, as GitHub Pages and
 * Neocities do it, so the browser's same-origin policy is the wall between users and
 * between user content and the service. Invariants:
 * - a host names a user only as exactly one DNS label directly under the content domain, and
 *   one of the user's projects (at the root of its own origin) as one label more:
 *   {project}.{username}.{content domain} (usernames have no dots, so neither form can be
 *   read as the other); one kept deploy of a project as {deploy id}--{project} in that label
 *   (project labels never contain `--`, so a preview's label is never a project's);
 * - the service's own host is never read as a user's origin, even under the content domain;
 * - on loopback (`*.localhost`, which browsers resolve to 127.0.0.1 and treat as a secure
 *   context over plain HTTP) the content domain defaults to "localhost".
 */

type OriginConfig = Pick<Config, 'contentDomain' | 'contentDomainAuto' | 'publicUrl' | 'trustProxy'>

/** A user's site origin as seen from an API request (the `site_url` fields), or null. */
export function siteOriginFor(req: FastifyRequest, config: OriginConfig, username: string): string | null {
  return userSiteOrigin(username, req.raw, config, req.server.ports)
}

/** A site_url field: the page of a user's origin at a path (names percent-encoded by the caller), or null. */
export const siteUrl = (origin: string | null, path: string): string | null => (origin === null ? null : origin + path)

/** Ports the server actually listens on, filled in by listen(); null until then. */
export interface ListenPorts {
  main: number | null
  http: number | null
}

/** The `ask` endpoint of on-demand TLS (src/features/sites/tls-ask.ts). */
export const TLS_ASK_PATH = '/.well-known/svc/tls-allowed'

const LABEL_RE = /^[a-z0-9][a-z0-9_-]{0,62}$/
// a project's label: letters, digits and '-' (a public CA certifies no '_'), not ending in
// '-' and never '--' (so no IDN form, xn--, which a browser would show as other letters; and
// '--' is left to previews' labels)
const PROJECT_LABEL_RE = /^(?!.*--)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/
// a kept deploy's label: {deploy id}--{project}, one host label (at most 63 characters)
const DEPLOY_ID_RE = /^[0-9a-z]{12}$/
const PREVIEW_SEP = '--'
const MAX_LABEL = 63
const LOOPBACK_RE = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/

/** The host name of a Host header: lowercased, without port or trailing dot. */
export function hostName(host: string | undefined): string {
  if (!host) return ''
  const h = host.toLowerCase()
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1)
  const colon = h.indexOf(':')
  const name = colon < 0 ? h : h.slice(0, colon)
  return name.endsWith('.') ? name.slice(0, -1) : name
}

// PUBLIC_URL's host name, parsed once per value: siteOf runs on every request of the public host
let parsedUrl: string | null = null
let parsedHost = ''
function publicHostOf(config: OriginConfig): string | null {
  if (!config.publicUrl) return null
  if (config.publicUrl !== parsedUrl) {
    parsedHost = hostName(new URL(config.publicUrl).host)
    parsedUrl = config.publicUrl
  }
  return parsedHost
}

/**
 * Names no new account may take under this configuration: the label directly under the content
 * domain in PUBLIC_URL's host (`svc` for https://svc.example.net with CONTENT_DOMAIN=example.net,
 * `b` for https://a.b.example.net). That user's origin, or one of its projects', would be the
 * service's own host, a parent of it or a child of it: user content on the service's origin or
 * able to set cookies the service receives.
 */
export function serviceLabels(config: OriginConfig): Set<string> {
  const domain = config.contentDomain ?? (config.contentDomainAuto ? 'localhost' : null)
  const label = domain === null ? null : serviceLabelUnder(domain, config)
  return new Set(label === null ? [] : [label])
}

// the last answer of serviceLabelUnder: siteOf asks it on every request of a user's origin
let labelDomain = ''
let labelHost = ''
let labelValue: string | null = null
/** The label directly under `domain` in PUBLIC_URL's host, or null (no PUBLIC_URL, or a host elsewhere). */
function serviceLabelUnder(domain: string, config: OriginConfig): string | null {
  const host = publicHostOf(config)
  if (host === null) return null
  if (domain !== labelDomain || host !== labelHost) {
    const labels = host.endsWith(`.${domain}`) ? host.slice(0, -domain.length - 1).split('.') : []
    labelValue = labels.length > 0 ? labels[labels.length - 1] : null
    labelDomain = domain
    labelHost = host
  }
  return labelValue
}
const isServiceLabel = (username: string, domain: string, config: OriginConfig): boolean => serviceLabelUnder(domain, config) === username

/** The `:port` of a Host header, or '' when it names none. */
export const portOf = (host: string | undefined): string => {
  const m = host ? /:(\d+)$/.exec(host) : null
  return m ? `:${m[1]}` : ''
}

/** The content domain for requests made to `host` (a host name), or null when there is none. */
export function contentDomainFor(host: string, config: OriginConfig): string | null {
  if (config.contentDomain) return config.contentDomain
  if (config.contentDomainAuto && (LOOPBACK_RE.test(host) || host.endsWith('.localhost'))) return 'localhost'
  return null
}

/**
 * What a content host names: a user's origin (project null), one project's own origin
 * (deploy null: its live deploy), or one kept deploy of a project at its own origin.
 */
export interface SiteHost {
  username: string
  project: string | null
  deploy: string | null
}

/** The user (and project) whose origin a request's Host names, or null for the service's own hosts. */
export function siteOf(hostHeader: string | undefined, config: OriginConfig): SiteHost | null {
  // on every request of the public host: no work when no content domain can apply
  const domain = config.contentDomain ?? (config.contentDomainAuto ? 'localhost' : null)
  if (domain === null || hostHeader === undefined) return null
  const host = hostName(hostHeader)
  if (host.length <= domain.length + 1 || !host.endsWith(domain) || host[host.length - domain.length - 1] !== '.') return null
  if (publicHostOf(config) === host) return null
  const label = host.slice(0, host.length - domain.length - 1)
  const dot = label.indexOf('.')
  // the service's own label is no user's, nor are its project hosts (an account made before
  // that name was reserved: serviceLabels)
  if (dot < 0) return LABEL_RE.test(label) && !isServiceLabel(label, domain, config) ? { username: label, project: null, deploy: null } : null
  const username = label.slice(dot + 1)
  if (!LABEL_RE.test(username) || isServiceLabel(username, domain, config)) return null
  const first = label.slice(0, dot)
  const sep = first.indexOf(PREVIEW_SEP)
  if (sep < 0) return PROJECT_LABEL_RE.test(first) ? { username, project: first, deploy: null } : null
  const deploy = first.slice(0, sep)
  const project = first.slice(sep + PREVIEW_SEP.length)
  return first.length <= MAX_LABEL && DEPLOY_ID_RE.test(deploy) && PROJECT_LABEL_RE.test(project) ? { username, project, deploy } : null
}

/**
 * A host of the content domain that names no user or project: deeper names, labels that
 * cannot be names, the bare configured domain when PUBLIC_URL names the service's host
 * elsewhere (bare `localhost` is the service's own). Such a
 * host serves nothing, and never the service: a user's page could set cookies for it.
 */
export function isContentOnlyHost(hostHeader: string | undefined, config: OriginConfig): boolean {
  const domain = config.contentDomain ?? (config.contentDomainAuto ? 'localhost' : null)
  if (domain === null || hostHeader === undefined) return false
  const host = hostName(hostHeader)
  if (publicHostOf(config) === host) return false
  // the bare domain: the service's own host too when no PUBLIC_URL says which host that is
  if (host === domain) return config.contentDomain !== null && Boolean(config.publicUrl)
  return host.endsWith(`.${domain}`) && siteOf(hostHeader, config) === null
}

/** The path-form segment a project host names: {project}, or {project}@{deploy id} for one kept deploy. */
export const projectSegment = (project: string, deploy: string | null): string => (deploy === null ? project : `${project}@${deploy}`)

/** The username whose origin (or one of whose projects' origins) a request's Host names, or null. */
export const siteUserOf = (hostHeader: string | undefined, config: OriginConfig): string | null => siteOf(hostHeader, config)?.username ?? null

/**
 * The service's own origin as seen from a content host (a user's or project's origin), which
 * serves none of the service's pages: PUBLIC_URL, else on loopback (`*.localhost`) HTTPS on the
 * main port; null when neither says (a content domain behind a proxy without PUBLIC_URL).
 */
export function serviceOriginFromContent(hostHeader: string | undefined, config: OriginConfig, ports: ListenPorts): string | null {
  return config.publicUrl ?? (hostName(hostHeader).endsWith('.localhost') && ports.main !== null ? `https://localhost:${ports.main}` : null)
}

/** Whether a project name can be a host label, so the project has an origin of its own. */
export const hasProjectOrigin = (name: string): boolean => PROJECT_LABEL_RE.test(name)

/**
 * The origin of a user's site as a visitor reaches it from this request, or null when no
 * content domain applies. On loopback it is the plain-HTTP listener when there is one (no
 * certificate warning, and still a secure context); otherwise HTTPS on the service's port.
 */
export function userSiteOrigin(
  username: string,
  req: IncomingMessage | { headers: IncomingMessage['headers'] },
  config: OriginConfig,
  ports: ListenPorts,
): string | null {
  const reqHost = req.headers.host
  const serviceHost = config.publicUrl ? new URL(config.publicUrl).host : reqHost
  const domain = contentDomainFor(hostName(serviceHost), config)
  if (domain === null || isServiceLabel(username, domain, config)) return null
  if (domain === 'localhost' && !config.trustProxy && ports.http !== null) return `http://${username}.localhost:${ports.http}`
  return `https://${username}.${domain}${portOf(serviceHost)}`
}

/** An origin_url field: the root of a project's own origin (projectOrigin), or null. */
export const originUrl = (userOrigin: string | null, project: string): string | null => {
  const o = projectOrigin(userOrigin, project)
  return o === null ? null : `${o}/`
}

/**
 * A project's own origin, from its user's origin (userSiteOrigin): the project's name as one
 * more label. null when there is no user origin or the name cannot be a host label.
 */
export function projectOrigin(userOrigin: string | null, project: string): string | null {
  if (userOrigin === null || !hasProjectOrigin(project)) return null
  return withLabel(userOrigin, project)
}

/**
 * The origin_url of one kept deploy (a preview, or any other): {deploy id}--{project} as one
 * more label, or null when the project has no origin or the label would be too long.
 */
export function previewOriginUrl(userOrigin: string | null, project: string, deployId: string): string | null {
  const label = `${deployId}${PREVIEW_SEP}${project}`
  if (userOrigin === null || !hasProjectOrigin(project) || !DEPLOY_ID_RE.test(deployId) || label.length > MAX_LABEL) return null
  return `${withLabel(userOrigin, label)}/`
}

const withLabel = (origin: string, label: string): string => {
  const at = origin.indexOf('//') + 2
  return `${origin.slice(0, at)}${label}.${origin.slice(at)}`
}
