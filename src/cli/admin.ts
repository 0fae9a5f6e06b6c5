import fs from 'node:fs'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { sql } from 'kysely'
import type { Config } from '../config.js'
import { blobFolder } from '../config.js'
import { ownedByDataDir } from '../util/private-files.js'
import { openDatabase, postgresSchemaExists, type Db } from '../db/kysely.js'
import { allMigrations, migrateToLatest } from '../db/migrate.js'
import { snapshotFirst } from '../db/snapshot.js'
import { FEATURE_TABLES, BLOB_COLUMNS } from '../features/tables.js'
import { systemClock } from '../util/clock.js'
import { createUsers, UserInputError, type UserSettings } from '../auth/users.js'
import { usernameProblem, type Tier } from '../auth/account-rules.js'
import { serviceLabels } from '../http/site-origin.js'
import { createApiKeys, type ApiKeyInfo } from '../auth/api-keys.js'
import { randomString, sha256hex } from '../auth/tokens.js'
import { AppError } from '../errors/app-error.js'
import { errorMessage } from '../errors/render.js'
import { openBlobStore } from '../storage/open.js'
import { sweepBlobs } from '../storage/sweeper.js'
import { BackupError, backupSqlite, openSnapshot, openSnapshotTarget, restoreSqlite, sqliteInUse } from './backup.js'
import { createAdminStore, writeAudit } from '../features/admin/store.js'
import { assertDatabase, databaseState, missingDatabase, MissingDatabaseError, newDatabaseNote, unusableDataDir } from './data-dir.js'
import os from 'node:os'
import { isParseArgsError, joinNegativeValues, optionsError, parserOptions, usageText, type Flags } from './help.js'
import { limitSetting, OPERATOR_HELP } from './operator-help.js'

/**
 * Commands that change something, and `export`, which hands an account's data (its forms'
 * submissions included) out of the service: each run goes to the audit log, like the web
 * console's actions.
 */
const AUDITED = new Set(['user', 'key', 'grant', 'redeem-code', 'lock', 'unlock', 'feature', 'import', 'export'])

/** The arguments as logged: a password's value never reaches the audit log. */
export function auditArgs(args: string[]): string[] {
  const out: string[] = []
  for (let i = 0; i < args.length; i++) {
    const a = args[i]
    if (a === '--password') {
      out.push(a, '[redacted]')
      i++
    } else out.push(a.startsWith('--password=') ? '--password=[redacted]' : a)
  }
  return out
}

function cliActor(): string {
  try {
    return `cli:${os.userInfo().username}`
  } catch {
    return 'cli'
  }
}

/** The operator commands this module runs: every one with a help entry but serve. */
export const ADMIN_COMMANDS = Object.keys(OPERATOR_HELP).filter((c) => c !== 'serve')
export const FEATURE_NAMES = ['image-host', 'hosted-data']

class UsageError extends Error {}

const out = (s: string) => process.stdout.write(`${s}\n`)

/** An operator command whose arguments were checked: what it then opens, and does. */
type Checked =
  /** migrate: opens (or creates) the database and runs the migrations, nothing more */
  | { readonly opens: 'migrate' }
  /**
   * backup and restore: no database through Kysely (a backup must not migrate the live one,
   * a restore must not create the svc.db it is about to write)
   */
  | { readonly opens: 'nothing'; run(config: Config): Promise<void> }
  | {
      readonly opens: 'database'
      run(db: Db, config: Config): Promise<void>
      /** A refusal only the configuration can tell (a name it reserves), or null: asked before anything is opened. */
      refuses?(config: Config): string | null
      /** It only reads (svc key list): not written to the audit log. */
      readonly reads?: true
      /** The audit entry's target once run, when no argument names it (svc import: the account it created). */
      target?(): string
    }

/**
 * Operator commands. They use the same configuration (DATABASE_URL / DATA_DIR) as serve and
 * are safe while it runs: SQLite waits on its busy timeout, and the server reads accounts,
 * keys, tiers and locks from the database on every request. The arguments are checked first,
 * before the configuration is read: a refused command line (exit 2) opens, makes and migrates
 * nothing (decision 190).
 */
