import path from 'node:path'
import { parseArgs } from 'node:util'
import { sql } from 'kysely'
import type { Config } from '../config.js'
import { openDatabase, type Db } from '../db/kysely.js'
import { allMigrations, migrateToLatest } from '../db/migrate.js'
import { snapshotFirst } from '../db/snapshot.js'
import { FEATURE_TABLES, BLOB_COLUMNS } from '../features/tables.js'
import { systemClock } from '../util/clock.js'
import { createUsers, UserInputError, TIERS, type Tier, type UserSettings } from '../auth/users.js'
import { serviceLabels } from '../http/site-origin.js'
import { createApiKeys } from '../auth/api-keys.js'
import { randomString, sha256hex } from '../auth/tokens.js'
import { isQuotaName, QUOTA_NAMES } from '../limits/quotas.js'
import { AppError } from '../errors/app-error.js'
import { errorMessage } from '../errors/render.js'
import { openBlobStore } from '../storage/open.js'
import { sweepBlobs } from '../storage/sweeper.js'
import { BackupError, backupSqlite, openSnapshot, openSnapshotTarget, restoreSqlite } from './backup.js'
import { writeAudit } from '../features/admin/store.js'
import { assertDatabase, databaseState, missingDatabase, MissingDatabaseError, newDatabaseNote } from './data-dir.js'
import os from 'node:os'
import { parserOptions, usageText } from './help.js'
import { OPERATOR_HELP } from './operator-help.js'

/** Commands that change something: each run goes to the audit log, like the web console's actions. */
const AUDITED = new Set(['user', 'key', 'grant', 'redeem-code', 'lock', 'unlock', 'feature'])

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

/** node:util parseArgs's refusals (unknown option, missing or ambiguous value): bad usage too. */
export const isParseArgsError = (e: unknown): e is Error => e instanceof TypeError && String((e as NodeJS.ErrnoException).code).startsWith('ERR_PARSE_ARGS_')

const out = (s: string) => process.stdout.write(`${s}\n`)

/**
 * Operator commands. They use the same configuration (DATABASE_URL / DATA_DIR) as serve and
 * are safe while it runs: SQLite waits on its busy timeout, and the server reads accounts,
 * keys, tiers and locks from the database on every request.
 */
