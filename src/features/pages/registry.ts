import type { Lang } from '../../web/messages.js'
import type { FeaturePage, FeatureUi } from '../../web/page.js'
import { mergeMessages, type Messages } from './i18n.js'

/** An entry of the navigation (and, with `card`, of the dashboard). */
export interface NavEntry {
  id: string
  label: string
  card?: string
  href: string
  /** Shown to admins only. */
  adminOnly?: boolean
}

/** Every feature's web interface, gathered from the features' `ui` declarations. */
export interface Registry {
  messages: Record<Lang, Messages>
  /** The dashboard first, then the features' entries by their `order`. */
  nav: NavEntry[]
  pages: FeaturePage[]
  /** Absolute paths of the features' browser scripts. */
  scripts: string[]
}

export function buildRegistry(uis: readonly FeatureUi[]): Registry {
  const pages = uis.flatMap((ui) => ui.pages)
  const entries = pages
    .flatMap((p) => (p.nav ? [{ ...p.nav, href: p.path }] : []))
    .sort((a, b) => a.order - b.order)
    .map(({ id, label, card, href, adminOnly }) => ({ id, label, card, href, adminOnly }))
  const nav: NavEntry[] = [{ id: 'dashboard', label: 'nav.dashboard', href: '/dashboard' }, ...entries]
  const ids = new Set<string>()
  for (const e of nav) {
    if (ids.has(e.id)) throw new Error(`pages: navigation entry ${e.id} is declared twice`)
    ids.add(e.id)
  }
  return { messages: mergeMessages(uis.map((ui) => ui.messages)), nav, pages, scripts: uis.flatMap((ui) => ui.scripts) }
}
