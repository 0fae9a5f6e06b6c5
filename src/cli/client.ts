import { ApiClient } from './client/api.js'
import { resolveConnection } from './client/config.js'
import { ApiError, CliError, UsageError } from './client/errors.js'
import { Reporter } from './client/progress.js'
import type { Ctx } from './client/commands/context.js'
import { dataCommand } from './client/commands/data.js'
import { deployCommand, pageCommand } from './client/commands/publish.js'
import { deploysCommand, promoteCommand, rollbackCommand } from './client/commands/deploys.js'
import { formsCommand } from './client/commands/forms.js'
import { kvCommand } from './client/commands/kv.js'
import { accessCommand, domainCommand } from './client/commands/domains.js'
import { loginCommand, logoutCommand, whoamiCommand } from './client/commands/session.js'
import { COMMON_OPTIONS } from './client/args.js'
import { CLIENT_ENV, CLIENT_HELP, type ClientCommand } from './client/help.js'
import { renderHelp } from './help.js'

export const CLIENT_USAGE = `Client commands (talk to a server over its API; see docs/cli.md):
  svc login --url https://host --key KEY [--insecure]      store the server and API key (0600 file)
  svc login --url https://host --key-stdin                 the same, the key read from stdin (not in ps or history)
  svc login [--url URL] --username NAME [--password-stdin]   also store a login session (hosted data)
  svc logout | svc whoami
  svc deploy <dir> [--project NAME] [--preview] [-m MESSAGE] [--dry-run] [--dotfiles] [--no-gzip]
             [--batch [--no-publish] [--delete] [--concurrency N] [--batch-files N] [--batch-bytes SIZE]]
  svc deploys [list] [PROJECT] [--project NAME]             the project's kept deploys
  svc rollback [ID] [--project NAME] | svc promote ID [--project NAME]   make a deploy live
  svc page <file.html> [--project NAME] [--description TEXT]
  svc kv get KEY | set KEY VALUE [--type json|text|number] [--public] [--tags a,b] [--file F]
  svc kv incr KEY [BY] | rm KEY | ls [--prefix P] [--page N --per-page N]
  svc data push <file> [--default] [--id FILE_ID] [--name NAME] [--type CONTENT_TYPE]
  svc forms ls | export FORM_ID [--csv] [-o FILE]
  svc forms notify FORM_ID [--webhook URL [--paused] | --no-webhook] [--email each|digest|off]
  svc forms rotate-secret FORM_ID | deliveries FORM_ID | redeliver DELIVERY_ID   form notifications
  svc domain add DOMAIN --project NAME | verify DOMAIN | primary DOMAIN [--off] | list | remove DOMAIN
  svc access set NAME [--password-stdin | --no-password] [--expires 2026-12-31T23:00:00Z|7d | --no-expiry]
  svc access clear NAME | list          (NAME: a folder project or single page; SVC_VISITOR_PASSWORD)
  svc mcp                        an MCP server on stdio for AI agents (docs/mcp.md)
  Every client command takes --json (machine-readable output), --url, --key and --insecure.
  Environment: SVC_URL, SVC_API_KEY, SVC_INSECURE=1 (win over the config file), SVC_CONFIG
  (config file path; default $XDG_CONFIG_HOME/svc/config.json or ~/.config/svc/config.json).
`

const COMMANDS: Record<ClientCommand, (ctx: Ctx, args: string[]) => Promise<number>> = {
  login: loginCommand,
  logout: logoutCommand,
  whoami: whoamiCommand,
  deploy: deployCommand,
  deploys: deploysCommand,
  rollback: rollbackCommand,
  promote: promoteCommand,
  page: pageCommand,
  kv: kvCommand,
  data: dataCommand,
  forms: formsCommand,
  domain: domainCommand,
  access: accessCommand,
  // loaded when used: the MCP SDK alone took 97 ms of every other command's start
  mcp: async (ctx, args) => (await import('./client/commands/mcp.js')).mcpCommand(ctx, args),
}

export const CLIENT_COMMANDS = Object.keys(COMMANDS)

const isClientCommand = (cmd: string): cmd is ClientCommand => Object.hasOwn(COMMANDS, cmd)

/** A client command's help (`svc CMD --help`), from the table its parser reads; null for another name. */
export function clientHelp(cmd: string): string | null {
  if (!isClientCommand(cmd)) return null
  // every client command reads the config file (logout removes it): each lists the client's environment
  return renderHelp(CLIENT_HELP[cmd], { title: 'Options every client command takes:', flags: COMMON_OPTIONS, env: CLIENT_ENV })
}

/** SVC_MAX_WAIT: the seconds a refused request may wait to be retried; unset, the default. */
function maxWait(v: string | undefined): number | undefined {
  if (v === undefined || v === '') return undefined
  if (!/^\d+(\.\d+)?$/.test(v.trim())) throw new UsageError(`SVC_MAX_WAIT must be a number of seconds, 0 or more, not "${v}"`)
  return Number(v)
}

/** Looks for --json anywhere in the arguments, so usage errors can be reported in JSON too. */
const wantsJson = (args: string[]) => args.includes('--json')

/**
 * Runs a client command and returns the exit code: 0 done, 1 the server refused or a
 * local operation failed, 2 bad usage or no configuration. It throws nothing.
 */
export async function clientCommand(cmd: string, args: string[]): Promise<number> {
  const json = wantsJson(args)
  const rep = new Reporter(json)
  let api: ApiClient | null = null
  const ctx: Ctx = {
    json,
    rep,
    out: (s: string) => process.stdout.write(s.endsWith('\n') ? s : `${s}\n`),
    emit: (v: unknown) => process.stdout.write(`${JSON.stringify(v, null, 2)}\n`),
    api: (flags) => {
      if (api) return api
      const conn = resolveConnection(flags)
      const scale = Number(process.env.SVC_RETRY_WAIT_SCALE ?? '1')
      api = new ApiClient(conn, {
        notify: (m) => rep.note(m),
        waitScale: Number.isFinite(scale) && scale >= 0 ? scale : 1,
        maxWaitSeconds: maxWait(process.env.SVC_MAX_WAIT),
      })
      return api
    },
  }
  try {
    if (args.includes('--help') || args.includes('-h')) {
      process.stdout.write(clientHelp(cmd) ?? CLIENT_USAGE)
      return 0
    }
    if (!isClientCommand(cmd)) throw new UsageError(`unknown command "${cmd}"`)
    return await COMMANDS[cmd](ctx, args)
  } catch (e) {
    rep.clear()
    if (e instanceof ApiError) {
      process.stderr.write(`${e.describe()}\n`)
      if (json) ctx.emit({ success: false, error: e.toJSON() })
      return 1
    }
    if (e instanceof UsageError || e instanceof CliError) {
      process.stderr.write(`error: ${e.message}\n`)
      if (json) ctx.emit({ success: false, error: { message: e.message, ...(e instanceof CliError ? e.details : {}) } })
      return e instanceof UsageError ? 2 : 1
    }
    // anything else (a file that cannot be written, ...) is a local failure as CliError is:
    // one line on stderr, exit 1, and with --json still one JSON document on stdout
    const message = e instanceof Error ? e.message : String(e)
    process.stderr.write(`error: ${message}\n`)
    if (json) ctx.emit({ success: false, error: { message } })
    return 1
  } finally {
    await (api as ApiClient | null)?.close()
  }
}
