import { ApiClient } from './client/api.js'
import { resolveConnection } from './client/config.js'
import { ApiError, CliError, UsageError } from './client/errors.js'
import { Reporter } from './client/progress.js'
import { dataCommand, deployCommand, formsCommand, kvCommand, loginCommand, logoutCommand, pageCommand, whoamiCommand, type Ctx } from './client/commands.js'

export const CLIENT_USAGE = `Client commands (talk to a server over its API; see README "Part: deploy client"):
  svc login --url https://host --key KEY [--insecure]      store the server and API key (0600 file)
  svc login [--url URL] --username NAME [--password-stdin]   also store a login session (hosted data)
  svc logout | svc whoami
  svc deploy <dir> [--project NAME] [--no-publish] [--delete] [--dry-run] [--dotfiles]
             [--concurrency N] [--batch-files N] [--batch-bytes SIZE]
  svc page <file.html> [--project NAME] [--description TEXT]
  svc kv get KEY | set KEY VALUE [--type json|text|number] [--public] [--tags a,b] [--file F]
  svc kv incr KEY [BY] | rm KEY | ls [--page N --per-page N]
  svc data push <file> [--default] [--id FILE_ID] [--name NAME] [--type CONTENT_TYPE]
  svc forms export <form_id> [--csv] [-o FILE]
  Every client command takes --json (machine-readable output), --url, --key and --insecure.
  Environment: SVC_URL, SVC_API_KEY, SVC_INSECURE=1 (win over the config file), SVC_CONFIG
  (config file path; default $XDG_CONFIG_HOME/svc/config.json or ~/.config/svc/config.json).
`

const COMMANDS: Record<string, (ctx: Ctx, args: string[]) => Promise<number>> = {
  login: loginCommand,
  logout: logoutCommand,
  whoami: whoamiCommand,
  deploy: deployCommand,
  page: pageCommand,
  kv: kvCommand,
  data: dataCommand,
  forms: formsCommand,
}

export const CLIENT_COMMANDS = Object.keys(COMMANDS)

/** Looks for --json anywhere in the arguments, so usage errors can be reported in JSON too. */
const wantsJson = (args: string[]) => args.includes('--json')

/**
 * Runs a client command and returns the exit code: 0 done, 1 the server refused or a
 * local operation failed, 2 bad usage or no configuration.
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
        maxWaitSeconds: process.env.SVC_MAX_WAIT ? Number(process.env.SVC_MAX_WAIT) : undefined,
      })
      return api
    },
  }
  try {
    if (args.includes('--help') || args.includes('-h')) {
      process.stdout.write(CLIENT_USAGE)
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
      if (json) ctx.emit({ success: false, error: { message: e.message, ...(e instanceof CliError ? e.details : {}) } })
      return e instanceof UsageError ? 2 : 1
    }
    throw e
  } finally {
    await (api as ApiClient | null)?.close()
  }
}
