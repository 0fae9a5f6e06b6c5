/**
 * The server and operator commands' options and help: admin.ts parses each command's options
 * from its entry here (src/cli/help.ts), and `svc CMD --help` prints the entry without loading
 * the configuration, a database or any server code.
 */
import { keyNameProblem, MAX_KEY_DAYS, MAX_KEY_NAME_LENGTH, MIN_PASSWORD_LENGTH, passwordProblem, TIERS, usernameProblem } from '../auth/account-rules.js'
import { isQuotaName, QUOTA_MAX, QUOTA_NAMES, type QuotaName } from '../limits/quotas.js'
import { anInteger, oneOf, takes, type CommandHelp } from './help.js'

const DATA: readonly [string, string] = ['DATA_DIR', 'the data folder: svc.db (SQLite) and the blobs (default ./data)']
const DATABASE: readonly [string, string] = ['DATABASE_URL', 'postgres://...: PostgreSQL instead of DATA_DIR/svc.db']
const STORAGE: readonly [string, string] = ['STORAGE_URL', 'where the blobs are (file:///path or s3://bucket; default DATA_DIR/blobs)']
const REDIS: readonly [string, string] = ['REDIS_URL', 'tell the running servers at once (without it they see the change within 5 minutes)']
const CONFIG = 'docs/operations/configuration.md'
/** svc sweep's longest grace: a year; an upload is committed within its request. */
const MAX_GRACE_SECONDS = 365 * 24 * 3600
/** svc backup's largest --keep: a daily snapshot for over 27 years. */
const MAX_KEEP = 10_000

/**
 * A `--limit NAME=VALUE` setting: the quota and its value (null for NAME=default, back to the
 * default), or null for text that is not one.
 */
export function limitSetting(text: string): [QuotaName, number | null] | null {
  const m = /^([a-z_]+)=(\d+|default)$/.exec(text)
  if (!m || !isQuotaName(m[1])) return null
  if (m[2] === 'default') return [m[1], null]
  // the admin API's rule (QUOTA_MAX): a value past 2^53 would be stored rounded, and one past
  // the double range as null (the default)
  const n = Number(m[2])
  return Number.isSafeInteger(n) && n <= QUOTA_MAX ? [m[1], n] : null
}

const LIMIT = takes(`NAME=N or NAME=default, N an integer from 0 to ${QUOTA_MAX}, NAME one of ${QUOTA_NAMES.join(', ')}`, (v) => limitSetting(v) !== null)

/** --password of svc user add and set: the rule the service applies to a new password (its message too). */
const PASSWORD = { type: 'string', arg: '<pw>', check: passwordProblem } as const

const lockHelp = (cmd: 'lock' | 'unlock') =>
  ({
    usage: [`svc ${cmd} image <public_token>`, `svc ${cmd} hosted-data <file_id>`],
    summary: cmd === 'lock' ? 'keep an image or hosted data file from deletion by its owner' : 'undo svc lock: its owner can delete it again',
    about:
      cmd === 'lock'
        ? 'Locks a hosted image or hosted data file: its owner can no longer delete it (423 locked); svc unlock undoes it.'
        : 'Unlocks a hosted image or hosted data file that svc lock locked: its owner can delete it again.',
    flags: {},
    env: [DATA, DATABASE],
    examples: [`svc ${cmd} image Ab3dE6gH`, `svc ${cmd} hosted-data 42`],
  }) as const satisfies CommandHelp

