import { parseArgs } from 'node:util'
import { ConfigError, loadConfig } from '../config.js'
import { CLIENT_COMMANDS, CLIENT_USAGE, clientCommand, clientHelp } from './client.js'
import { CLIENT_VERSION } from './client/api.js'
import { renderHelp, type CommandHelp } from './help.js'
import { OPERATOR_HELP } from './operator-help.js'

const USAGE = `svc — self-hostable HTML and static hosting

Server and operator commands (configuration from the environment, see docs/operations/configuration.md):
  svc serve                                   start the service
  svc --version                               print the version
  svc migrate                                 run database migrations and exit
  svc user add <username> --password <pw> [--vip] [--admin]
  svc user set <username> [--vip|--no-vip] [--disable|--enable] [--api-access on|off]
                          [--admin|--no-admin] [--password <pw>] [--limit NAME=VALUE ...]
  svc key create <username> [--name NAME] [--expires-days N] [--read-only]
  svc grant <username> image-host|hosted-data [--revoke]
  svc redeem-code create image-host|hosted-data
  svc lock image <public_token> | svc lock hosted-data <file_id>   (and unlock)
  svc feature <username> <file_name> [--off]
  svc sweep [--grace-seconds N]               delete blobs no record references
  svc backup DIR|s3://BUCKET[/PREFIX] [--keep N]   online snapshot of svc.db and the blobs (SQLite)
  svc restore SNAPSHOT [--data-dir DIR] [--force]  verify a snapshot (DIR/<time> or s3://...), then restore it
  svc export <username> FILE.zip|FILE.tar.gz   all of one user's data (docs/operations/export.md);
                                              the name picks the format: .zip a zip, else a .tar.gz
  svc import FILE [--as NEWNAME]              verify an export (zip or .tar.gz), then load it as a new user
`

/** `svc help` itself, so that every name `svc help NAME` takes has its help. */
const HELP_HELP: CommandHelp = {
  usage: ['svc help [COMMAND]'],
  about: 'Prints the help of COMMAND (as svc COMMAND --help and -h do), or without one the list of every command (svc --help).',
  examples: ['svc help deploy', 'svc kv --help'],
  see: 'docs/cli.md',
}

/** `--help` or `-h` among a command's arguments: that command's help, exit 0. */
const wantsHelp = (args: readonly string[]): boolean => args.includes('--help') || args.includes('-h')

/**
 * The help of one command, from the table its parser reads (client and operator commands
 * alike); null for a name that is no command. Loads no configuration and opens nothing.
 */
function commandHelp(cmd: string): string | null {
  if (cmd === 'help' || cmd === '--help' || cmd === '-h') return renderHelp(HELP_HELP)
  if (Object.hasOwn(OPERATOR_HELP, cmd)) return renderHelp(OPERATOR_HELP[cmd as keyof typeof OPERATOR_HELP])
  return clientHelp(cmd)
}

/** Entry point of bin/svc. */
export async function main(argv: string[]): Promise<void> {
  const [cmd, ...rest] = argv
  if (!cmd || cmd === '--help' || cmd === '-h' || (cmd === 'help' && rest.length === 0)) {
    process.stdout.write(`${USAGE}\n${CLIENT_USAGE}`)
    return
  }
  if (cmd === 'help') {
    const help = commandHelp(rest[0])
    if (help === null) {
      process.stderr.write(`unknown command "${rest[0]}": svc --help lists the commands\n`)
      process.exitCode = 2
    } else process.stdout.write(help)
    return
  }
  if (cmd === '--version' || cmd === '-V' || cmd === 'version') {
    process.stdout.write(`svc ${CLIENT_VERSION}\n`)
    return
  }
  try {
    // client commands first: they load no server code (database drivers, Fastify), so they start fast
    if (CLIENT_COMMANDS.includes(cmd)) {
      process.exitCode = await clientCommand(cmd, rest)
      return
    }
    // an operator command's help comes before its configuration is read or its code loaded
    const help = Object.hasOwn(OPERATOR_HELP, cmd) && wantsHelp(rest) ? commandHelp(cmd) : null
    if (help !== null) {
      process.stdout.write(help)
      return
    }
    if (cmd === 'serve') {
      parseArgs({ args: rest, options: {}, allowPositionals: false })
      const { serve } = await import('./serve.js')
      await serve(loadConfig(process.env))
      return
    }
    const { adminCommand, ADMIN_COMMANDS } = await import('./admin.js')
    if (ADMIN_COMMANDS.includes(cmd)) {
      const code = await adminCommand(cmd, rest, loadConfig(process.env))
      process.exitCode = code
      return
    }
    process.stderr.write(`unknown command "${cmd}"\n\n${USAGE}\n${CLIENT_USAGE}`)
    process.exitCode = 2
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`${e.message}\n`)
      process.exitCode = 78
      return
    }
    // parseArgs's refusal of `svc serve`'s arguments: bad usage, as the other commands report it
    if (e instanceof TypeError && String((e as NodeJS.ErrnoException).code).startsWith('ERR_PARSE_ARGS_')) {
      process.stderr.write(`error: ${e.message}\n`)
      process.exitCode = 2
      return
    }
    throw e
  }
}
