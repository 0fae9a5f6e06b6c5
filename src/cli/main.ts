import { parseArgs } from 'node:util'
import { ConfigError, loadConfig } from '../config.js'
import { CLIENT_COMMANDS, clientCommand, clientHelp } from './client.js'
import { CLIENT_VERSION } from './client/api.js'
import { COMMON_OPTIONS } from './client/args.js'
import { CLIENT_ENV, CLIENT_HELP } from './client/help.js'
import {
  GENERAL_HELP,
  isParseArgsError,
  joinNegativeValues,
  optionsError,
  parserOptions,
  renderHelp,
  renderOverview,
  usageText,
  type CommandHelp,
  type Flags,
} from './help.js'
import { OPERATOR_HELP } from './operator-help.js'

/** `svc --help` (and `svc`, `svc help`; on stderr after an unknown command): every command, from the help tables. */
function overview(): string {
  const connection = Object.entries(COMMON_OPTIONS)
    .filter(([n]) => n !== 'help')
    .map(([n, f]) => `--${n}${'arg' in f ? ` ${f.arg}` : ''}`)
  return renderOverview(
    [
      'svc — self-hostable HTML and static hosting',
      '',
      'usage: svc COMMAND [ARGUMENTS] [OPTIONS]',
      "       svc help COMMAND (or svc COMMAND --help): that command's synopsis, options and examples",
    ],
    [
      { title: 'Server and operator commands (settings from the environment: docs/operations/configuration.md):', commands: OPERATOR_HELP },
      {
        title: 'Client commands (talk to a server over its API: docs/cli.md):',
        commands: CLIENT_HELP,
        note: `Every client command also takes ${connection.join(', ')}, and reads ${CLIENT_ENV.map(([n]) => n).join(', ')}.`,
      },
      { title: 'Other commands:', commands: GENERAL_HELP },
    ],
  )
}

/** `--help` or `-h` among a command's arguments: that command's help, exit 0. */
const wantsHelp = (args: readonly string[]): boolean => args.includes('--help') || args.includes('-h')

/**
 * The help of one command, from the table its parser reads (client and operator commands
 * alike); null for a name that is no command. Loads no configuration and opens nothing.
 */
function commandHelp(cmd: string): string | null {
  if (cmd === 'help' || cmd === '--help' || cmd === '-h') return renderHelp(GENERAL_HELP.help)
  if (cmd === 'version' || cmd === '--version' || cmd === '-V') return renderHelp(GENERAL_HELP.version)
  if (Object.hasOwn(OPERATOR_HELP, cmd)) return renderHelp(OPERATOR_HELP[cmd as keyof typeof OPERATOR_HELP])
  return clientHelp(cmd)
}

/**
 * Parses the arguments of a command that takes no positional ones (serve, version) with its
 * table (contradictory options too, as every parser); a refusal is reported with the
 * command's synopsis (true: exit 2).
 */
function usageRefused(h: { usage: readonly string[]; flags: Flags }, args: string[]): boolean {
  let message: string | null
  try {
    message = optionsError(h.flags, parseArgs({ args: joinNegativeValues(args, h.flags), options: parserOptions(h.flags), allowPositionals: false }).values)
  } catch (e) {
    if (!isParseArgsError(e)) throw e
    message = e.message
  }
  if (message === null) return false
  process.stderr.write(`error: ${message}\n${usageText(h as CommandHelp)}\n`)
  return true
}

/** Entry point of bin/svc. */
export async function main(argv: string[]): Promise<void> {
  const [cmd, ...rest] = argv
  if (!cmd || cmd === '--help' || cmd === '-h' || (cmd === 'help' && rest.length === 0)) {
    process.stdout.write(overview())
    return
  }
  if (cmd === 'help') {
    const help = commandHelp(rest[0])
    if (help === null) {
      process.stderr.write(`error: unknown command "${rest[0]}": svc --help lists the commands\n`)
      process.exitCode = 2
    } else process.stdout.write(help)
    return
  }
  if (cmd === '--version' || cmd === '-V' || cmd === 'version') {
    if (wantsHelp(rest)) process.stdout.write(renderHelp(GENERAL_HELP.version))
    else if (usageRefused(GENERAL_HELP.version, rest)) process.exitCode = 2
    else process.stdout.write(`svc ${CLIENT_VERSION}\n`)
    return
  }
  // an option before any command (`svc --url X whoami`, as git -C takes one): options belong to
  // the command, so the message shows the line with the command first
  if (cmd.startsWith('-')) {
    const named = argv.find((a) => !a.startsWith('-') && a !== 'help' && a !== 'version' && commandHelp(a) !== null)
    process.stderr.write(
      named === undefined
        ? `error: unknown option "${cmd}": the command comes first (svc COMMAND [OPTIONS]); svc --help lists the commands\n`
        : `error: options go after the command: svc ${[named, ...argv.filter((_, i) => i !== argv.indexOf(named))].join(' ')}\n`,
    )
    process.exitCode = 2
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
      if (usageRefused(OPERATOR_HELP.serve, rest)) {
        process.exitCode = 2
        return
      }
      const { serve } = await import('./serve.js')
      const { MissingDatabaseError } = await import('./data-dir.js')
      try {
        await serve(loadConfig(process.env))
      } catch (e) {
        // a data folder it must not use (another server holds it): as a bad configuration
        if (!(e instanceof MissingDatabaseError)) throw e
        process.stderr.write(`error: ${e.message}\n`)
        process.exitCode = 78
      }
      return
    }
    const { adminCommand, ADMIN_COMMANDS } = await import('./admin.js')
    if (ADMIN_COMMANDS.includes(cmd)) {
      const code = await adminCommand(cmd, rest, () => loadConfig(process.env))
      process.exitCode = code
      return
    }
    process.stderr.write(`error: unknown command "${cmd}"\n\n${overview()}`)
    process.exitCode = 2
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`error: ${e.message}\n`)
      process.exitCode = 78
      return
    }
    throw e
  }
}