export const OPERATOR_HELP = {
  serve: {
    usage: ['svc serve'],
    summary: 'start the service',
    about:
      'Starts the service: opens (or creates) the database, runs its migrations, listens, and prints the URL. SIGTERM or SIGINT stops it cleanly. Its settings all come from the environment.',
    flags: {},
    env: [
      ['PORT', 'the HTTPS port (default 8443)'],
      ['HTTP_PORT', 'the plain-HTTP port (default 8080)'],
      ['HOST', 'the address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)'],
      DATA,
      DATABASE,
      STORAGE,
      ['REDIS_URL', 'shared state of several instances (rate limits, caches)'],
      ['TLS_CERT, TLS_KEY', 'the certificate files (default: a self-signed one)'],
      ['TRUST_PROXY', '1: plain HTTP behind a TLS proxy'],
      ['CONTENT_DOMAIN', "the domain of users' sites ({user}.CONTENT_DOMAIN)"],
      ['BACKUP_DIR', 'a snapshot every BACKUP_EVERY (default 24h) into this folder or s3:// bucket'],
    ],
    examples: ['svc serve', 'HOST=0.0.0.0 DATA_DIR=/srv/svc/data svc serve'],
    see: CONFIG,
  },
  migrate: {
    usage: ['svc migrate'],
    summary: 'run the database migrations and exit',
    about: 'Runs the database migrations and exits; on SQLite it creates the database when the data folder has none, and says so.',
    flags: {},
    env: [DATA, DATABASE],
    examples: ['svc migrate', 'DATABASE_URL=postgres://svc@db/svc svc migrate'],
    see: CONFIG,
  },
  user: {
    usage: [
      'svc user add <username> --password <pw> [--vip] [--admin]',
      'svc user set <username> [--vip|--no-vip] [--tier TIER] [--disable|--enable] [--api-access on|off]',
      '                        [--admin|--no-admin] [--password <pw>] [--limit NAME=VALUE ...]',
      'svc user delete <username> --force',
      'svc user release <username>',
    ],
    summary: 'create, change or delete an account, or release a deleted name',
    about:
      'Creates an account, or changes one: its tier, whether it is disabled, its API access, admin rights, password and per-user limits; or deletes one with everything it holds (--force says you mean it), keeping its name from new accounts until release gives it back.',
    subs: {
      add: {
        password: { ...PASSWORD, help: `the password (required), ${MIN_PASSWORD_LENGTH} characters or more` },
        vip: { type: 'boolean', help: 'the vip tier (default: authenticated)' },
        admin: { type: 'boolean', help: 'an administrator (the admin console)' },
      },
      set: {
        vip: { type: 'boolean', help: 'the vip tier' },
        'no-vip': { type: 'boolean', help: 'the authenticated tier', excludes: ['vip'] },
        tier: { type: 'string', arg: 'TIER', help: `the tier: ${TIERS.join(', ')}`, excludes: ['vip', 'no-vip'], check: oneOf(...TIERS) },
        disable: { type: 'boolean', help: 'disable the account: its sign-in, keys and pages stop' },
        enable: { type: 'boolean', help: 'enable it again', excludes: ['disable'] },
        'api-access': { type: 'string', arg: 'on|off', help: 'whether its API keys work', check: oneOf('on', 'off') },
        admin: { type: 'boolean', help: 'make it an administrator' },
        'no-admin': { type: 'boolean', help: 'take the admin rights away', excludes: ['admin'] },
        password: { ...PASSWORD, help: `a new password, ${MIN_PASSWORD_LENGTH} characters or more` },
        limit: {
          type: 'string',
          multiple: true,
          arg: 'NAME=VALUE',
          help: `a per-user quota, NAME one of ${QUOTA_NAMES.join(', ')} (docs/limits.md); NAME=default resets it; repeatable`,
          check: LIMIT,
        },
      },
      delete: {
        force: { type: 'boolean', help: 'required: delete the account, its pages, data, keys and domains now (nothing brings them back)' },
      },
      release: {},
    },
    env: [DATA, DATABASE, REDIS],
    examples: [
      'svc user add alice --password "$PW" --vip',
      'svc user set alice --disable',
      'svc user set alice --limit kv_keys=5000 --limit image_bytes=default',
      'svc user delete alice --force',
    ],
    see: 'docs/cli.md, docs/limits.md',
  },
  key: {
    usage: ['svc key create <username> [--name NAME] [--expires-days N] [--read-only]', 'svc key list <username>', 'svc key revoke <username> <key-id>'],
    summary: "create, list or revoke a user's API keys",
    about:
      'Creates an API key for a user and prints the key alone (it is not shown again); lists the keys of a user (id, name, the last characters, dates, access), never a key itself; or revokes one key by the id that list shows: it is deleted, and its next request is refused.',
    subs: {
      create: {
        name: {
          type: 'string',
          arg: 'NAME',
          help: `a name for the key, 1 to ${MAX_KEY_NAME_LENGTH} characters (default cli)`,
          check: takes(`1 to ${MAX_KEY_NAME_LENGTH} characters`, (v) => keyNameProblem(v) === null),
        },
        'expires-days': { type: 'string', arg: 'N', help: `expire after N days, 1 to ${MAX_KEY_DAYS} (default: never)`, check: anInteger(1, MAX_KEY_DAYS) },
        'read-only': { type: 'boolean', help: 'a key that can only read' },
      },
      list: {},
      revoke: {},
    },
    env: [DATA, DATABASE],
    examples: ['svc key create alice --name ci --expires-days 90', 'svc key list alice', 'svc key revoke alice 3f1c2a9e-5b7d-4e2a-9c1f-8d6b0a4e7c21'],
  },
  grant: {
    usage: ['svc grant <username> image-host|hosted-data [--revoke]'],
    summary: 'give a user image hosting or hosted data, or take it away',
    about: 'Gives a user a paid feature (image hosting or hosted data), or takes it away.',
    flags: { revoke: { type: 'boolean', help: 'take the feature away' } },
    env: [DATA, DATABASE],
    examples: ['svc grant alice hosted-data', 'svc grant alice image-host --revoke'],
  },
  'redeem-code': {
    usage: ['svc redeem-code create image-host|hosted-data'],
    summary: 'create a one-time code for a paid feature',
    about: 'Creates a one-time code that gives the feature to the account that redeems it, and prints it.',
    flags: {},
    env: [DATA, DATABASE],
    examples: ['svc redeem-code create hosted-data'],
  },
  lock: lockHelp('lock'),
  unlock: lockHelp('unlock'),
  feature: {
    usage: ['svc feature <username> <file_name> [--off]'],
    summary: "feature a user's single file, or stop featuring it",
    about: "Features a user's single file (sets is_featured), or with --off stops featuring it.",
    flags: { off: { type: 'boolean', help: 'stop featuring it' } },
    env: [DATA, DATABASE],
    examples: ['svc feature alice demo.html', 'svc feature alice demo.html --off'],
  },
  sweep: {
    usage: ['svc sweep [--grace-seconds N]'],
    summary: 'delete the blobs no record references',
    about: 'Deletes the blobs that no record references (a running server does it every 15 minutes too).',
    flags: {
      'grace-seconds': {
        type: 'string',
        arg: 'N',
        help: `keep blobs written in the last N seconds, for uploads not committed yet (deploys, batches and other long uploads hold a lease the sweep honours besides); 0 to ${MAX_GRACE_SECONDS} (default 3600)`,
        check: anInteger(0, MAX_GRACE_SECONDS),
      },
    },
    env: [DATA, DATABASE, STORAGE],
    examples: ['svc sweep', 'svc sweep --grace-seconds 600'],
  },
  backup: {
    usage: ['svc backup DIR|s3://BUCKET[/PREFIX][?endpoint=...] [--keep N]'],
    summary: 'take an online snapshot of svc.db and the blobs (SQLite)',
    about: 'Takes an online snapshot of svc.db and the blobs into DIR/<time>/ or the bucket, while the server runs (SQLite and a local blob store only).',
    flags: {
      keep: {
        type: 'string',
        arg: 'N',
        help: `then keep the N newest snapshots and delete the rest, 1 to ${MAX_KEEP} (default: keep all)`,
        check: anInteger(1, MAX_KEEP),
      },
    },
    env: [DATA, ['AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY', 'the credentials of an s3:// target']],
    examples: ['svc backup /srv/backups/svc --keep 7', 'svc backup s3://backups/svc'],
    see: 'docs/operations/backups.md',
  },
  restore: {
    usage: ['svc restore SNAPSHOT_DIR|s3://BUCKET[/PREFIX]/SNAPSHOT[?endpoint=...] [--data-dir DIR] [--force]'],
    summary: 'verify a snapshot, then restore it into the data folder',
    about: 'Verifies a snapshot made by svc backup, then writes it into the data folder (stop the server first).',
    flags: {
      'data-dir': { type: 'string', arg: 'DIR', help: 'restore into DIR (default: DATA_DIR)' },
      force: { type: 'boolean', help: 'replace a data folder that already holds a database' },
    },
    env: [DATA, ['AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY', 'the credentials of an s3:// snapshot']],
    examples: ['svc restore /srv/backups/svc/2026-12-01T03-00-00Z --data-dir /srv/svc/data'],
    see: 'docs/operations/backups.md',
  },
  move: {
    usage: ['svc move --from-data-dir DIR [--from-blobs DIR] [--dry-run]'],
    summary: 'move a whole SQLite instance into PostgreSQL and the configured blob store',
    about:
      'Moves a stopped SQLite instance (DIR/svc.db and its blobs) into the PostgreSQL database of DATABASE_URL and the blob store of STORAGE_URL: every blob the rows reference, checked, then every table (passwords, sessions, API keys, domains, old deploys) in one transaction; a failure commits no row, and running it again keeps the blobs copied. The target must be empty. The self-signed certificate goes into DATA_DIR; the rest of DIR is named with what to do. --dry-run reports what would move and writes nothing.',
    flags: {
      'from-data-dir': { type: 'string', arg: 'DIR', help: 'the data folder of the SQLite instance to move (required; stop its server first)' },
      'from-blobs': { type: 'string', arg: 'DIR', help: "the source's blob folder, when its STORAGE_URL was file:///DIR (default DIR/blobs)" },
      'dry-run': { type: 'boolean', help: 'report the rows per table, the blobs and the files that would move; write nothing' },
    },
    env: [
      ['DATABASE_URL', 'postgres://...: the target database (required; empty, migrated here)'],
      ['STORAGE_URL', 'the target blob store (s3://bucket or file:///path; default DATA_DIR/blobs)'],
      DATA,
      ['TRUST_PROXY, TLS_CERT, TLS_KEY', "the new instances' HTTPS: unset, the self-signed certificate of DIR is copied into DATA_DIR"],
    ],
    examples: [
      'svc move --from-data-dir /srv/svc/data --dry-run',
      'svc move --from-data-dir /srv/svc/data',
      'svc move --from-data-dir /srv/svc/data --from-blobs /mnt/blobs',
    ],
    see: 'docs/operations/scale-out.md',
  },
  export: {
    usage: ['svc export <username> FILE.zip|FILE.tar.gz'],
    summary: "write all of one user's data to a .zip or .tar.gz file",
    about: "Writes all of one user's data (account, pages, deploys, KV, forms, hosted files) into FILE: a zip when the name ends in .zip, else a .tar.gz.",
    flags: {},
    env: [DATA, DATABASE, STORAGE],
    examples: ['svc export alice alice.zip'],
    see: 'docs/operations/export.md',
  },
  import: {
    usage: ['svc import FILE [--as NEWNAME]'],
    summary: 'verify an export, then load it as a new user',
    about: 'Verifies an export (zip or .tar.gz), then loads it as a new user and prints the new password.',
    // a new account: the name rule sign-up applies (the exported name is checked once read)
    flags: { as: { type: 'string', arg: 'NEWNAME', help: "the new user's name (default: the exported one)", check: (v) => usernameProblem(v.toLowerCase()) } },
    env: [DATA, DATABASE, STORAGE, ['REDIS_URL', 'tell the running servers, so they serve the new pages at once']],
    examples: ['svc import alice.zip --as alice2'],
    see: 'docs/operations/export.md',
  },
} as const satisfies Record<string, CommandHelp>

export type OperatorCommand = keyof typeof OPERATOR_HELP
