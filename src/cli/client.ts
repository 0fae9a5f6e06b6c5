import { ApiClient } from './client/api.js'
import { resolveConnection } from './client/config.js'
import { ApiError, CliError, UsageError } from './client/errors.js'
import { Reporter } from './client/progress.js'
import type { Ctx } from './client/commands/context.js'
import { dataCommand } from './client/commands/data.js'
import { deployCommand, pageCommand } from './client/commands/publish.js'
import { deleteCommand, deploysCommand, promoteCommand, rollbackCommand, userSiteCommand } from './client/commands/deploys.js'
import { formsCommand } from './client/commands/forms.js'
import { kvCommand } from './client/commands/kv.js'
import { accessCommand, domainCommand } from './client/commands/domains.js'
import { loginCommand, logoutCommand, whoamiCommand } from './client/commands/session.js'
import { COMMON_OPTIONS } from './client/args.js'
import { CLIENT_ENV, CLIENT_HELP, type ClientCommand } from './client/help.js'
import { renderHelp, usageText } from './help.js'

const COMMANDS: Record<ClientCommand, (ctx: Ctx, args: string[]) => Promise<number>> = {
  login: loginCommand,
  logout: logoutCommand,
  whoami: whoamiCommand,
  deploy: deployCommand,
  deploys: deploysCommand,
  rollback: rollbackCommand,
  promote: promoteCommand,
  delete: deleteCommand,
  'user-site': userSiteCommand,
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

/**
 * A client command's help (`svc CMD --help`), from the table its parser reads. Every client
 * command reads the config file (logout removes it): each lists the client's environment.
 */
const helpOf = (cmd: ClientCommand): string =>
  renderHelp(CLIENT_HELP[cmd], { title: 'Options every client command takes:', flags: COMMON_OPTIONS, env: CLIENT_ENV })

/** A client command's help; null for another name. */
export const clientHelp = (cmd: string): string | null => (isClientCommand(cmd) ? helpOf(cmd) : null)

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
    if (!isClientCommand(cmd)) throw new UsageError(`unknown command "${cmd}"`)
    if (args.includes('--help') || args.includes('-h')) {
      process.stdout.write(helpOf(cmd))
      return 0
    }
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
      // an option or argument the parser refused: the command's synopsis, as operator commands print it
      if (e instanceof UsageError && e.parser && isClientCommand(cmd)) process.stderr.write(`${usageText(CLIENT_HELP[cmd])}\n`)
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
