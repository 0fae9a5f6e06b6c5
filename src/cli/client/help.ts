/**
 * The client commands' options and help: each command parses its options from its entry here
 * (src/cli/help.ts), and `svc CMD --help` prints the entry. No command code is loaded for help.
 */
import { aNumber, aSize, anInteger, oneOf, type CommandHelp } from '../help.js'
import { anExpiry } from './args.js'
import { MAX_PAGE, MAX_PER_PAGE } from '../../http/page-limits.js'

/** svc deploy's most batch requests at a time (the default is 2). */
const MAX_CONCURRENCY = 64
/** svc deploy's largest --batch-files; the server's own limit (its folder upload limits) caps it too. */
const MAX_BATCH_FILES = 10_000

/** kv set and kv incr: make the entry a public counter (public_incr; docs/api/kv.md), or stop it being one. */
const COUNTER = { type: 'boolean', help: 'a public counter: anyone may add 1 or -1 to it without a key (default: as it was)' } as const
const NO_COUNTER = { type: 'boolean', help: 'no longer a public counter: visitors get 404', excludes: ['counter'] } as const
const PROJECT = { type: 'string', short: 'p', arg: 'NAME', help: "the project (default: the folder's name; dist, build...: the one above)" } as const

export const CLIENT_HELP = {
  login: {
    usage: [
      'svc login --url https://host --key KEY [--insecure]',
      'svc login --url https://host --key-stdin',
      'svc login [--url URL] --username NAME [--password PW | --password-stdin]',
    ],
    summary: 'store the server and an API key (and a login session)',
    about:
      'Stores the server and an API key (checked with GET /svc_api/me) in the config file (mode 0600), and with --username also a login session, which hosted data (svc data) needs. Without --key, --key-stdin or --username the key is asked for.',
    flags: {
      username: { type: 'string', arg: 'NAME', help: 'also log in as NAME and store the session (password: --password-stdin, SVC_PASSWORD, or asked)' },
      password: { type: 'string', arg: 'PW', help: 'the password (visible in the process list: prefer --password-stdin)' },
      'password-stdin': { type: 'boolean', help: 'read the password from stdin', excludes: ['password'] },
      // stdin holds one of them: a key and a password would both read it
      'key-stdin': { type: 'boolean', help: 'read the API key from stdin (not in ps or the shell history)', excludes: ['key', 'password-stdin'] },
    },
    env: [['SVC_PASSWORD', 'the password of --username when neither --password nor --password-stdin is given']],
    examples: [
      'svc login --url https://pages.example.com --key-stdin < key.txt',
      'svc login --url https://127.0.0.1:8443 --key svc_... --insecure',
      'svc login --username alice',
    ],
    see: 'docs/cli.md',
  },
  logout: {
    usage: ['svc logout'],
    summary: 'end the login session and remove the stored credentials',
    about: 'Ends the stored login session on the server and removes the config file.',
    flags: {},
    examples: ['svc logout'],
  },
  whoami: {
    usage: ['svc whoami'],
    summary: 'print who the stored credentials belong to',
    about: 'Prints who the configured credentials belong to, on which server, and where the key came from.',
    flags: {},
    examples: ['svc whoami', 'SVC_URL=https://host SVC_API_KEY=svc_... svc whoami --json'],
  },
  deploy: {
    usage: [
      'svc deploy <dir> [--project NAME] [--preview] [-m MESSAGE] [--dry-run] [--dotfiles] [--no-gzip]',
      'svc deploy <dir> --batch [--project NAME] [--no-publish] [--delete] [--dry-run] [--dotfiles]',
      '                 [--concurrency N] [--batch-files N] [--batch-bytes SIZE]',
    ],
    summary: 'deploy a folder (or a .zip, .tar.gz or .tar of one) as a project',
    about:
      'Deploys a folder as a project: the files the server lacks go in one gzipped tar stream and the new deploy goes live at once (an archive deploy). --batch, or any batch option, uploads in batches instead (the spec API). .git/, dotfiles, node_modules/ and __MACOSX/ folders (each one said on stderr) and what .gitignore and .svcignore name are left out. In place of the folder, a .zip, .tar.gz or .tar file is unpacked and deployed the same way (its one top-level folder when it has no root index.html; the project is the one of the folder the file is named after, beside it: my-app/dist.zip deploys as my-app/dist would, to my-app).',
    flags: {
      project: PROJECT,
      preview: { type: 'boolean', help: 'make a deploy that is not live and print its URL (svc promote makes it live)' },
      message: { type: 'string', short: 'm', arg: 'MESSAGE', help: 'a note kept with the deploy (svc deploys shows it; archive deploys only)' },
      'no-gzip': { type: 'boolean', help: 'send the archive uncompressed (default: gzip)' },
      batch: { type: 'boolean', help: "use the spec's batch uploads instead of one archive" },
      'no-publish': { type: 'boolean', help: 'upload without publishing (with --batch; without it the same as --preview)' },
      delete: { type: 'boolean', help: 'delete server files that are not in the folder (batch uploads; default: list and keep them)' },
      'dry-run': { type: 'boolean', help: 'list what would be sent (and deleted) and change nothing' },
      dotfiles: { type: 'boolean', help: 'include dotfiles and dot-folders (default: only .well-known/)' },
      concurrency: { type: 'string', arg: 'N', help: `batch requests at a time, 1 to ${MAX_CONCURRENCY} (default 2)`, check: anInteger(1, MAX_CONCURRENCY) },
      'batch-files': {
        type: 'string',
        arg: 'N',
        help: `files per batch, 1 to ${MAX_BATCH_FILES} (default: the server's limit)`,
        check: anInteger(1, MAX_BATCH_FILES),
      },
      'batch-bytes': { type: 'string', arg: 'SIZE', help: "bytes per batch, as 5000000, 5MB or 4MiB (default: the server's limit)", check: aSize },
    },
    env: [['SVC_CACHE_DIR', "where the folders' file hashes are kept (default $XDG_CACHE_HOME/svc or ~/.cache/svc)"]],
    examples: [
      'svc deploy ./public --project site',
      'svc deploy site.zip',
      'svc deploy ./dist --preview -m "new header"',
      'svc deploy ./public --batch --delete --dry-run',
    ],
    see: 'docs/cli.md, docs/api/deploys.md',
  },
  deploys: {
    usage: ['svc deploys list [PROJECT] [--project NAME]', 'svc deploys download ID [--project NAME] [-o FILE] [--force]'],
    summary: "list a project's kept deploys, or download one",
    about:
      "list (the word may be left out: svc deploys PROJECT) lists a project's kept deploys: id, time, files, size, source and message, with the live one marked. download saves one kept deploy (live, older, preview or partial) as the gzip'd tar that svc deploy takes back, to PROJECT-ID.tar.gz in the current folder or -o FILE; the file appears only once it is whole.",
    subs: {
      list: { project: PROJECT },
      download: {
        project: PROJECT,
        output: { type: 'string', short: 'o', arg: 'FILE', help: 'write to FILE, or into FILE when it is a folder (default: PROJECT-ID.tar.gz)' },
        force: { type: 'boolean', help: 'replace FILE when it exists (default: refuse)' },
      },
    },
    examples: ['svc deploys site', 'svc deploys list --json', 'svc deploys download 0a1b2c3d4e5f --project site -o site.tar.gz'],
    see: 'docs/cli.md, docs/api/deploys.md',
  },
  rollback: {
    usage: ['svc rollback [ID] [--project NAME]'],
    summary: 'make the previous (or a given) deploy live again',
    about: 'Makes deploy ID live again, or without ID the deploy before the live one.',
    flags: { project: PROJECT },
    examples: ['svc rollback --project site', 'svc rollback 41 --project site'],
    see: 'docs/api/deploys.md',
  },
  promote: {
    usage: ['svc promote ID [--project NAME]'],
    summary: 'make a deploy (a preview) live',
    about: 'Makes deploy ID (a preview, or any kept deploy) the live one.',
    flags: { project: PROJECT },
    examples: ['svc promote 42 --project site'],
    see: 'docs/api/deploys.md',
  },
  delete: {
    usage: ['svc delete PROJECT --force'],
    summary: 'delete a project with its files, kept deploys and previews',
    about:
      'Deletes folder project PROJECT whole (DELETE /api/folders/{project}): its files, every kept deploy and preview URL, offline at once. It cannot be undone: without --force nothing is sent. The project is always named: the current folder never stands for it.',
    flags: { force: { type: 'boolean', help: 'do it (without it the command refuses and sends nothing)' } },
    examples: ['svc delete old-site --force'],
    see: 'docs/api/files-and-folders.md',
  },
  'user-site': {
    usage: ['svc user-site [PROJECT] [--project NAME] [--off]'],
    summary: 'make a project your user site, served at the root of your own origin',
    about:
      "Makes the project (PROJECT or --project; default: the current folder's) the user site (PUT /api/folders/{project}/user_site): while it is published it answers the root of your own origin ({username}.{CONTENT_DOMAIN}) and every path there that names none of your projects or pages, as GitHub Pages serves {user}.github.io. One project at a time: another replaces it. --off stops it being the user site.",
    flags: {
      project: PROJECT,
      off: { type: 'boolean', help: 'stop the project being the user site: the root is a 404 again' },
    },
    examples: ['svc user-site home', 'svc user-site home --off'],
    see: 'docs/api/files-and-folders.md',
  },
  page: {
    usage: ['svc page <file.html> [--project NAME] [--description TEXT]'],
    summary: 'upload one HTML file as a page',
    about: 'Uploads one HTML file (.html or .htm) as a page (POST /svc_api/upload), replacing the page of the same name, and prints its URL.',
    flags: {
      project: { type: 'string', short: 'p', arg: 'NAME', help: "the project to put it in (default: the server's)" },
      description: { type: 'string', arg: 'TEXT', help: "the page's description" },
    },
    examples: ['svc page index.html --project demo'],
  },
  kv: {
    usage: [
      'svc kv get KEY',
      'svc kv set KEY VALUE|- [--type json|text|number] [--public | --no-public] [--counter | --no-counter] [--tags a,b]',
      'svc kv set KEY --file F [--type json|text|number] [--public | --no-public] [--counter | --no-counter] [--tags a,b]',
      'svc kv incr KEY [BY] [--by N] [--counter | --no-counter]',
      'svc kv rm KEY',
      'svc kv ls [--prefix P] [--page N] [--per-page N]',
      'svc kv ls --public USER [--prefix P] [--per-page N]',
    ],
    summary: 'read and write the key-value store',
    about:
      'Reads and writes the key-value store. set infers the type: a bare number is a number, a value that parses as JSON is json, anything else text. ls lists every key (by the key cursor) unless --page asks for one page; ls --public USER lists the public entries of USER, as a page without a key sees them.',
    subs: {
      get: {},
      set: {
        type: { type: 'string', arg: 'json|text|number', help: 'the type to store (default: inferred from the value)', check: oneOf('json', 'text', 'number') },
        public: { type: 'boolean', help: 'anyone may read the entry (a new entry is private; one stored keeps what it was)' },
        'no-public': { type: 'boolean', help: 'private again: only your keys read the entry', excludes: ['public'] },
        counter: COUNTER,
        'no-counter': NO_COUNTER,
        tags: { type: 'string', arg: 'a,b', help: 'tags, comma-separated' },
        file: { type: 'string', arg: 'F', help: 'the value from file F (UTF-8), or - for stdin' },
      },
      incr: {
        by: { type: 'string', arg: 'N', help: 'the amount to add (default 1; may be negative)', check: aNumber },
        counter: COUNTER,
        'no-counter': NO_COUNTER,
      },
      rm: {},
      ls: {
        prefix: { type: 'string', arg: 'P', help: 'only the keys that start with P' },
        page: { type: 'string', arg: 'N', help: `print page N alone, 1 to ${MAX_PAGE}`, check: anInteger(1, MAX_PAGE) },
        'per-page': { type: 'string', arg: 'N', help: `keys per request, 1 to ${MAX_PER_PAGE} (default 100)`, check: anInteger(1, MAX_PER_PAGE) },
        public: {
          type: 'string',
          arg: 'USER',
          help: "USER's public entries (anyone's, yours too), as the public listing answers a page",
          excludes: ['page'],
        },
      },
    },
    examples: [
      'svc kv set hits 0 && svc kv incr hits && svc kv get hits',
      'svc kv set config --file config.json --public',
      'svc kv set likes 0 --counter --public',
      'svc kv incr likes 0 --no-counter',
      'svc kv ls --prefix user_',
      'svc kv ls --public alice --prefix msg-',
    ],
    see: 'docs/cli.md, docs/api/kv.md',
  },
  data: {
    usage: ['svc data push <file> [--default] [--id FILE_ID] [--name NAME] [--type CONTENT_TYPE]'],
    summary: 'upload a text file as hosted data',
    about:
      'Uploads a UTF-8 text file as hosted data: a new version of the file with the same display name (or --id), else a new file. Hosted data takes a login session only: run svc login --username first.',
    flags: {
      default: { type: 'boolean', help: 'make the new version the default (the one the public link serves)' },
      id: { type: 'string', arg: 'FILE_ID', help: 'add a version to this file (default: the file with the same display name)' },
      name: { type: 'string', arg: 'NAME', help: "the display name (default: the file's name)" },
      type: { type: 'string', arg: 'CONTENT_TYPE', help: "the content type (default: from the file's extension, else text/plain)" },
    },
    examples: ['svc data push data.json --default', 'svc data push export.csv --name sales.csv'],
    see: 'docs/cli.md',
  },
  forms: {
    usage: [
      'svc forms ls',
      'svc forms export FORM_ID [--csv] [-o FILE]',
      'svc forms notify FORM_ID [--webhook URL [--paused] | --no-webhook] [--email each|digest|off]',
      'svc forms rotate-secret FORM_ID',
      'svc forms deliveries FORM_ID',
      'svc forms redeliver DELIVERY_ID',
      'svc forms delete-submission SUBMISSION_ID',
    ],
    summary: 'list forms, export and delete their submissions, set their notifications',
    about:
      "Lists your forms, exports their submissions (with their ids), deletes one submission with its files, and shows or changes a form's notifications: a signed webhook, e-mail, and the log of their deliveries.",
    subs: {
      ls: {},
      export: {
        csv: { type: 'boolean', help: 'CSV instead of a table (or JSON with --json)' },
        output: { type: 'string', short: 'o', arg: 'FILE', help: 'write to FILE (default: stdout)' },
      },
      notify: {
        webhook: { type: 'string', arg: 'URL', help: 'send each submission to URL, signed (prints the signing secret once)' },
        paused: { type: 'boolean', help: 'keep the webhook but send nothing', requires: ['webhook'] },
        'no-webhook': { type: 'boolean', help: 'remove the webhook', excludes: ['webhook', 'paused'] },
        email: {
          type: 'string',
          arg: 'each|digest|off',
          help: 'e-mail each submission, a digest, or none (on = each)',
          check: oneOf('each', 'digest', 'off', 'on'),
        },
      },
      'rotate-secret': {},
      deliveries: {},
      redeliver: {},
      'delete-submission': {},
    },
    examples: ['svc forms ls', 'svc forms export 12 --csv -o subs.csv', 'svc forms notify 12 --webhook https://example.com/hook --email digest'],
    see: 'docs/cli.md, docs/api/forms.md',
  },
  domain: {
    usage: [
      'svc domain add DOMAIN --project NAME',
      'svc domain verify DOMAIN',
      'svc domain primary DOMAIN [--off]',
      'svc domain list',
      'svc domain remove DOMAIN',
    ],
    summary: 'add, verify, list and remove custom domains',
    about:
      'Custom domains: add one to a folder project (it prints the DNS TXT record that proves it is yours), verify it, make it the primary domain, list or remove them.',
    subs: {
      add: { project: { type: 'string', arg: 'NAME', help: 'the folder project the domain serves' } },
      verify: {},
      primary: { off: { type: 'boolean', help: 'stop sending browsers to this domain from the other URLs' } },
      list: {},
      remove: {},
    },
    examples: ['svc domain add www.example.com --project site', 'svc domain verify www.example.com', 'svc domain primary www.example.com'],
    see: 'docs/api/domains.md',
  },
  access: {
    usage: ['svc access set NAME [--password-stdin | --no-password] [--expires WHEN | --no-expiry]', 'svc access clear NAME', 'svc access list'],
    summary: 'set a visitor password or an expiry on a project or page',
    about:
      'Sets a visitor password and an expiry on a folder project or single page (NAME), clears them, or lists them. The password comes from stdin or SVC_VISITOR_PASSWORD, never the command line.',
    subs: {
      set: {
        'password-stdin': { type: 'boolean', help: 'read the visitor password from stdin' },
        'no-password': { type: 'boolean', help: 'remove the password', excludes: ['password-stdin'] },
        expires: {
          type: 'string',
          arg: 'WHEN',
          help: 'expire at an ISO 8601 time (2026-12-31T23:00:00Z) or after a duration (30m, 12h, 7d)',
          check: anExpiry,
        },
        'no-expiry': { type: 'boolean', help: 'remove the expiry', excludes: ['expires'] },
      },
      clear: {},
      list: {},
    },
    env: [['SVC_VISITOR_PASSWORD', 'set: the visitor password when --password-stdin and --no-password are not given']],
    examples: ['svc access set site --password-stdin --expires 7d < pw.txt', 'svc access clear site', 'svc access list'],
    see: 'docs/api/domains.md',
  },
  mcp: {
    usage: ['svc mcp'],
    summary: 'run an MCP server on stdin/stdout for AI agents',
    about:
      "Runs an MCP server on stdin/stdout for AI agents (Claude Desktop, editors): it forwards the tools to the server's POST /mcp with the configured URL and API key.",
    flags: {},
    examples: ['svc mcp', 'SVC_URL=https://host SVC_API_KEY=svc_... svc mcp'],
    see: 'docs/mcp.md',
  },
} as const satisfies Record<string, CommandHelp>

export type ClientCommand = keyof typeof CLIENT_HELP

/** What every client command reads from the environment (after its flags, before the config file). */
export const CLIENT_ENV = [
  ['SVC_URL', 'the server (when --url is not given)'],
  ['SVC_API_KEY', 'the API key (when --key is not given)'],
  ['SVC_INSECURE', '1: accept a self-signed certificate'],
  ['SVC_CONFIG', 'the config file (default $XDG_CONFIG_HOME/svc/config.json or ~/.config/svc/config.json)'],
  ['SVC_MAX_WAIT', 'the longest wait, in seconds, for a rate-limited request to be retried (default 300)'],
] as const