export async function adminCommand(cmd: string, args: string[], config: Config): Promise<number> {
  // backup and restore open no database through Kysely: a backup must not migrate the live
  // database, and a restore must not create the svc.db it is about to write
  if (cmd === 'backup' || cmd === 'restore') {
    try {
      await (cmd === 'backup' ? backupCommand(args, config) : restoreCommand(args, config))
      return 0
    } catch (e) {
      if (e instanceof MissingDatabaseError) return refuseDataDir(e.message)
      if (e instanceof UsageError || e instanceof BackupError || isParseArgsError(e)) {
        process.stderr.write(`error: ${e.message}\n${isParseArgsError(e) ? `${usageText(OPERATOR_HELP[cmd])}\n` : ''}`)
        return e instanceof BackupError ? 1 : 2
      }
      throw e
    }
  }
  // migrate takes no arguments: a mistyped one is refused before any database is opened or made
  if (cmd === 'migrate' && args.length > 0) {
    process.stderr.write(`error: svc migrate takes no arguments (${args[0]})\n${usageText(OPERATOR_HELP.migrate)}\n`)
    return 2
  }
  // a DATA_DIR without svc.db (a mistyped one) is refused before anything is opened or made
  // there; migrate (and restore) make a database on purpose (docs/cli.md)
  const before = databaseState(config)
  const missing = cmd === 'migrate' ? null : missingDatabase(config)
  if (missing !== null) return refuseDataDir(missing)
  const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir })
  try {
    const taken: { copy?: string } = {}
    const applied = await migrateToLatest(
      db,
      FEATURE_TABLES,
      snapshotFirst(config, (c) => (taken.copy = c)),
    )
    const created = newDatabaseNote(before)
    if (cmd === 'migrate' && created !== null) out(`created a new database ${path.join(config.dataDir, 'svc.db')} (${created})`)
    if (cmd === 'migrate')
      out(
        applied.length === 0
          ? 'migrations up to date'
          : `applied ${applied.length} migration${applied.length === 1 ? '' : 's'}: ${applied.join(', ')}${taken.copy ? `\nthe database as it was before them: ${taken.copy}` : ''}`,
      )
    else await run(cmd, args, db, config)
    if (AUDITED.has(cmd)) {
      const sub = ['user', 'key', 'redeem-code'].includes(cmd) ? args[0] : undefined
      const rest = sub === undefined ? args : args.slice(1)
      await writeAudit(db, Date.now(), {
        actor: cliActor(),
        via: 'cli',
        action: `cli.${cmd}${sub ? `.${sub}` : ''}`,
        target: rest.find((a) => !a.startsWith('-')) ?? '',
        details: { args: auditArgs(args) },
        ip: 'local',
        user_agent: `svc ${cmd}`,
      })
    }
    return 0
  } catch (e) {
    if (e instanceof UsageError || e instanceof UserInputError || (e instanceof Error && e.name === 'ExportError') || isParseArgsError(e)) {
      // an option or argument the parser refused: the command's synopsis after the message
      const usage = isParseArgsError(e) && Object.hasOwn(OPERATOR_HELP, cmd) ? `${usageText(OPERATOR_HELP[cmd as keyof typeof OPERATOR_HELP])}\n` : ''
      process.stderr.write(`error: ${e.message}\n${usage}`)
      return e instanceof UsageError || isParseArgsError(e) ? 2 : 1
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

/** A refused DATA_DIR: the message, exit 78 (a configuration problem, as loadConfig's). */
function refuseDataDir(message: string): number {
  process.stderr.write(`error: ${message}\n`)
  return 78
}

async function run(cmd: string, args: string[], db: Db, config: Config): Promise<void> {
  const users = createUsers(db, systemClock, serviceLabels(config))
  const need = <T>(v: T | undefined, what: string): T => {
    if (v === undefined || v === '') throw new UsageError(`missing ${what}`)
    return v
  }
  const userId = async (name: string) => {
    const u = await users.byName(name)
    if (!u) throw new UserInputError(`no user "${name}"`)
    return u.id
  }

  switch (cmd) {
    case 'user': {
      const [sub, ...rest] = args
      if (sub === 'add') {
        const { values, positionals } = parseArgs({
          args: rest,
          allowPositionals: true,
          options: parserOptions(OPERATOR_HELP.user.subs.add),
        })
        const u = await users.create(need(positionals[0], '<username>'), need(values.password, '--password'), { vip: values.vip, admin: values.admin })
        out(`created user ${u.username} (${u.tier}${u.is_admin ? ', admin' : ''})`)
        return
      }
      if (sub === 'set') {
        const { values, positionals } = parseArgs({
          args: rest,
          allowPositionals: true,
          options: parserOptions(OPERATOR_HELP.user.subs.set),
        })
        const s: UserSettings = {}
        if (values.vip) s.tier = 'vip'
        if (values['no-vip']) s.tier = 'authenticated'
        if (values.tier) {
          if (!(TIERS as string[]).includes(values.tier)) throw new UsageError(`--tier must be one of ${TIERS.join(', ')}`)
          s.tier = values.tier as Tier
        }
        if (values.disable) s.disabled = true
        if (values.enable) s.disabled = false
        if (values['api-access'] !== undefined) {
          if (!['on', 'off'].includes(values['api-access'])) throw new UsageError('--api-access takes on or off')
          s.api_access = values['api-access'] === 'on'
        }
        if (values.admin) s.is_admin = true
        if (values['no-admin']) s.is_admin = false
        if (values.password !== undefined) s.password = values.password
        if (values.limit) {
          s.limits = {}
          for (const l of values.limit) {
            const m = /^([a-z_]+)=(\d+|default)$/.exec(l)
            if (!m || !isQuotaName(m[1])) throw new UsageError(`--limit takes NAME=VALUE with NAME among ${QUOTA_NAMES.join(', ')}`)
            s.limits[m[1]] = m[2] === 'default' ? null : Number(m[2])
          }
        }
        const u = await users.update(need(positionals[0], '<username>'), s)
        out(
          `updated ${u.username}: tier ${u.tier}, ${u.disabled ? 'disabled' : 'enabled'}, api access ${u.api_access ? 'on' : 'off'}, limits ${JSON.stringify(u.limits)}`,
        )
        // the account's pages go offline (or come back) on every running instance at once,
        // as the admin console does it; without Redis, a running server's cache takes up to
        // its life (5 minutes) to see the change
        if (s.disabled !== undefined) {
          if (config.redisUrl === null) out(`a running server shows this within 5 minutes (set REDIS_URL, or use the admin console, for at once)`)
          else {
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
              await invalidateAccount(bus, u.username)
              if (lost) out('could not tell the running servers (Redis at REDIS_URL did not take the message): they show this within 5 minutes')
            } catch (e) {
              out(`could not tell the running servers (${(e as Error).message}): they show this within 5 minutes`)
            } finally {
              await bus.close()
            }
          }
        }
        return
      }
      throw new UsageError(usageText(OPERATOR_HELP.user))
    }
    case 'key': {
      const [sub, ...rest] = args
      if (sub !== 'create') throw new UsageError(usageText(OPERATOR_HELP.key))
      const { values, positionals } = parseArgs({
        args: rest,
        allowPositionals: true,
        options: parserOptions(OPERATOR_HELP.key.flags),
      })
      const days = values['expires-days']
      if (days !== undefined && !/^\d+$/.test(days)) throw new UsageError('--expires-days takes a number of days (1-365)')
      const id = await userId(need(positionals[0], '<username>'))
      const { key } = await createApiKeys(db, systemClock).create(id, {
        name: values.name ?? 'cli',
        expiresDays: days ? Number(days) : null,
        readOnly: values['read-only'] === true,
      })
      out(key)
      return
    }
    case 'grant': {
      const { values, positionals } = parseArgs({ args, allowPositionals: true, options: parserOptions(OPERATOR_HELP.grant.flags) })
      const id = await userId(need(positionals[0], '<username>'))
      const feature = need(positionals[1], 'feature')
      if (!FEATURE_NAMES.includes(feature)) throw new UsageError(`feature must be one of ${FEATURE_NAMES.join(', ')}`)
      if (values.revoke) {
        await db.k.deleteFrom('entitlements').where('user_id', '=', id).where('feature', '=', feature).execute()
        out(`revoked ${feature} from ${positionals[0]}`)
      } else {
        await db.k
          .insertInto('entitlements')
          .values({ user_id: id, feature, source: 'grant', created_at: Date.now() })
          .onConflict((oc) => oc.columns(['user_id', 'feature']).doNothing())
          .execute()
        out(`granted ${feature} to ${positionals[0]}`)
      }
      return
    }
    case 'redeem-code': {
      const [sub, feature] = parseArgs({ args, allowPositionals: true, options: parserOptions(OPERATOR_HELP['redeem-code'].flags) }).positionals
      if (sub !== 'create' || !feature || !FEATURE_NAMES.includes(feature)) throw new UsageError(usageText(OPERATOR_HELP['redeem-code']))
      const code = `${feature === 'image-host' ? 'IMG' : 'DATA'}-${randomString(20)}`
      await db.k
        .insertInto('redeem_codes')
        .values({ code_hash: sha256hex(code), feature, created_at: Date.now(), redeemed_by: null, redeemed_at: null })
        .execute()
      out(code)
      return
    }
    case 'lock':
    case 'unlock': {
      const [kind, id] = parseArgs({ args, allowPositionals: true, options: parserOptions(OPERATOR_HELP[cmd].flags) }).positionals
      const locked = cmd === 'lock' ? 1 : 0
      let n: bigint
      if (kind === 'image') {
        n = (await sql`update images set locked = ${locked} where public_token = ${need(id, '<public_token>')}`.execute(db.k)).numAffectedRows ?? 0n
      } else if (kind === 'hosted-data') {
        n = (await sql`update hosted_files set locked = ${locked} where id = ${need(id, '<file_id>')}`.execute(db.k)).numAffectedRows ?? 0n
      } else throw new UsageError(usageText(OPERATOR_HELP[cmd]))
      if (Number(n) === 0) throw new UserInputError(`no ${kind} "${id}"`)
      out(`${cmd}ed ${kind} ${id}`)
      return
    }
    case 'feature': {
      const { values, positionals } = parseArgs({ args, allowPositionals: true, options: parserOptions(OPERATOR_HELP.feature.flags) })
      const id = await userId(need(positionals[0], '<username>'))
      // file names are stored in NFC (sites/paths.ts): a decomposed spelling names the same file
      const fileName = need(positionals[1], '<file_name>').normalize('NFC')
      const r = await sql`update files set is_featured = ${values.off ? 0 : 1} where user_id = ${id} and file_name = ${fileName}`.execute(db.k)
      if (Number(r.numAffectedRows ?? 0n) === 0) throw new UserInputError(`no file "${fileName}" for ${positionals[0]}`)
      out(`${fileName}: is_featured ${values.off ? 'false' : 'true'}`)
      return
    }
    case 'export': {
      const { positionals } = parseArgs({ args, allowPositionals: true, options: parserOptions(OPERATOR_HELP.export.flags) })
      const { exportToFile } = await import('./export.js')
      out(await exportToFile(db, config, need(positionals[0], '<username>'), need(positionals[1], 'FILE')))
      return
    }
    case 'import': {
      const { values, positionals } = parseArgs({ args, allowPositionals: true, options: parserOptions(OPERATOR_HELP.import.flags) })
      const { importFromFile } = await import('./export.js')
      out(await importFromFile(db, config, need(positionals[0], 'FILE'), values.as))
      return
    }
    case 'sweep': {
      const { values } = parseArgs({ args, options: parserOptions(OPERATOR_HELP.sweep.flags) })
      // a negative grace would reach blobs written for uploads not committed yet
      const given = values['grace-seconds'] ?? '3600'
      if (!/^\d+$/.test(given)) throw new UsageError('--grace-seconds takes a number of seconds (0 or more)')
      const grace = Number(given) * 1000
      const blobs = await openBlobStore(config)
      const r = await sweepBlobs(db, blobs, BLOB_COLUMNS, grace).finally(() => blobs.close())
      out(
        r.skipped
          ? "skipped: another sweep (a running server's, or svc sweep) is running on this database; it does the same"
          : `deleted ${r.deleted} unreferenced blobs and ${r.temp} temp files`,
      )
      return
    }
  }
}

const BACKUP_DOC = 'docs/operations/backups.md ("PostgreSQL and a bucket")'

/** svc backup DIR|s3://BUCKET[/PREFIX][?...] [--keep N]: SQLite and a local blob store only. */
async function backupCommand(args: string[], config: Config): Promise<void> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: parserOptions(OPERATOR_HELP.backup.flags) })
  if (positionals.length !== 1) throw new UsageError(usageText(OPERATOR_HELP.backup))
  const keep = values.keep
  if (keep !== undefined && !/^[1-9]\d*$/.test(keep)) throw new UsageError('--keep takes a number of snapshots (1 or more)')
  if (config.databaseUrl) throw new BackupError(`svc backup covers SQLite (DATA_DIR/svc.db) only; with PostgreSQL follow the procedure in ${BACKUP_DOC}`)
  if (config.storageUrl?.startsWith('s3://')) throw new BackupError(`svc backup covers a local blob store only; with S3 follow the procedure in ${BACKUP_DOC}`)
  assertDatabase(config)
  const target = await openSnapshotTarget(positionals[0])
  const blobs = await openBlobStore(config)
  try {
    const r = await backupSqlite({ dataDir: config.dataDir, blobs, blobColumns: BLOB_COLUMNS, target, keep: keep ? Number(keep) : undefined })
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
async function restoreCommand(args: string[], config: Config): Promise<void> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: parserOptions(OPERATOR_HELP.restore.flags) })
  if (positionals.length !== 1) throw new UsageError(usageText(OPERATOR_HELP.restore))
  const given = values['data-dir']
  let dataDir: string
  let blobRoot: string
  if (given) {
    dataDir = path.resolve(given)
    blobRoot = path.join(dataDir, 'blobs')
  } else {
    // into the configured instance: only where it keeps SQLite and local blobs
    if (config.databaseUrl) throw new BackupError(`DATABASE_URL is set: restore a SQLite snapshot with --data-dir, or see ${BACKUP_DOC}`)
    if (config.storageUrl?.startsWith('s3://')) throw new BackupError(`STORAGE_URL is S3: restore with --data-dir, or see ${BACKUP_DOC}`)
    dataDir = config.dataDir
    blobRoot = config.storageUrl?.startsWith('file://') ? new URL(config.storageUrl).pathname : path.join(dataDir, 'blobs')
  }
  const { target, name } = await openSnapshot(positionals[0])
  try {
    const knownMigrations = Object.keys(allMigrations(FEATURE_TABLES))
    const r = await restoreSqlite({ source: target, name, dataDir, blobRoot, blobColumns: BLOB_COLUMNS, knownMigrations, force: values.force })
    out(`restored ${r.manifest.created_at} into ${dataDir}: svc.db and ${r.blobs} blobs verified (${r.written} written)`)
  } finally {
    await target.close()
  }
}