export async function adminCommand(cmd: string, args: string[], loadConfig: () => Config): Promise<number> {
  const line = commandLine(cmd, args)
  if ('refused' in line) {
    process.stderr.write(line.refused)
    return 2
  }
  const checked = line.checked
  const config = loadConfig()
  const late = checked.opens === 'database' ? (checked.refuses?.(config) ?? null) : null
  if (late !== null) {
    process.stderr.write(refusalText(cmd, late))
    return 2
  }
  if (checked.opens === 'nothing') {
    try {
      await checked.run(config)
      return 0
    } catch (e) {
      if (e instanceof MissingDatabaseError) return refuseDataDir(e.message)
      if (e instanceof BackupError) {
        process.stderr.write(`error: ${e.message}\n`)
        return 1
      }
      throw e
    }
  }
  // a DATA_DIR without svc.db (a mistyped one) is refused before anything is opened or made
  // there; migrate (and restore) make a database on purpose (docs/cli.md)
  const before = databaseState(config)
  const missing = (checked.opens === 'migrate' ? null : missingDatabase(config)) ?? unusableDataDir(config)
  if (missing !== null) return refuseDataDir(missing)
  const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir })
  try {
    const taken: { copy?: string } = {}
    const applied = await migrateToLatest(
      db,
      FEATURE_TABLES,
      snapshotFirst(config, (c) => (taken.copy = c)),
    )
    if (checked.opens === 'migrate') {
      const created = newDatabaseNote(before)
      if (created !== null) out(`created a new database ${path.join(config.dataDir, 'svc.db')} (${created})`)
      out(
        applied.length === 0
          ? 'migrations up to date'
          : `applied ${applied.length} migration${applied.length === 1 ? '' : 's'}: ${applied.join(', ')}${taken.copy ? `\nthe database as it was before them: ${taken.copy}` : ''}`,
      )
    } else await checked.run(db, config)
    if (AUDITED.has(cmd) && !(checked.opens === 'database' && checked.reads)) {
      const sub = ['user', 'key', 'redeem-code'].includes(cmd) ? args[0] : undefined
      const rest = sub === undefined ? args : args.slice(1)
      await writeAudit(db, Date.now(), {
        actor: cliActor(),
        via: 'cli',
        action: `cli.${cmd}${sub ? `.${sub}` : ''}`,
        target: (checked.opens === 'database' ? checked.target?.() : undefined) ?? rest.find((a) => !a.startsWith('-')) ?? '',
        details: { args: auditArgs(args) },
        ip: 'local',
        user_agent: `svc ${cmd}`,
      })
    }
    return 0
  } catch (e) {
    // what only the database or the files can tell (no such user, a name taken, a bad archive)
    if (e instanceof UserInputError || (e instanceof Error && e.name === 'ExportError')) {
      process.stderr.write(`error: ${e.message}\n`)
      return 1
    }
    if (e instanceof AppError) {
      process.stderr.write(`error: ${errorMessage(e.key, 'en', e.options.params)}\n`)
      return 1
    }
    throw e
  } finally {
    await db.close()
  }
}

/**
 * An operator command line checked (checkArguments): what the command then does, or its
 * refusal as stderr shows it, `error: ...` and the command's synopsis (exit 2). Reads no
 * configuration and touches no file.
 */
export function commandLine(cmd: string, args: string[]): { readonly checked: Checked } | { readonly refused: string } {
  try {
    return { checked: checkArguments(cmd, args) }
  } catch (e) {
    if (!(e instanceof UsageError || isParseArgsError(e))) throw e
    return { refused: refusalText(cmd, e.message) }
  }
}

/** A refused command line as printed: the reason, then the command's synopsis. */
function refusalText(cmd: string, message: string): string {
  const usage = Object.hasOwn(OPERATOR_HELP, cmd) ? `${usageText(OPERATOR_HELP[cmd as keyof typeof OPERATOR_HELP])}\n` : ''
  return `error: ${message}\n${usage}`
}

/** A refused DATA_DIR: the message, exit 78 (a configuration problem, as loadConfig's). */
function refuseDataDir(message: string): number {
  process.stderr.write(`error: ${message}\n`)
  return 78
}

const need = <T>(v: T | undefined, what: string): T => {
  if (v === undefined || v === '') throw new UsageError(`missing ${what}`)
  return v
}

/**
 * An operator command's options and positional arguments, from its help table: node:util
 * parseArgs's refusals, then what the table refuses (optionsError) as UsageError.
 */
function parseOptions<F extends Flags>(args: string[], flags: F) {
  const parsed = parseArgs({ args: joinNegativeValues(args, flags), allowPositionals: true, options: parserOptions(flags) })
  const refused = optionsError(flags, parsed.values)
  if (refused !== null) throw new UsageError(refused)
  return parsed
}

/** More positional arguments than the synopsis has: refused, as the client commands do. */
function noMore(positionals: readonly string[], used: number): void {
  if (positionals.length > used) throw new UsageError(`unexpected argument "${positionals[used]}"`)
}

/** The subcommand of user, key and redeem-code, one of `subs`. */
function subcommand(sub: string | undefined, subs: readonly string[]): string {
  const list = subs.join(' or ')
  if (sub === undefined) throw new UsageError(`missing a subcommand: ${list}`)
  if (!subs.includes(sub)) throw new UsageError(`unknown subcommand "${sub}": ${list}`)
  return sub
}

const userIdOf = async (users: ReturnType<typeof createUsers>, name: string) => {
  const u = await users.byName(name)
  if (!u) throw new UserInputError(`no user "${name}"`)
  return u.id
}

/**
 * Parses and checks an operator command's arguments (options and their values, as the help
 * tables declare them; the positional ones; the name of a new account, by the service's rule)
 * and returns what the command then does. Reads no configuration and touches no file: a refusal throws UsageError or a
 * parseArgs error.
 */
export function checkArguments(cmd: string, args: string[]): Checked {
  switch (cmd) {
    case 'migrate':
      if (args.length > 0) throw new UsageError(`svc migrate takes no arguments (${args[0]})`)
      return { opens: 'migrate' }
    case 'backup':
      return backupArguments(args)
    case 'restore':
      return restoreArguments(args)
    case 'move':
      return moveArguments(args)
    case 'user': {
      const [given, ...rest] = args
      const sub = subcommand(given, ['add', 'set', 'delete', 'release'])
      if (sub === 'add') {
        const { values, positionals } = parseOptions(rest, OPERATOR_HELP.user.subs.add)
        const username = need(positionals[0], '<username>')
        noMore(positionals, 1)
        const password = need(values.password, '--password')
        // the name rule create() applies (its message too), to the name in lower case as it
        // stores it; the names this configuration reserves besides, once it is read
        const refused = usernameProblem(username.toLowerCase())
        if (refused !== null) throw new UsageError(refused)
        return {
          opens: 'database',
          refuses: (config) => usernameProblem(username.toLowerCase(), serviceLabels(config)),
          async run(db, config) {
            const u = await createUsers(db, systemClock, serviceLabels(config)).create(username, password, { vip: values.vip, admin: values.admin })
            out(`created user ${u.username} (${u.tier}${u.is_admin ? ', admin' : ''})`)
          },
        }
      }
      if (sub === 'delete') {
        const { values, positionals } = parseOptions(rest, OPERATOR_HELP.user.subs.delete)
        const username = need(positionals[0], '<username>')
        noMore(positionals, 1)
        // as svc restore's --force: a mistyped line must not delete an account
        if (values.force !== true) throw new UsageError(`svc user delete removes ${username} and everything it holds for good: add --force to do it`)
        return { opens: 'database', run: (db, config) => deleteUser(db, config, username) }
      }
      if (sub === 'release') {
        const { positionals } = parseOptions(rest, OPERATOR_HELP.user.subs.release)
        const username = need(positionals[0], '<username>').toLowerCase()
        noMore(positionals, 1)
        return { opens: 'database', run: (db) => releaseName(db, username) }
      }
      const { values, positionals } = parseOptions(rest, OPERATOR_HELP.user.subs.set)
      const username = need(positionals[0], '<username>')
      noMore(positionals, 1)
      const s: UserSettings = {}
      if (values.vip) s.tier = 'vip'
      if (values['no-vip']) s.tier = 'authenticated'
      // the values were checked by the table (OPERATOR_HELP.user.subs.set)
      if (values.tier) s.tier = values.tier as Tier
      if (values.disable) s.disabled = true
      if (values.enable) s.disabled = false
      if (values['api-access'] !== undefined) s.api_access = values['api-access'] === 'on'
      if (values.admin) s.is_admin = true
      if (values['no-admin']) s.is_admin = false
      if (values.password !== undefined) s.password = values.password
      if (values.limit) s.limits = Object.fromEntries(values.limit.map((l) => limitSetting(l)!))
      // a line that changes nothing would still print "updated" and write an audit entry
      if (Object.keys(s).length === 0) {
        throw new UsageError('nothing to set: --vip, --no-vip, --tier, --disable, --enable, --api-access, --admin, --no-admin, --password or --limit')
      }
      return { opens: 'database', run: (db, config) => setUser(db, config, username, s) }
    }
    case 'key': {
      const [given, ...rest] = args
      const sub = subcommand(given, ['create', 'list', 'revoke'])
      if (sub === 'list' || sub === 'revoke') {
        const { positionals } = parseOptions(rest, OPERATOR_HELP.key.subs[sub])
        const username = need(positionals[0], '<username>')
        const id = sub === 'revoke' ? need(positionals[1], '<key-id> (svc key list shows the ids)') : ''
        noMore(positionals, sub === 'revoke' ? 2 : 1)
        return {
          opens: 'database',
          ...(sub === 'list' ? { reads: true as const } : {}),
          async run(db, config) {
            const userId = await userIdOf(createUsers(db, systemClock, serviceLabels(config)), username)
            const keys = createApiKeys(db, systemClock)
            if (sub === 'list') {
              out(keyTable(await keys.list(userId), systemClock.now()))
              return
            }
            // deleted, as the admin console's revoke does (decision 225): nothing can bring it back
            if (!(await keys.remove(userId, id)))
              throw new UserInputError(`user "${username}" has no key with the id ${id} (svc key list ${username} shows them)`)
            out(`revoked key ${id} of ${username}`)
          },
        }
      }
      const { values, positionals } = parseOptions(rest, OPERATOR_HELP.key.subs.create)
      const username = need(positionals[0], '<username>')
      noMore(positionals, 1)
      const days = values['expires-days']
      return {
        opens: 'database',
        async run(db, config) {
          const id = await userIdOf(createUsers(db, systemClock, serviceLabels(config)), username)
          const { key } = await createApiKeys(db, systemClock).create(id, {
            name: values.name ?? 'cli',
            expiresDays: days ? Number(days) : null,
            readOnly: values['read-only'] === true,
          })
          out(key)
        },
      }
    }
    case 'grant': {
      const { values, positionals } = parseOptions(args, OPERATOR_HELP.grant.flags)
      const username = need(positionals[0], '<username>')
      const feature = need(positionals[1], 'the feature: image-host or hosted-data')
      if (!FEATURE_NAMES.includes(feature)) throw new UsageError(`feature must be one of ${FEATURE_NAMES.join(', ')}`)
      noMore(positionals, 2)
      return {
        opens: 'database',
        async run(db, config) {
          const id = await userIdOf(createUsers(db, systemClock, serviceLabels(config)), username)
          if (values.revoke) {
            await db.k.deleteFrom('entitlements').where('user_id', '=', id).where('feature', '=', feature).execute()
            out(`revoked ${feature} from ${username}`)
          } else {
            await db.k
              .insertInto('entitlements')
              .values({ user_id: id, feature, source: 'grant', created_at: Date.now() })
              .onConflict((oc) => oc.columns(['user_id', 'feature']).doNothing())
              .execute()
            out(`granted ${feature} to ${username}`)
          }
        },
      }
    }
    case 'redeem-code': {
      const { positionals } = parseOptions(args, OPERATOR_HELP['redeem-code'].flags)
      subcommand(positionals[0], ['create'])
      const feature = need(positionals[1], 'the feature: image-host or hosted-data')
      if (!FEATURE_NAMES.includes(feature)) throw new UsageError(`feature must be one of ${FEATURE_NAMES.join(', ')}`)
      noMore(positionals, 2)
      return {
        opens: 'database',
        async run(db) {
          const code = `${feature === 'image-host' ? 'IMG' : 'DATA'}-${randomString(20)}`
          await db.k
            .insertInto('redeem_codes')
            .values({ code_hash: sha256hex(code), feature, created_at: Date.now(), redeemed_by: null, redeemed_at: null })
            .execute()
          out(code)
        },
      }
    }
    case 'lock':
    case 'unlock': {
      const { positionals } = parseOptions(args, OPERATOR_HELP[cmd].flags)
      const kind = need(positionals[0], 'what to lock: image or hosted-data')
      if (kind !== 'image' && kind !== 'hosted-data') throw new UsageError(`unknown kind "${kind}": image or hosted-data`)
      const id = need(positionals[1], kind === 'image' ? '<public_token>' : '<file_id>')
      noMore(positionals, 2)
      const locked = cmd === 'lock' ? 1 : 0
      return {
        opens: 'database',
        async run(db) {
          const r =
            kind === 'image'
              ? await sql`update images set locked = ${locked} where public_token = ${id}`.execute(db.k)
              : await sql`update hosted_files set locked = ${locked} where id = ${id}`.execute(db.k)
          if (Number(r.numAffectedRows ?? 0n) === 0) throw new UserInputError(`no ${kind} "${id}"`)
          out(`${cmd}ed ${kind} ${id}`)
        },
      }
    }
    case 'feature': {
      const { values, positionals } = parseOptions(args, OPERATOR_HELP.feature.flags)
      const username = need(positionals[0], '<username>')
      // file names are stored in NFC (sites/paths.ts): a decomposed spelling names the same file
      const fileName = need(positionals[1], '<file_name>').normalize('NFC')
      noMore(positionals, 2)
      return {
        opens: 'database',
        async run(db, config) {
          const id = await userIdOf(createUsers(db, systemClock, serviceLabels(config)), username)
          const r = await sql`update files set is_featured = ${values.off ? 0 : 1} where user_id = ${id} and file_name = ${fileName}`.execute(db.k)
          if (Number(r.numAffectedRows ?? 0n) === 0) throw new UserInputError(`no file "${fileName}" for ${username}`)
          out(`${fileName}: is_featured ${values.off ? 'false' : 'true'}`)
        },
      }
    }
    case 'export': {
      const { positionals } = parseOptions(args, OPERATOR_HELP.export.flags)
      const username = need(positionals[0], '<username>')
      const file = need(positionals[1], 'FILE')
      noMore(positionals, 2)
      return {
        opens: 'database',
        async run(db, config) {
          const { exportToFile } = await import('./export.js')
          out(await exportToFile(db, config, username, file))
        },
      }
    }
    case 'import': {
      const { values, positionals } = parseOptions(args, OPERATOR_HELP.import.flags)
      const file = need(positionals[0], 'FILE')
      noMore(positionals, 1)
      const as = values.as
      // the account an import creates is named by the archive (or --as): the audit entry's target
      let created = ''
      return {
        opens: 'database',
        // --as was checked by its table; the names this configuration reserves besides
        refuses: (config) => (as === undefined ? null : usernameProblem(as.toLowerCase(), serviceLabels(config))),
        async run(db, config) {
          const { importFromFile } = await import('./export.js')
          const r = await importFromFile(db, config, file, as)
          created = r.username
          out(r.text)
        },
        target: () => created,
      }
    }
    case 'sweep': {
      const { values, positionals } = parseOptions(args, OPERATOR_HELP.sweep.flags)
      noMore(positionals, 0)
      // the table refuses a negative grace, which would reach blobs of uploads not committed yet
      const grace = Number(values['grace-seconds'] ?? '3600') * 1000
      return {
        opens: 'database',
        async run(db, config) {
          const blobs = await openBlobStore(config)
          const r = await sweepBlobs(db, blobs, BLOB_COLUMNS, grace).finally(() => blobs.close())
          out(
            r.skipped
              ? "skipped: another sweep (a running server's, or svc sweep) is running on this database; it does the same"
              : `deleted ${r.deleted} unreferenced blobs and ${r.temp} temp files`,
          )
        },
      }
    }
  }
  throw new UsageError(`unknown command "${cmd}"`)
}

/** svc user set: the settings were checked; the account's pages follow on every instance. */
async function setUser(db: Db, config: Config, username: string, s: UserSettings): Promise<void> {
  const u = await createUsers(db, systemClock, serviceLabels(config)).update(username, s)
  // enabling approves an account awaiting review, as the console's Approve does: a pending
  // mark left behind would show it as pending, and its login as awaiting review once disabled
  if (s.disabled === false) await createAdminStore(db).removePending(u.id)
  out(
    `updated ${u.username}: tier ${u.tier}, ${u.disabled ? 'disabled' : 'enabled'}, api access ${u.api_access ? 'on' : 'off'}, limits ${JSON.stringify(u.limits)}`,
  )
  // the account's pages go offline (or come back) on every running instance at once,
  // as the admin console does it; without Redis, a running server's cache takes up to
  // its life (5 minutes) to see the change
  if (s.disabled === undefined) return
  await tellServers(config, u.username)
}

/** svc user delete: the account and everything it holds, then the running servers' caches. */
async function deleteUser(db: Db, config: Config, username: string): Promise<void> {
  const users = createUsers(db, systemClock, serviceLabels(config))
  const id = await userIdOf(users, username)
  const { deleteAccount } = await import('../features/accounts/delete.js')
  const done = await deleteAccount(db, Date.now(), id, cliActor())
  if (!done) throw new UserInputError(`no user "${username}"`)
  const held = Object.entries(done.usage)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`)
  out(`deleted user ${done.username}${held.length ? ` (${held.join(', ')})` : ''}; the name stays held; svc sweep removes the blobs nothing else uses`)
  await tellServers(config, done.username)
}

/**
 * Gives a deleted account's held name back to new accounts (decision 267). The slugs of its
 * forms stay held: a new account of the name is another person, whose forms old pages must
 * not reach.
 */
async function releaseName(db: Db, username: string): Promise<void> {
  const r = await db.k.deleteFrom('retired_usernames').where('username', '=', username).executeTakeFirst()
  if (Number(r.numDeletedRows) === 0) throw new UserInputError(`the name "${username}" is not held (only a deleted account's name is)`)
  out(`released the name ${username}: a new account may take it; the slugs of its forms stay held`)
}

/** Drops an account's public caches on every running server (through Redis), as the console does. */
async function tellServers(config: Config, username: string): Promise<void> {
  if (config.redisUrl === null) {
    out(`a running server shows this within 5 minutes (set REDIS_URL, or use the admin console, for at once)`)
    return
  }
  const { createRedisBus, isReliable } = await import('../infra/bus.js')
  const { invalidateAccount } = await import('../features/accounts/invalidate.js')
  // a publish Redis refuses does not throw (a server only counts it): note it here, so
  // an unreachable REDIS_URL is reported instead of passing for a delivered message
  let lost = false
  const bus = createRedisBus(config.redisUrl, `${config.redisPrefix}bus:`, { onPublishError: () => (lost = true) })
  try {
    // a publish waits for the instances' acknowledgements only once the bus's own
    // subscription is up: wait for it (1 s at most), so this returns once they applied it
    for (let i = 0; i < 20 && !isReliable(bus); i++) await new Promise((r) => setTimeout(r, 50))
    await invalidateAccount(bus, username)
    if (lost) out('could not tell the running servers (Redis at REDIS_URL did not take the message): they show this within 5 minutes')
  } catch (e) {
    out(`could not tell the running servers (${(e as Error).message}): they show this within 5 minutes`)
  } finally {
    await bus.close()
  }
}

const BACKUP_DOC = 'docs/operations/backups.md ("PostgreSQL and a bucket")'

/** svc backup DIR|s3://BUCKET[/PREFIX][?...] [--keep N]: SQLite and a local blob store only. */
function backupArguments(args: string[]): Checked {
  const { values, positionals } = parseOptions(args, OPERATOR_HELP.backup.flags)
  const where = need(positionals[0], 'DIR (or s3://BUCKET)')
  noMore(positionals, 1)
  const keep = values.keep
  return { opens: 'nothing', run: (config) => backupCommand(where, keep === undefined ? undefined : Number(keep), config) }
}

async function backupCommand(where: string, keep: number | undefined, config: Config): Promise<void> {
  if (config.databaseUrl) throw new BackupError(`svc backup covers SQLite (DATA_DIR/svc.db) only; with PostgreSQL follow the procedure in ${BACKUP_DOC}`)
  if (config.storageUrl?.startsWith('s3://')) throw new BackupError(`svc backup covers a local blob store only; with S3 follow the procedure in ${BACKUP_DOC}`)
  assertDatabase(config)
  if (!where.startsWith('s3://') && ownedByDataDir(where, config.dataDir, blobFolder(config.dataDir, config.storageUrl))) {
    throw new BackupError(
      `${where} is inside the data folder ${config.dataDir} (the folder itself or its blobs/): a snapshot there mixes its blobs with the live ones, which the sweeper deletes; back up to a folder outside it, on another disk`,
    )
  }
  const target = await openSnapshotTarget(where)
  const blobs = await openBlobStore(config)
  try {
    const knownMigrations = Object.keys(allMigrations(FEATURE_TABLES))
    const r = await backupSqlite({ dataDir: config.dataDir, blobs, blobColumns: BLOB_COLUMNS, knownMigrations, target, keep })
    const m = r.manifest
    out(
      `snapshot ${r.snapshot}: database ${m.database.size} bytes, ${m.blobs.length} blobs (${r.copied} copied, ${r.copiedBytes} bytes; ${m.blobs.length - r.copied} already in the backup)`,
    )
    if (keep !== undefined) out(`retention: removed ${r.removedSnapshots.length} snapshots and ${r.removedBlobs} blobs`)
  } finally {
    await blobs.close()
    await target.close()
  }
}

/** svc restore SNAPSHOT [--data-dir DIR] [--force]; SNAPSHOT is DIR/<name> or s3://BUCKET[/PREFIX]/<name>[?...]. */
function restoreArguments(args: string[]): Checked {
  const { values, positionals } = parseOptions(args, OPERATOR_HELP.restore.flags)
  const snapshot = need(positionals[0], 'SNAPSHOT (a folder svc backup made, or its s3:// address)')
  noMore(positionals, 1)
  return { opens: 'nothing', run: (config) => restoreCommand(snapshot, values['data-dir'], values.force === true, config) }
}

async function restoreCommand(snapshot: string, given: string | undefined, force: boolean, config: Config): Promise<void> {
  let dataDir: string
  let blobRoot: string
  if (given) {
    dataDir = path.resolve(given)
    blobRoot = blobFolder(dataDir, null)
    // the configured instance is not the one restored: say so before an operator starts it and
    // finds the old data (svc restore writes SQLite and local blobs only)
    const set = [config.databaseUrl ? ['DATABASE_URL', 'PostgreSQL'] : null, config.storageUrl?.startsWith('s3://') ? ['STORAGE_URL', 'the bucket'] : null]
    const elsewhere = set.filter((x) => x !== null)
    if (elsewhere.length > 0) {
      const names = elsewhere.map(([name]) => name)
      const whats = elsewhere.map(([, what]) => what).join(' and ')
      process.stderr.write(
        `warning: ${names.join(' and ')} ${names.length === 1 ? 'is' : 'are'} set, but svc restore writes SQLite and local blobs only: it leaves ${whats} untouched and writes a data folder into ${dataDir}, which svc serve uses with DATA_DIR=${dataDir} and without ${names.join(' or ')}; to restore ${whats} see ${BACKUP_DOC}\n`,
      )
    }
  } else {
    // into the configured instance: only where it keeps SQLite and local blobs
    if (config.databaseUrl) throw new BackupError(`DATABASE_URL is set: restore a SQLite snapshot with --data-dir, or see ${BACKUP_DOC}`)
    if (config.storageUrl?.startsWith('s3://')) throw new BackupError(`STORAGE_URL is S3: restore with --data-dir, or see ${BACKUP_DOC}`)
    dataDir = config.dataDir
    blobRoot = blobFolder(dataDir, config.storageUrl)
  }
  // a mistyped path reads as a missing manifest.json, which looks like a damaged snapshot
  if (!snapshot.startsWith('s3://') && !fs.existsSync(snapshot)) {
    throw new BackupError(
      `${snapshot} does not exist: svc restore takes one snapshot folder that svc backup made (DIR/<time>, holding manifest.json); nothing was restored`,
    )
  }
  const { target, name } = await openSnapshot(snapshot)
  try {
    // the folder svc backup was given, named instead of one of its snapshots
    if (!(await target.snapshots()).includes(name)) {
      const root = await openSnapshotTarget(snapshot)
      try {
        const held = await root.snapshots()
        const newest = held.at(-1)
        if (newest !== undefined) {
          throw new BackupError(
            `${snapshot} is a backup folder (the DIR of svc backup), not a snapshot: restore one of its ${held.length} snapshot${held.length === 1 ? '' : 's'}, the newest being ${root.where(newest)}`,
          )
        }
      } finally {
        await root.close()
      }
    }
    const knownMigrations = Object.keys(allMigrations(FEATURE_TABLES))
    const r = await restoreSqlite({ source: target, name, dataDir, blobRoot, blobColumns: BLOB_COLUMNS, knownMigrations, force })
    out(`restored ${r.manifest.created_at} into ${dataDir}: svc.db and ${r.blobs} blobs verified (${r.written} written)`)
  } finally {
    await target.close()
  }
}

/** svc move --from-data-dir DIR [--from-blobs DIR] [--dry-run]: the target is DATABASE_URL and STORAGE_URL. */
function moveArguments(args: string[]): Checked {
  const { values, positionals } = parseOptions(args, OPERATOR_HELP.move.flags)
  noMore(positionals, 0)
  const from = path.resolve(need(values['from-data-dir'], '--from-data-dir DIR (the data folder of the SQLite instance to move)'))
  const fromBlobs = values['from-blobs'] === undefined ? blobFolder(from, null) : path.resolve(values['from-blobs'])
  const dryRun = values['dry-run'] === true
  return { opens: 'nothing', run: (config) => moveCommand(from, fromBlobs, dryRun, config) }
}

async function moveCommand(from: string, fromBlobRoot: string, dryRun: boolean, config: Config): Promise<void> {
  const { localBlobSize, MoveError, moveSqliteToPostgres, noSource, planMove, shownDatabase, sourceInUse } = await import('./move.js')
  if (!config.databaseUrl) throw new MoveError('svc move writes into PostgreSQL: set DATABASE_URL to the target database (and STORAGE_URL to its blob store)')
  const file = path.join(from, 'svc.db')
  if (!fs.existsSync(file)) throw noSource(file)
  // before the target is opened (which makes its schema): a refused move writes nothing
  if (sqliteInUse(file)) throw sourceInUse(file)
  const s3 = config.storageUrl?.startsWith('s3://') === true
  const blobsAt = s3 ? config.storageUrl!.split('?')[0] : blobFolder(config.dataDir, config.storageUrl)
  const common = {
    fromDataDir: from,
    fromBlobRoot,
    sets: FEATURE_TABLES,
    blobColumns: BLOB_COLUMNS,
    folder: {
      dataDir: config.dataDir,
      tls: config.trustProxy ? ('proxy' as const) : config.tlsCert ? ('own' as const) : ('self-signed' as const),
      // an s3:// URL without its query, which may hold credentials
      backupDir: config.backupDir?.split('?')[0] ?? null,
    },
    log: out,
  }
  if (dryRun) {
    // reads only: the target is opened only when its schema exists (opening makes it), and a
    // local target folder is looked at without opening a store (which makes its folders)
    out(`dry run (nothing is written): would move ${file} into ${shownDatabase(config.databaseUrl)}, blobs into ${blobsAt}`)
    const target = (await postgresSchemaExists(config.databaseUrl)) ? await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir }) : null
    const blobs = s3 ? await openBlobStore(config) : null
    try {
      const plan = await planMove({ ...common, target, targetHas: blobs ? (d) => blobs.exists(d) : async (d) => localBlobSize(blobsAt, d) !== null })
      const rows = plan.tables.reduce((n, t) => n + t.rows, 0)
      out(
        `would move: ${plan.tables.length} tables, ${rows} rows, ${plan.blobs.referenced} blobs (${plan.blobs.bytes} bytes); run it again without --dry-run to move`,
      )
    } finally {
      await target?.close()
      await blobs?.close()
    }
    return
  }
  const blobs = await openBlobStore(config)
  try {
    const target = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir })
    try {
      out(`moving ${file} into ${shownDatabase(config.databaseUrl)}, blobs into ${blobsAt}`)
      await moveSqliteToPostgres({ ...common, target, targetBlobs: blobs, shown: { database: shownDatabase(config.databaseUrl), blobs: blobsAt } })
    } finally {
      await target.close()
    }
  } finally {
    await blobs.close()
  }
}

/** `svc key list`: one line per key, newest first; the key itself is never stored, so never shown. */
function keyTable(keys: ApiKeyInfo[], now: number): string {
  if (keys.length === 0) return 'no API keys'
  const day = (t: number | null) => (t === null ? '-' : new Date(t).toISOString().slice(0, 10))
  const rows = keys.map((k) => [
    k.id,
    k.name,
    `svc_…${k.hint}`,
    day(k.created_at),
    day(k.last_used_at),
    k.expires_at === null ? 'never' : `${day(k.expires_at)}${k.expires_at <= now ? ' (expired)' : ''}`,
    k.read_only ? 'read-only' : 'full',
    k.enabled ? 'enabled' : 'disabled',
  ])
  const head = ['ID', 'NAME', 'KEY', 'CREATED', 'LAST USED', 'EXPIRES', 'ACCESS', 'STATE']
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)))
  return [head, ...rows]
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i]))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
}
