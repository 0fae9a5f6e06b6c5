import crypto from 'node:crypto'
import { Readable } from 'node:stream'
import tar from 'tar-stream'
import * as z from 'zod'
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { ListToolsRequestSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js'
import type { User } from '../../auth/users.js'
import { AppError, isAppError } from '../../errors/app-error.js'
import { errorMessage, extraIn, fill, mapText, type Text } from '../../errors/render.js'
import { ERRORS, type ErrorKey } from '../../errors/codes.js'
import type { IncomingFile } from '../image-host/service.js'
import { checkContent, checkDisplayName, encodeText, normalizeContentType } from '../hosted-data/content.js'
import { formView } from '../forms/service.js'
import { FIELD_TYPES } from '../forms/fields.js'
import { MANIFEST_ENTRY } from '../../util/deploy-manifest.js'
import type { FolderRef } from '../sites/folders-service.js'
import { RULE_FILES } from '../sites/site-rules.js'
import { checkName, checkRelativePath, MAX_SEGMENT_BYTES, NAME_RULE } from '../sites/paths.js'
import type { McpServices } from './services.js'
import { AnyArgumentsCallSchema, callArguments } from './call-request.js'
import { MAX_INLINE_BYTES, MAX_INLINE_FILES } from './limits.js'
import { OUTPUTS, outputSchema, type ToolName } from './outputs.js'
import { checkJsonValue, KEY_RE } from '../kv/validate.js'
import { KEY_RULE, KV_LIMITS } from '../kv/schemas.js'
import { originUrl, previewOriginUrl } from '../../http/site-origin.js'
import { quotaOf } from '../../limits/quotas.js'
import { builtForRoot, decodedPath, ROOT_CHECK_PAGES } from '../../util/html.js'
import { parsePage } from '../../http/pagination.js'
import { MAX_PAGE } from '../../http/page-limits.js'
import { warningsIn, type PageWarning } from '../sites/page-warnings.js'
import { MAX_VERSION } from '../hosted-data/service.js'
import { domainView, type DomainView } from '../domains/service.js'
import { parseDomain } from '../domains/names.js'
import { MAX_PASSWORD_BYTES } from '../../auth/account-rules.js'
import { sizeText } from '../../util/sizes.js'
import { utcTime, utcTimes } from './times.js'

/**
 * The one set of MCP tools. The service's POST /mcp serves them for each request; `svc mcp`
 * (stdio) forwards to that endpoint, so every client sees these same definitions.
 */

/** Who calls, and the origins the answers' URLs are built on. */
export interface ToolContext {
  user: User
  readOnly: boolean
  /** Origin of the service (PUBLIC_URL or the request's). */
  serviceOrigin: string
  /** Origin of user content (CONTENT_ORIGIN or the service origin). */
  contentOrigin: string
  /** The user's own site origin ({username}.{CONTENT_DOMAIN}), or null. */
  siteOrigin: string | null
  /** Whether the account holds an entitlement (image-host, hosted-data). */
  entitled(feature: string): Promise<boolean>
  /**
   * The refusal a tool's unexpected failure answers with, as the REST API's error handler makes
   * it (logged with the request id; 1501 naming that id): its own text never reaches the agent.
   */
  unexpected(err: unknown): AppError
}

interface ToolOutput {
  /** One or two lines for the model, with the URL to open when there is one. */
  summary: string
  data: Record<string, unknown>
  /** Fields of data the summary carries whole (read_file's content): left out of its JSON text. */
  inSummary?: string[]
}

/**
 * A result's content: the summary, then the structured content as JSON text, which the MCP
 * spec asks for clients that hand the model only `content` (submissions, values, file lists).
 */
function resultContent(summary: string, data: Record<string, unknown>, inSummary: string[] = []): CallToolResult['content'] {
  const json = inSummary.length === 0 ? data : Object.fromEntries(Object.entries(data).filter(([k]) => !inSummary.includes(k)))
  return [
    { type: 'text', text: summary },
    { type: 'text', text: JSON.stringify(json) },
  ]
}

interface ToolDef<S extends z.ZodRawShape> {
  /** Also names the tool's output schema (OUTPUTS). */
  name: ToolName
  title: string
  description: string
  readOnly: boolean
  destructive?: boolean
  idempotent?: boolean
  input: S
  run(s: McpServices, ctx: ToolContext, args: z.infer<z.ZodObject<S>>): Promise<ToolOutput>
  /** This tool's own next step for a refusal, where the shared one (TOOL_SOLUTIONS) says less. */
  solutions?(args: z.infer<z.ZodObject<S>>): Partial<Record<ErrorKey, string>>
}

export interface McpTool {
  name: string
  readOnly: boolean
  /** Its entry of tools/list: name, title, description, input and output schemas (compactSchema), annotations. */
  definition(): Tool
  /** Checks the arguments (1106 naming the bad one) and runs the tool; never throws an AppError. */
  call(s: McpServices, ctx: ToolContext, args: unknown): Promise<CallToolResult>
}

const CLI_DEPLOY = 'the CLI: `svc deploy ./folder --project NAME` (archive upload)'
/** A live deploy_files call over a per-call limit: the site can go in several calls, each adding its files. */
const SPLIT_CALLS = `send the site in several deploy_files calls (each adds its files to the project and publishes them; the first holds index.html), or deploy it with ${CLI_DEPLOY}`

/** A payload over the inline limit, with the next step for that tool's kind of content. */
const payloadTooLarge = (what: string, next = `deploy larger sites with ${CLI_DEPLOY}`) =>
  new AppError('FILE_TOO_LARGE', {
    status: 413,
    params: { limit: MAX_INLINE_BYTES },
    extra: { details: { info: `${what} over the MCP inline limit of ${sizeText(MAX_INLINE_BYTES).en}; ${next}` } },
  })

const bad = (detail: string) => new AppError('INVALID_PARAMETER', { params: { detail } })

/**
 * Base64 as agents write it, one rule for every tool that takes bytes: a data: URL prefix,
 * line breaks and the URL-safe alphabet (- and _) are accepted; padding is optional.
 */
function decodeBase64(content: string, what: string): Buffer {
  const b64 = content.replace(/^data:[^,]*;base64,/, '').replace(/\s+/g, '')
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(b64)) throw bad(`${what}: content is not valid base64`)
  return Buffer.from(b64.replace(/-/g, '+').replace(/_/g, '/'), 'base64')
}

/**
 * Extensions of the web's binary files (images other than SVG, fonts, audio, video, PDF,
 * archives, WebAssembly). deploy_files takes them only as base64: sent as text, their base64
 * or their bytes read as a string would be stored as UTF-8 and served broken (decision 211).
 * A list, not the media type: some text files have binary types (.ts is video/mp2t).
 */
const BINARY_EXTENSIONS = new Set(
  'png jpg jpeg jfif gif webp avif ico bmp tif tiff heic heif jxl apng woff woff2 ttf otf eot mp3 wav ogg oga opus flac m4a aac mp4 m4v webm ogv mov mkv avi pdf zip gz tgz br wasm'.split(
    ' ',
  ),
)

/** A file's bytes from its content: base64, or UTF-8 text where its type is not binary (1106). */
function fileBytes(f: { path: string; content: string; encoding?: 'utf8' | 'base64' }): Buffer {
  if (f.encoding === 'base64') return decodeBase64(f.content, f.path)
  const name = f.path.slice(f.path.lastIndexOf('/') + 1)
  const ext = name.includes('.') ? name.slice(name.lastIndexOf('.') + 1).toLowerCase() : ''
  if (BINARY_EXTENSIONS.has(ext)) throw bad(`${f.path}: a .${ext} file is binary: send its bytes base64-encoded with "encoding": "base64"`)
  return Buffer.from(f.content, 'utf8')
}

/**
 * The next step an agent can take, where the REST API's solution names something the tools
 * do not have (a batch upload, a file route): said with the tools' own names.
 */
const TOOL_SOLUTIONS: Partial<Record<ErrorKey, string>> = {
  FOLDER_PERMISSION: 'list_sites shows your projects; deploy_files creates a project',
  FILE_NOT_FOUND: 'list_sites shows your pages and projects by name',
  // deploy_files uploads and publishes in one call: there is no publish step of its own
  PUBLISH_NO_INDEX:
    'Send a root-level index.html in the same deploy_files call (deploy_files publishes the project; nothing else does), or add it with a deploy_files call first',
  SITE_RULES_INVALID: 'Fix the line named and send the corrected file with deploy_files again',
  SITE_TARGET_NOT_FOUND: 'list_sites lists your projects and pages; deploy_files creates a project',
  TOO_MANY_PARTS: 'Send fewer files per deploy_files call',
  EMPTY_FILE: 'Send non-empty content',
  NO_FILE: 'Send the content in the argument the tool names',
  FILE_CONFLICTS: 'Use other paths, or delete_file the conflicting files first',
  MANIFEST_TOO_LARGE: `Send at most ${MAX_INLINE_FILES} files per deploy_files call`,
  ROLLBACK_UNPUBLISHED: 'deploy_files publishes the project; or promote {project, deploy_id} makes a deploy list_deploys shows live',
  KV_KEY_NOT_FOUND:
    'kv_list lists the keys the store holds; a public read needs the entry public (kv_set {key, is_public: true}), a public counter a number entry marked public_incr (kv_set {key, public_incr: true})',
}

/** The next step a tool's refusal names: the tool's own, else the tools' (TOOL_SOLUTIONS), else the REST API's. */
export const toolSolution = (key: ErrorKey, params: AppError['options']['params'], own: Partial<Record<ErrorKey, string>> = {}): string =>
  own[key] ?? TOOL_SOLUTIONS[key] ?? fill(ERRORS[key].solutionEn, 'en', params)

/**
 * A tool's failure as the model reads it: the service's code, message, solution and details,
 * in English as every tool answer is (a service's reason given in both languages included).
 */
export function errorResult(e: unknown, solutions: Partial<Record<ErrorKey, string>> = {}): CallToolResult {
  if (isAppError(e)) {
    const d = ERRORS[e.key]
    const message = errorMessage(e.key, 'en', e.options.params)
    const solution = toolSolution(e.key, e.options.params, solutions)
    const extra = extraIn(e.options.extra, 'en')
    const details = extra.details as { info?: unknown } | undefined
    // a detail without its own full stop gets one, so the solution reads as its own sentence (a
    // closing parenthesis ends one only after a stop: "(archive upload)" still needs its own)
    const info = typeof details?.info === 'string' ? ` ${details.info}${/[.!?]\)?$/.test(details.info) ? '' : '.'}` : ''
    const error = { error_code: d.code, error_type: d.type, message, solution, ...extra }
    const data = utcTimes({ success: false, ...error }) as Record<string, unknown>
    return { isError: true, content: resultContent(`Error ${d.code} (${d.type}): ${message}.${info} ${solution}`.trim(), data), structuredContent: data }
  }
  throw e
}

/** An argument's place as an agent writes it: `files[0].encoding`. */
function argPath(path: readonly PropertyKey[]): string {
  return path.map((k, i) => (typeof k === 'number' ? `[${k}]` : i === 0 ? String(k) : `.${String(k)}`)).join('')
}

function valueAt(args: unknown, path: readonly PropertyKey[]): unknown {
  let v = args
  for (const k of path) v = v !== null && typeof v === 'object' ? (v as Record<PropertyKey, unknown>)[k] : undefined
  return v
}

/**
 * Arguments that do not fit a tool's schema, as the service's 1106 naming each bad argument
 * (at most five), so an agent reads them like any other refusal.
 */
function badArguments(tool: string, error: z.ZodError, args: unknown): AppError {
  const parts = error.issues.slice(0, 5).map((i) => {
    if (i.code === 'unrecognized_keys') {
      const where = i.path.length > 0 ? ` in "${argPath(i.path)}"` : ''
      return `unknown argument${i.keys.length > 1 ? 's' : ''} ${i.keys.map((k) => `"${k}"`).join(', ')}${where}`
    }
    if (i.path.length === 0) return `the arguments: ${i.message}`
    const name = `argument "${argPath(i.path)}"`
    return i.code === 'invalid_type' && valueAt(args, i.path) === undefined ? `${name} is required` : `${name}: ${i.message}`
  })
  if (error.issues.length > 5) parts.push(`and ${error.issues.length - 5} more`)
  return new AppError('INVALID_PARAMETER', {
    params: { detail: parts.join('; ') },
    extra: { details: { info: `tools/list gives the input schema of ${tool}.` } },
  })
}

function tool<S extends z.ZodRawShape>(d: ToolDef<S>): McpTool {
  const schema = z.object(d.input).strict()
  const call = async (s: McpServices, ctx: ToolContext, args: unknown): Promise<CallToolResult> => {
    let solutions: Partial<Record<ErrorKey, string>> | undefined
    try {
      const parsed = await schema.safeParseAsync(args ?? {})
      if (!parsed.success) throw badArguments(d.name, parsed.error, args)
      solutions = d.solutions?.(parsed.data)
      const out = await d.run(s, ctx, parsed.data)
      const data = utcTimes({ success: true, ...out.data }) as Record<string, unknown>
      return { content: resultContent(out.summary, data, out.inSummary), structuredContent: data }
    } catch (e) {
      return errorResult(e, solutions)
    }
  }
  return {
    name: d.name,
    readOnly: d.readOnly,
    call,
    definition: () => ({
      name: d.name,
      title: d.title,
      description: d.description,
      inputSchema: compactSchema(z.toJSONSchema(schema, { target: 'draft-7', io: 'input' })) as Tool['inputSchema'],
      outputSchema: compactSchema(z.toJSONSchema(outputSchema(OUTPUTS[d.name]), { target: 'draft-7', io: 'output' })) as Tool['outputSchema'],
      annotations: {
        readOnlyHint: d.readOnly,
        destructiveHint: d.readOnly ? false : (d.destructive ?? false),
        idempotentHint: d.idempotent ?? d.readOnly,
        openWorldHint: false,
      },
    }),
  }
}

const isEmptyObject = (v: unknown) => v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0

/**
 * A JSON schema as tools/list sends it, without what says nothing a client or model needs and
 * repeats in every tool: `$schema`, zod's safe-integer bounds on every integer, and
 * `additionalProperties: {}` (what an object allows anyway). Property names are never taken
 * for keywords; enum and default values are left as they are.
 */
export function compactSchema(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(compactSchema)
  if (v === null || typeof v !== 'object') return v
  const out: Record<string, unknown> = {}
  for (const [k, x] of Object.entries(v)) {
    if (k === '$schema' || (k === 'additionalProperties' && isEmptyObject(x))) continue
    if ((k === 'minimum' && x === Number.MIN_SAFE_INTEGER) || (k === 'maximum' && x === Number.MAX_SAFE_INTEGER)) continue
    if (k === 'enum' || k === 'const' || k === 'default' || k === 'examples') out[k] = x
    else if (k === 'properties' && x !== null && typeof x === 'object')
      out[k] = Object.fromEntries(Object.entries(x).map(([name, p]) => [name, compactSchema(p)]))
    else out[k] = compactSchema(x)
  }
  return out
}

/**
 * A project named by a tool argument. The REST routes read a folder path, where "{username}/x"
 * names the caller's x and any other "a/b" is someone else's project (1312); a tool's
 * argument is a project name, so a "/" in it is an invalid name (1110), never "no access".
 */
function projectRef(s: McpServices, ctx: ToolContext, name: string): FolderRef {
  const refuse = (why: Text) =>
    new AppError('INVALID_PATH', {
      params: { detail: mapText(why, (w) => `project name ${JSON.stringify(name)}: ${w}`) },
      extra: { details: { info: `A project name is ${NAME_RULE} (list_sites shows your projects).` } },
    })
  if (name.includes('/')) throw refuse({ zh: '项目名不能含 "/"', en: 'a project name cannot contain "/"' })
  // checked here, so a refusal names the argument the agent sent, not the REST route's folder_path
  const r = checkName(name)
  if (!r.ok) throw refuse(r.reason)
  return s.folders.folderRef(ctx.user, [encodeURIComponent(name)])
}

/**
 * A file's path in a project as a tool names it, checked by the batch upload's rule
 * (folders' checkUploadName) and in its stored form; 1110 naming the path and the reason
 * when bad (the reason alone: the batch's failure message already holds the 1110 prefix).
 */
function projectPath(path: string): string {
  const r = checkRelativePath(path)
  if (!r.ok) throw new AppError('INVALID_PATH', { params: { detail: mapText(r.reason, (why) => `${path}: ${why}`) } })
  return r.path
}
/**
 * The warnings of the pages a call stored (page-warnings.ts), in English as every tool answer
 * is: `warnings` for the data, and a line each for the summary.
 */
function warned(ws: PageWarning[]): { warnings: Array<{ path: string; message: string }>; lines: string } {
  const warnings = warningsIn(ws, 'en')
  return { warnings, lines: warnings.map((w) => `\nWarning: ${w.message}`).join('') }
}
const siteUrlOf = (ctx: ToolContext, path: string) => (ctx.siteOrigin === null ? null : ctx.siteOrigin + path)
/**
 * A project named by a tool: checked by the folders service's checkName (projectRef), the rule
 * of the REST API and `svc deploy`; the schema bounds the length only (bytes are checkName's).
 * The rule is stated where a name is made (deploy_files); a tool that names an existing project
 * says where its name comes from, and a refusal (1110) states the rule.
 */
const projectName = z.string().min(1).max(MAX_SEGMENT_BYTES).describe('The name of one of your projects, as list_sites shows it')
/** The project deploy_files uploads into, created under this name when it does not exist yet. */
const newProjectName = projectName.describe(`Project (site) name: ${NAME_RULE}`)

const publishHtml = tool({
  name: 'publish_html',
  title: 'Publish an HTML page',
  description:
    'Publishes one self-contained HTML page (inline CSS/JS) as a single-file site and returns its URL. Publishing again with the same name replaces the page. For several files use deploy_files.',
  readOnly: false,
  idempotent: true,
  input: {
    name: z.string().min(1).max(200).describe('Page name; ".html" is added when missing (e.g. "landing" -> landing.html)'),
    html: z
      .string()
      .min(1)
      .describe(`The complete HTML document, markup with at least one tag (plain text or JSON is refused); at most ${MAX_INLINE_BYTES} bytes`),
    title: z.string().max(100).optional().describe('Project name shown in the dashboard'),
  },
  // the name always gets an .html extension: a refused type is the content's, never the name's
  solutions: () => ({
    FILE_TYPE_UNSUPPORTED: 'The html argument must be an HTML document (e.g. "<!doctype html><p>...</p>"), not plain text, JSON or binary data',
  }),
  async run(s, ctx, a) {
    const bytes = Buffer.from(a.html, 'utf8')
    if (bytes.length > MAX_INLINE_BYTES) throw payloadTooLarge('html is')
    const fileName = s.files.checkFileName(/\.html?$/i.test(a.name) ? a.name : `${a.name}.html`)
    const staged = await s.files.stage(Readable.from([bytes]))
    const { record: rec, warnings } = await s.files.commit(ctx.user, { fileName, staged, projectName: a.title }, ctx.contentOrigin)
    const site = siteUrlOf(ctx, `/${encodeURIComponent(rec.file_name)}`)
    const open = site ?? rec.url
    const w = warned(warnings)
    return {
      summary: `${rec.is_update ? 'Updated' : 'Published'} ${rec.file_name}: ${open}${w.lines}`,
      data: { ...rec, site_url: site, open_url: open, warnings: w.warnings },
    }
  },
})

const deployFiles = tool({
  name: 'deploy_files',
  title: 'Deploy a small site',
  description: `Uploads files into a folder project (created if absent; existing paths are replaced, files not sent stay: delete_file removes one) and publishes it at /{username}/{project}/ as one new live deploy, whose id the answer gives (needs an index.html at the root; rollback without deploy_id undoes the call; a call that changes no file makes no deploy). With publish false it instead makes a preview deploy of exactly the given files (the whole site, with its own index.html): the live site and the project's files stay as they are, and the answer's preview URL shows it until promote makes it live. At most ${MAX_INLINE_FILES} files and ${MAX_INLINE_BYTES} bytes per call: send a larger site in several calls, or use the CLI: svc deploy ./folder.`,
  readOnly: false,
  idempotent: true,
  input: {
    project: newProjectName,
    files: z
      .array(
        z
          .object({
            path: z.string().min(1).max(1024).describe('Relative path, e.g. "index.html" or "css/site.css"; no "..", no leading "/"'),
            content: z
              .string()
              .describe(
                'File content: UTF-8 text, or with encoding "base64" the bytes in base64 (a data: URL prefix is accepted); images (except SVG), fonts, audio, video, PDF and archives only in base64',
              ),
            encoding: z.enum(['utf8', 'base64']).optional().describe('default utf8'),
          })
          .strict(),
      )
      .min(1)
      .describe('The files to upload'),
    publish: z.boolean().optional().describe('true (default): upload and publish live; false: a preview deploy of these files only, not live'),
  },
  async run(s, ctx, a) {
    if (a.files.length > MAX_INLINE_FILES)
      throw new AppError('TOO_MANY_PARTS', {
        params: { detail: `${a.files.length} files; deploy_files takes at most ${MAX_INLINE_FILES}` },
        extra: { details: { info: a.publish === false ? `a preview is one call: deploy larger sites with ${CLI_DEPLOY}` : SPLIT_CALLS } },
      })
    const ref = projectRef(s, ctx, a.project)
    // every path and the total size are checked before any byte is stored
    const seen = new Set<string>()
    const decoded: Array<{ name: string; path: string; bytes: Buffer }> = []
    let total = 0
    for (const f of a.files) {
      const path = projectPath(f.path)
      if (seen.has(path)) throw bad(`the call carries ${path} twice`)
      seen.add(path)
      const bytes = fileBytes(f)
      total += bytes.length
      // one file over the limit fits no call; files that only add up to it fit in several (a preview is one call)
      if (bytes.length > MAX_INLINE_BYTES) throw payloadTooLarge(`${f.path} alone is ${bytes.length} bytes,`, `deploy it with ${CLI_DEPLOY}`)
      if (total > MAX_INLINE_BYTES)
        throw payloadTooLarge(
          "the call's files together are",
          a.publish === false ? `a preview is one call: deploy larger sites with ${CLI_DEPLOY}` : SPLIT_CALLS,
        )
      decoded.push({ name: f.path, path, bytes })
    }
    if (a.publish === false) return previewDeploy(s, ctx, ref, decoded)
    const wasLive = (await s.folders.projects(ctx.user, ctx.contentOrigin)).some((p) => p.name === ref.name && p.is_published)
    // what the publish below would refuse (no index.html, a bad _redirects line) is refused
    // before any file is stored: the call stores all of its files or none
    if (!wasLive || decoded.some((f) => (RULE_FILES as readonly string[]).includes(f.path)))
      await s.folders.checkPublishable(ctx.user, ref, new Map(decoded.map((f) => [f.path, f.bytes])))
    const staged = []
    for (const f of decoded) staged.push(await s.folders.stage(Readable.from([f.bytes]), f.name, f.path, MAX_INLINE_BYTES))
    // one call is one whole deploy (decision 212): on a live project the atomic batch is it
    // (with the rules the call leaves), none when the call changes nothing; else the publish
    const r = await s.folders.commitBatch(ctx.user, ref, staged, true, true, ctx.contentOrigin)
    let websiteUrl = `${ctx.contentOrigin}/${ctx.user.username}/${encodeURIComponent(ref.name)}/`
    let deployId = r.deploy_id
    // no deploy from the batch: the project was not live when it committed, or nothing changed.
    // `wasLive` was read before: a project unpublished since is published, as serial order would
    const live = deployId === null && wasLive ? (await s.deploys.list(ctx.user, ref)).live_deploy_id : null
    if (deployId === null && live === null) ({ website_url: websiteUrl, deploy_id: deployId } = await s.folders.publish(ctx.user, ref, ctx.contentOrigin))
    const unchanged = deployId === null
    if (deployId === null) deployId = live
    const site = siteUrlOf(ctx, `/${encodeURIComponent(ref.name)}/`)
    const root = originUrl(ctx.siteOrigin, ref.name)
    const open = await openUrl(decoded, root, site ?? websiteUrl)
    const what = unchanged
      ? `No file of ${ref.name} changed (${r.uploaded} sent); deploy ${deployId} stays live`
      : `Uploaded ${r.uploaded} file(s) to ${ref.name} as deploy ${deployId}, published`
    const w = warned(r.warnings)
    return {
      summary: `${what}: ${open}${otherUrl(open, root, site ?? websiteUrl)}${w.lines}`,
      data: {
        project: ref.name,
        uploaded_count: r.uploaded,
        changed_count: r.changed,
        unchanged,
        deploy_id: deployId,
        is_published: true,
        website_url: websiteUrl,
        site_url: site,
        origin_url: root,
        open_url: open,
        warnings: w.warnings,
      },
    }
  },
})

/**
 * The URL to open after deploy_files, as `svc deploy` chooses it: the root of the project's
 * (or the deploy's) own origin when the call's index.html or 404.html loads files from / (a
 * site built for /, Vite's default), else the project under its user's origin (or the path form).
 */
async function openUrl(files: Array<{ path: string; bytes: Buffer }>, root: string | null, under: string): Promise<string> {
  if (root === null || !files.some((f) => f.path === 'index.html')) return under
  const paths = new Set(files.map((f) => `/${f.path}`))
  for (const name of ROOT_CHECK_PAGES) {
    const page = files.find((f) => f.path === name)
    if (page !== undefined && (await builtForRoot(page.bytes.toString('utf8'), (p) => paths.has(decodedPath(p) ?? p)))) return root
  }
  return under
}

/** The summary's line naming the other place the site answers. */
const otherUrl = (open: string, root: string | null, under: string): string =>
  root === null
    ? ''
    : open === root
      ? `\n(the site loads files from /, so open it at the root of its own origin; browsers opening ${under} are sent there)`
      : `\nAt the root of its own origin (for a site whose files load from /): ${root}`

/**
 * deploy_files with publish false: one archive deploy (manifest first, then every file) made
 * as a preview through the deploys service, so nothing live and no project file changes.
 */
async function previewDeploy(s: McpServices, ctx: ToolContext, ref: FolderRef, files: Array<{ path: string; bytes: Buffer }>): Promise<ToolOutput> {
  const digests = Object.fromEntries(files.map((f) => [f.path, crypto.createHash('sha256').update(f.bytes).digest('hex')]))
  const pack = tar.pack()
  pack.entry({ name: MANIFEST_ENTRY }, Buffer.from(JSON.stringify({ files: digests, preview: true, source: 'api', message: 'preview (MCP deploy_files)' })))
  for (const f of files) pack.entry({ name: f.path }, f.bytes)
  pack.finalize()
  // the archive is at most the inline limit plus headers: held whole, then read as a node stream
  const chunks: Buffer[] = []
  for await (const c of pack as AsyncIterable<Buffer>) chunks.push(c)
  const r = await s.deploys.deployArchive(ctx.user, ref, Readable.from([Buffer.concat(chunks)]), false, ctx.contentOrigin)
  const site = siteUrlOf(ctx, `/${encodeURIComponent(ref.name)}/`)
  const previewSite = siteUrlOf(ctx, `/${encodeURIComponent(ref.name)}@${r.deploy.id}/`)
  const root = previewOriginUrl(ctx.siteOrigin, ref.name, r.deploy.id)
  const open = await openUrl(files, root, previewSite ?? r.preview_url)
  const w = warned(r.warnings)
  return {
    summary: `Preview deploy ${r.deploy.id} of ${ref.name} (${r.deploy.file_count} files, not live): ${open}${otherUrl(open, root, previewSite ?? r.preview_url)}\nMake it live with promote {project: "${ref.name}", deploy_id: "${r.deploy.id}"}.${w.lines}`,
    data: {
      project: ref.name,
      uploaded_count: files.length,
      is_published: false,
      deploy: r.deploy,
      website_url: r.website_url,
      site_url: site,
      origin_url: originUrl(ctx.siteOrigin, ref.name),
      preview_url: r.preview_url,
      preview_site_url: previewSite,
      preview_origin_url: root,
      open_url: open,
      warnings: w.warnings,
    },
  }
}

/**
 * An id a tool looks up (a deploy, form, data file or image): at most 64 characters and no
 * NUL, which PostgreSQL cannot compare and the REST routes refuse in a path (1106) too.
 */
const idArg = (description: string) =>
  z
    .string()
    .min(1)
    .max(64)
    .regex(/^[^\u0000]*$/, 'must not contain a NUL character (U+0000)')
    .describe(description)

const deployId = idArg('A deploy id, as list_deploys shows it')

/**
 * The deploy refusals' next steps in the tools' own names: the REST solutions name `svc
 * publish` and a deploy list, which an agent reaches as deploy_files and list_deploys.
 */
const deploySolutions = (a: { project: string }) => {
  const list = `list_deploys {project: ${JSON.stringify(a.project)}}`
  return {
    DEPLOY_NOT_FOUND: `${list} lists the kept deploys and their ids`,
    NO_PREVIOUS_DEPLOY: `${list} lists the kept deploys; pass one's id as deploy_id`,
    ROLLBACK_UNPUBLISHED: `deploy_files publishes the project; or promote {project, deploy_id} makes a deploy ${list} shows live`,
  }
}

/** A deploy's own URLs (path form, on the user's site origin and at its own origin when there are). */
function deployUrls(ctx: ToolContext, project: string, id: string) {
  const path = `/${encodeURIComponent(project)}@${id}/`
  return {
    preview_url: `${ctx.contentOrigin}/${ctx.user.username}${path}`,
    preview_site_url: siteUrlOf(ctx, path),
    preview_origin_url: previewOriginUrl(ctx.siteOrigin, project, id),
  }
}

/** The URL a project's live deploy answers at. */
const liveUrl = (ctx: ToolContext, project: string) =>
  siteUrlOf(ctx, `/${encodeURIComponent(project)}/`) ?? `${ctx.contentOrigin}/${ctx.user.username}/${encodeURIComponent(project)}/`

const listDeploys = tool({
  name: 'list_deploys',
  title: 'List the deploys of a project',
  description:
    'Lists the kept deploys (versions) of a folder project, newest first: id, time, files, bytes, whether it is live or a preview, and the URL that shows each one. Use the ids with rollback and promote.',
  readOnly: true,
  input: { project: projectName },
  async run(s, ctx, a) {
    const ref = projectRef(s, ctx, a.project)
    const r = await s.deploys.list(ctx.user, ref)
    const deploys = r.deploys.map((d) => ({ ...d, ...deployUrls(ctx, ref.name, d.id) }))
    const live = liveUrl(ctx, ref.name)
    const lines = deploys.map(
      (d) =>
        `${d.id} ${utcTime(d.created_at)} ${d.file_count} files${d.is_live ? ' (live)' : ''}${d.is_preview ? ' (preview)' : ''}: ${d.preview_site_url ?? d.preview_url}`,
    )
    return {
      summary: `${ref.name}: ${deploys.length} deploy(s); live ${r.live_deploy_id ?? 'none'} at ${live}${lines.length ? `\n${lines.join('\n')}` : ''}`,
      data: { project: ref.name, live_deploy_id: r.live_deploy_id, open_url: live, deploys },
    }
  },
})

const rollback = tool({
  name: 'rollback',
  title: 'Roll back a project',
  description:
    'Makes an earlier deploy of a folder project live again: deploy_id, or by default the newest deploy older than the live one that was live whole (a deploy_files call; a preview only once promoted; not the state delete_file left). Nothing is deleted (roll forward with promote). Pass deploy_id to make a repeated call land on the same deploy.',
  readOnly: false,
  destructive: false,
  idempotent: true,
  input: { project: projectName, deploy_id: deployId.optional() },
  solutions: deploySolutions,
  async run(s, ctx, a) {
    const ref = projectRef(s, ctx, a.project)
    const r = await s.deploys.rollback(ctx.user, ref, a.deploy_id)
    const open = liveUrl(ctx, ref.name)
    return {
      summary: `Rolled back ${ref.name} to deploy ${r.live_deploy_id}, now live: ${open}`,
      data: { project: ref.name, live_deploy_id: r.live_deploy_id, open_url: open },
    }
  },
})

const promote = tool({
  name: 'promote',
  title: 'Make a deploy live',
  description: 'Makes a kept deploy of a folder project live (a preview made with deploy_files publish false, or any earlier deploy).',
  readOnly: false,
  destructive: false,
  idempotent: true,
  input: { project: projectName, deploy_id: deployId },
  solutions: deploySolutions,
  async run(s, ctx, a) {
    const ref = projectRef(s, ctx, a.project)
    const r = await s.deploys.promote(ctx.user, ref, a.deploy_id)
    const open = liveUrl(ctx, ref.name)
    return {
      summary: `Deploy ${r.live_deploy_id} of ${ref.name} is live: ${open}`,
      data: { project: ref.name, live_deploy_id: r.live_deploy_id, open_url: open },
    }
  },
})

const setUserSite = tool({
  name: 'set_user_site',
  title: 'Make a project the user site',
  description:
    "Makes a folder project the caller's user site (user_site true, the default) or stops it being one (false): while it is published, it answers the root of the caller's own origin and every path there that names none of their other projects or pages, as a GitHub Pages user site does. One project at a time: another replaces it.",
  readOnly: false,
  destructive: false,
  idempotent: true,
  input: { project: projectName, user_site: z.boolean().optional().describe('true (default): make it the user site; false: stop it being one') },
  async run(s, ctx, a) {
    const ref = projectRef(s, ctx, a.project)
    const r = await s.folders.setUserSite(ctx.user, ref, a.user_site ?? true)
    const url = siteUrlOf(ctx, '/')
    const where = url ?? "the root of the user's own origin (the server has no content domain)"
    return {
      summary: r.user_site ? `${ref.name} is the user site: it answers ${where} while it is published` : `${ref.name} is not the user site`,
      data: { project: ref.name, user_site: r.user_site, user_site_url: url },
    }
  },
})

/** A 1-based page of a list as the tools page it: which slice, how many pages, and the summary's note naming the next call. */
function pageOf(total: number, page: number, perPage: number, what: string, next: (page: number) => string) {
  const totalPages = Math.ceil(total / perPage)
  const from = (page - 1) * perPage
  const shown = Math.max(0, Math.min(perPage, total - from))
  const note =
    total <= perPage && page === 1
      ? ''
      : shown === 0
        ? `; no ${what} on page ${page} of ${totalPages}`
        : `; ${what} ${from + 1}-${from + shown} of ${total} ${what === 'files' ? 'listed' : 'shown'}${page < totalPages ? `; ${next(page + 1)} lists the next` : ''}`
  return { from, totalPages, note }
}
const SITES_PER_PAGE = 100
// the REST lists' bound (parsePage), so every list tool takes the same pages
const pageArg = z.number().int().min(1).max(MAX_PAGE).optional().describe('Page number, from 1 (default 1)')

const listSites = tool({
  name: 'list_sites',
  title: 'List sites',
  description:
    "Lists the caller's sites with their URLs: its folder projects, all of them, and its single-file pages, 100 a page (page 2 and on for more; the answer says how many there are).",
  readOnly: true,
  input: { page: pageArg },
  async run(s, ctx, a) {
    const page = a.page ?? 1
    const [files, projects] = await Promise.all([
      s.files.list(ctx.user, {}, SITES_PER_PAGE, (page - 1) * SITES_PER_PAGE, ctx.contentOrigin),
      s.folders.projects(ctx.user, ctx.contentOrigin),
    ])
    const pages = files.files.map((f) => ({ ...f, site_url: siteUrlOf(ctx, `/${encodeURIComponent(f.file_name)}`) }))
    const folders = projects.map((p) => ({ ...p, site_url: siteUrlOf(ctx, `/${encodeURIComponent(p.name)}/`), origin_url: originUrl(ctx.siteOrigin, p.name) }))
    const paging = pageOf(files.total, page, SITES_PER_PAGE, 'pages', (n) => `list_sites {page: ${n}}`)
    const lines = [
      ...pages.map((f) => `page ${f.file_name}: ${f.site_url ?? f.url}`),
      ...folders.map((p) => `project ${p.name} (${p.is_published ? 'published' : 'not published'}, ${p.file_count} files): ${p.site_url ?? p.website_url}`),
    ]
    const summary = lines.length ? lines.join('\n') : 'No sites yet.'
    return {
      summary: paging.note ? `${summary}\n${paging.note.slice(2)}` : summary,
      data: { pages, pages_total: files.total, page, per_page: SITES_PER_PAGE, total_pages: paging.totalPages, projects: folders },
    }
  },
})

const getSite = tool({
  name: 'get_site',
  title: 'Get a site',
  description:
    'Details of one site by name: a single-file page, or a folder project with its files, 200 a page by default (page and per_page, at most 1000, for more; the answer gives files_total).',
  readOnly: true,
  input: {
    name: z.string().min(1).max(MAX_SEGMENT_BYTES).describe('Project name, or page file name (e.g. landing.html)'),
    page: pageArg,
    per_page: z.number().int().min(1).max(1000).optional().describe("A project's files per page (default 200, at most 1000)"),
  },
  async run(s, ctx, a) {
    const projects = await s.folders.projects(ctx.user, ctx.contentOrigin)
    const p = projects.find((x) => x.name === a.name)
    if (p) {
      const ref = s.folders.folderRef(ctx.user, [encodeURIComponent(p.name)])
      const all = await s.folders.list(ctx.user, ref, ctx.contentOrigin)
      const site = siteUrlOf(ctx, `/${encodeURIComponent(p.name)}/`)
      const page = a.page ?? 1
      const perPage = a.per_page ?? 200
      const paging = pageOf(
        all.length,
        page,
        perPage,
        'files',
        (n) => `get_site {name: ${JSON.stringify(p.name)}, page: ${n}${a.per_page ? `, per_page: ${perPage}` : ''}}`,
      )
      const files = all.slice(paging.from, paging.from + perPage)
      return {
        summary: `project ${p.name}: ${p.is_published ? 'published' : 'not published'}, ${all.length} files; ${site ?? p.website_url}${paging.note ? `\n${paging.note.slice(2)}` : ''}`,
        data: {
          type: 'project',
          ...p,
          site_url: site,
          origin_url: originUrl(ctx.siteOrigin, p.name),
          files,
          files_total: all.length,
          page,
          per_page: perPage,
          total_pages: paging.totalPages,
        },
      }
    }
    const f = (await s.files.one(ctx.user, a.name, ctx.contentOrigin)) ?? (await s.files.one(ctx.user, `${a.name}.html`, ctx.contentOrigin))
    if (!f) throw new AppError('FILE_NOT_FOUND')
    const site = siteUrlOf(ctx, `/${encodeURIComponent(f.file_name)}`)
    return { summary: `page ${f.file_name} (${f.file_size} bytes): ${site ?? f.url}`, data: { type: 'page', ...f, site_url: site } }
  },
})

const deleteSite = tool({
  name: 'delete_site',
  title: 'Delete a site',
  description:
    'Deletes a single-file page (by file name; ".html" is added when missing, as publish_html adds it), or a folder project (by project name, which comes first): its files, its kept deploys and their preview URLs, all offline at once. Cannot be undone.',
  readOnly: false,
  destructive: true,
  idempotent: true,
  input: { name: z.string().min(1).max(MAX_SEGMENT_BYTES).describe('Page file name (landing.html) or project name') },
  async run(s, ctx, a) {
    const projects = await s.folders.projects(ctx.user, ctx.contentOrigin)
    const p = projects.find((x) => x.name === a.name)
    if (p) {
      const ref = s.folders.folderRef(ctx.user, [encodeURIComponent(p.name)])
      const { files } = await s.folders.remove(ctx.user, ref)
      return {
        summary: `Deleted project ${p.name} (${files} files, with its kept deploys) and took it offline.`,
        data: { type: 'project', name: p.name, deleted_files: files },
      }
    }
    // the page by its exact name, else by the name publish_html was given (".html" added), as get_site finds it
    const exact = (await s.files.one(ctx.user, a.name, ctx.contentOrigin)) !== null || /\.html?$/i.test(a.name)
    const name = exact ? a.name : `${a.name}.html`
    await s.files.remove(ctx.user, name)
    return { summary: `Deleted page ${name}.`, data: { type: 'page', name } }
  },
})

/** A file a project does not have: the project's own file list is the next step. */
const projectFileSolutions = (a: { project: string }) => ({ FILE_NOT_FOUND: `get_site {name: ${JSON.stringify(a.project)}} lists the project's files` })
const filePathArg = z.string().min(1).max(1024).describe('Path in the project, e.g. "index.html" or "css/site.css"')

/**
 * read_file answers a text file this many bytes a page (cut at character boundaries), so one
 * answer stays within what a client hands its model, as get_site's pages do (316).
 */
export const READ_FILE_PAGE_BYTES = 32768

/** The first character boundary of UTF-8 `buf` at or after byte `i`. */
function charStart(buf: Buffer, i: number): number {
  while (i < buf.length && (buf[i] & 0xc0) === 0x80) i++
  return Math.min(i, buf.length)
}

const readFile = tool({
  name: 'read_file',
  title: 'Read a file of a project',
  description: `Reads one file of a folder project as the project holds it now (the live site may be an older deploy): its size, and its content when it is UTF-8 text of at most 5 MiB (otherwise content is null: open its URL instead), ${READ_FILE_PAGE_BYTES} bytes a page (page 2 and on for a larger file; the answer gives total_pages and names the next call).`,
  readOnly: true,
  input: {
    project: projectName,
    path: filePathArg,
    page: pageArg.describe(`Page of the content, ${READ_FILE_PAGE_BYTES} bytes each, from 1 (default 1)`),
  },
  solutions: projectFileSolutions,
  async run(s, ctx, a) {
    const ref = projectRef(s, ctx, a.project)
    const f = await s.folders.read(ctx.user, ref, projectPath(a.path))
    const site = siteUrlOf(ctx, `/${encodeURIComponent(ref.name)}/${f.path.split('/').map(encodeURIComponent).join('/')}`)
    const base = { project: ref.name, path: f.path, size: f.size }
    if (f.content === null || f.content === undefined) {
      return {
        summary: `${a.project}/${f.path} (${f.size} bytes; not shown (binary, or over 5 MiB))`,
        data: { ...base, content: null, site_url: site },
      }
    }
    const buf = Buffer.from(f.content, 'utf8')
    const page = a.page ?? 1
    const totalPages = Math.max(1, Math.ceil(buf.length / READ_FILE_PAGE_BYTES))
    const from = charStart(buf, Math.min((page - 1) * READ_FILE_PAGE_BYTES, buf.length))
    const to = charStart(buf, Math.min(page * READ_FILE_PAGE_BYTES, buf.length))
    const content = buf.subarray(from, to).toString('utf8')
    const next = `read_file {project: ${JSON.stringify(a.project)}, path: ${JSON.stringify(f.path)}, page: ${page + 1}} reads the next`
    const what =
      totalPages === 1 && page === 1
        ? 'content below'
        : from >= buf.length
          ? `no content on page ${page} of ${totalPages}`
          : `bytes ${from + 1}-${to} on page ${page} of ${totalPages} below${page < totalPages ? `; ${next}` : ''}`
    return {
      summary: `${a.project}/${f.path} (${f.size} bytes; ${what})${content ? `\n${content}` : ''}`,
      data: { ...base, content, page, total_pages: totalPages, site_url: site },
      inSummary: content ? ['content'] : [],
    }
  },
})

const deleteFile = tool({
  name: 'delete_file',
  title: 'Delete a file of a project',
  description:
    'Deletes one file of a folder project. A published project goes live without it at once, as a new deploy (rollback brings it back). Deleting the root index.html leaves the site without a home page (404) until deploy_files adds one.',
  readOnly: false,
  destructive: true,
  idempotent: true,
  input: { project: projectName, path: filePathArg },
  solutions: projectFileSolutions,
  async run(s, ctx, a) {
    const ref = projectRef(s, ctx, a.project)
    const path = projectPath(a.path)
    await s.folders.removeFile(ctx.user, ref, path)
    return { summary: `Deleted ${a.project}/${path}.`, data: { project: ref.name, path } }
  },
})

/**
 * A key a tool writes: the store's rule (KEY_RE, keyMaxChars) in the input schema, so a key the
 * store would refuse (1601, 1606) is refused before the call as 1106 naming the rule.
 */
const kvKey = z
  .string()
  .min(1)
  .max(KV_LIMITS.keyMaxChars, `must be at most ${KV_LIMITS.keyMaxChars} characters`)
  .regex(KEY_RE, 'must start with an ASCII letter, then only a-zA-Z0-9_-')
  .describe(`Key: ${KEY_RULE}`)
/** A key a tool reads: any key the store may hold, older ones outside today's rule too (as the REST get). */
const kvLookupKey = z
  .string()
  .min(1)
  .max(KV_LIMITS.lookupKeyMaxChars, `must be at most ${KV_LIMITS.lookupKeyMaxChars} characters`)
  .describe(`Key of the entry (keys written today: ${KEY_RULE})`)
const kvTtl = z
  .number()
  .int()
  .positive()
  .max(KV_LIMITS.ttlMaxSeconds)
  .optional()
  .describe('Seconds until the entry expires (none when the entry is created; an update keeps its expiry when omitted)')
const kvPublicUrl = (ctx: ToolContext, key: string) =>
  `${ctx.serviceOrigin}/svc_api/data/public/${encodeURIComponent(ctx.user.username)}/${encodeURIComponent(key)}`
/** The dashboard page where the account's owner (logged in) sees its entries, forms' submissions, data files or images. */
const dashboardUrl = (ctx: ToolContext, page: 'kv' | 'forms' | 'data' | 'images' | 'domains') => `${ctx.serviceOrigin}/dashboard/${page}`
/** A public counter's increment URL (POST, no key), or null for any other entry. */
const kvCounterUrl = (ctx: ToolContext, e: { key: string; public_incr?: boolean }) => (e.public_incr ? `${kvPublicUrl(ctx, e.key)}/incr` : null)
/**
 * kv_set's data_type when it marks a public counter, which counts only as a number entry
 * (decision 314): a number value without data_type is one; any other type is 1106,
 * so no call stores a counter whose public increment would answer 1604.
 */
function counterType(a: { value?: unknown; data_type?: 'json' | 'text' | 'number'; public_incr?: boolean }) {
  if (a.public_incr !== true) return a.data_type
  if (a.data_type === 'number' || (a.data_type === undefined && typeof a.value === 'number')) return 'number'
  throw bad(
    `argument "public_incr": a public counter is a number entry: send a number value (e.g. "value": 0) with "data_type": "number" or without data_type; got ${a.data_type === undefined ? `a ${a.value === null ? 'null' : typeof a.value} value` : `data_type "${a.data_type}"`}`,
  )
}
/** Where an entry can be seen: its public URL when it is public, else the dashboard. */
const kvWhere = (publicUrl: string | null, dashboard: string) => (publicUrl ? `public at ${publicUrl}` : `private (the dashboard shows it: ${dashboard})`)

const kvGet = tool({
  name: 'kv_get',
  title: 'Read a key-value entry',
  description: "Reads one entry of the caller's key-value store.",
  readOnly: true,
  input: { key: kvLookupKey },
  solutions: () => ({ KV_KEY_NOT_FOUND: 'kv_list lists the keys the store holds (prefix narrows it)' }),
  async run(s, ctx, a) {
    const e = await s.kv.get(ctx.user, a.key)
    const url = e.is_public ? kvPublicUrl(ctx, e.key) : null
    const dashboard = dashboardUrl(ctx, 'kv')
    const counter = kvCounterUrl(ctx, e)
    return {
      summary: `${e.key} = ${JSON.stringify(e.value).slice(0, 500)} (version ${e.version}); ${kvWhere(url, dashboard)}${counter ? `; visitors add 1 with POST ${counter}` : ''}`,
      data: { entry: e, public_url: url, dashboard_url: dashboard, ...(counter ? { public_incr_url: counter } : {}) },
    }
  },
})

const kvSet = tool({
  name: 'kv_set',
  title: 'Write a key-value entry',
  description: `Creates or replaces an entry of the caller's key-value store. A public entry can be read by anyone (pages, scripts) at the URL in the answer. An entry's JSON text is at most the account's entry size (kv_list's quota.max_entry_bytes, 65536 bytes by default; never over ${MAX_INLINE_BYTES} bytes here).`,
  readOnly: false,
  idempotent: true,
  input: {
    key: kvKey,
    value: z
      .unknown()
      .optional()
      .describe(
        'Any JSON value (json), a string (text) or a number (number). Omit it to change only is_public, public_incr or ttl of an existing entry, its value and type kept (a counter keeps its count)',
      ),
    data_type: z.enum(['json', 'text', 'number']).optional().describe('json when the entry is created; an update keeps the type when omitted'),
    is_public: z.boolean().optional().describe('Readable without a key at the public URL (false when the entry is created; an update keeps it when omitted)'),
    public_incr: z
      .boolean()
      .optional()
      .describe(
        "A public counter: anyone may add 1 or -1 without a key at the answer's public_incr_url, see kv_incr (false when created; kept when omitted). Only a number entry: a number value with data_type omitted is stored as data_type number",
      ),
    ttl: kvTtl,
    expected_version: z.number().int().nonnegative().optional().describe('Write only if the entry is at this version (0: only if absent)'),
  },
  solutions: (a) =>
    a.value === undefined ? { KV_KEY_NOT_FOUND: `kv_set {key: ${JSON.stringify(a.key)}, value: ...} creates it (kv_list lists the keys the store holds)` } : {},
  async run(s, ctx, a) {
    if (a.value === undefined) return kvSetFlags(s, ctx, a)
    // checked without recursion first: JSON.stringify of a value nested 100,000 deep overflows the stack
    checkJsonValue(a.value)
    // as the REST store's body limit answers: the account's entry size when that is the smaller
    if (Buffer.byteLength(JSON.stringify(a.value ?? null)) > MAX_INLINE_BYTES) {
      const limit = quotaOf(ctx.user.limits, 'kv_entry_bytes')
      if (limit < MAX_INLINE_BYTES) throw new AppError('KV_ENTRY_TOO_LARGE', { params: { limit } })
      throw payloadTooLarge('value is', 'store less in one entry')
    }
    // the store's compare-and-swap field is `version`: an unknown field would be ignored
    const { expected_version, ...entry } = a
    const dataType = counterType(a)
    const r = await s.kv.put(ctx.user, {
      ...entry,
      ...(dataType === undefined ? {} : { data_type: dataType }),
      ...(expected_version === undefined ? {} : { version: expected_version }),
    })
    const url = r.entry.is_public ? kvPublicUrl(ctx, r.entry.key) : null
    const counter = kvCounterUrl(ctx, r.entry)
    return {
      summary: `${r.created ? 'Created' : 'Updated'} ${r.entry.key} (version ${r.entry.version})${url ? `; public at ${url}` : ''}${counter ? `; visitors add 1 with POST ${counter}` : ''}`,
      data: { created: r.created, entry: r.entry, public_url: url, ...(counter ? { public_incr_url: counter } : {}) },
    }
  },
})

/** How often kv_set without a value reads and writes again when a write (a visitor's increment) came between. */
const FLAGS_ATTEMPTS = 5

/**
 * kv_set without `value` (326): the entry's flags (is_public, public_incr) and ttl
 * change, its value, type and tags stay. The REST store has no such write, so this is its
 * compare-and-swap: the entry is read and written back at the version read, again when an
 * increment came between, so no count is lost; with expected_version, that version only.
 */
async function kvSetFlags(
  s: McpServices,
  ctx: ToolContext,
  a: { key: string; data_type?: string; is_public?: boolean; public_incr?: boolean; ttl?: number; expected_version?: number },
): Promise<ToolOutput> {
  if (a.data_type !== undefined) throw bad('argument "data_type": changing the type needs a value: send "value" too')
  if (a.is_public === undefined && a.public_incr === undefined && a.ttl === undefined)
    throw bad('argument "value" is required, unless is_public, public_incr or ttl is given to change on an existing entry')
  for (let attempt = 1; ; attempt++) {
    const e = await s.kv.get(ctx.user, a.key)
    if (a.public_incr === true && e.data_type !== 'number')
      throw bad(
        `argument "public_incr": a public counter is a number entry, and ${a.key} is a ${e.data_type} entry: kv_set it with a number value (e.g. "value": 0) and "public_incr": true`,
      )
    try {
      const r = await s.kv.put(ctx.user, {
        key: e.key,
        value: e.value,
        data_type: e.data_type,
        ...(a.is_public === undefined ? {} : { is_public: a.is_public }),
        ...(a.public_incr === undefined ? {} : { public_incr: a.public_incr }),
        ...(a.ttl === undefined ? {} : { ttl: a.ttl }),
        version: a.expected_version ?? e.version,
      })
      const url = r.entry.is_public ? kvPublicUrl(ctx, r.entry.key) : null
      const counter = kvCounterUrl(ctx, r.entry)
      return {
        summary: `Updated ${r.entry.key} (version ${r.entry.version}), its value kept: ${JSON.stringify(r.entry.value).slice(0, 200)}; ${kvWhere(url, dashboardUrl(ctx, 'kv'))}${counter ? `; visitors add 1 with POST ${counter}` : ''}`,
        data: { created: false, entry: r.entry, public_url: url, ...(counter ? { public_incr_url: counter } : {}) },
      }
    } catch (err) {
      // an increment between the read and the write: read the new count and write again
      if (a.expected_version !== undefined || attempt >= FLAGS_ATTEMPTS || !isAppError(err) || err.key !== 'VERSION_CONFLICT') throw err
    }
  }
}

const kvIncr = tool({
  name: 'kv_incr',
  title: 'Add to a counter',
  description:
    "Atomically adds to a number entry (a missing entry starts at 0). Like every write it needs the caller's key, which a hosted page must not carry (deploy_files refuses one, 1444). For a page that counts its visits or has a like button, make the entry a public counter (public_incr: true): the page then adds 1 (or -1) without a key with `fetch(public_incr_url, {method: 'POST'})` and reads the new value in the answer's data.value. Other visitor input goes through a form (create_form).",
  readOnly: false,
  input: {
    key: kvKey,
    by: z.number().optional().describe('Amount to add, default 1 (may be negative or fractional)'),
    ttl: kvTtl,
    public_incr: z
      .boolean()
      .optional()
      .describe('A public counter: anyone may add 1 or -1 without a key at public_incr_url (false when created; kept when omitted)'),
    is_public: z
      .boolean()
      .optional()
      .describe('Readable without a key at the public URL, so a page can show the count without adding to it (false when created; kept when omitted)'),
  },
  async run(s, ctx, a) {
    const { is_public, ...incr } = a
    let r = await s.kv.incr(ctx.user, incr)
    // the store's increment takes no is_public: a second write sets it, the count kept (kv_set without value)
    if (is_public !== undefined && r.entry.is_public !== is_public) {
      const flagged = await kvSetFlags(s, ctx, { key: r.entry.key, is_public })
      r = { created: r.created, entry: flagged.data.entry as typeof r.entry }
    }
    const url = r.entry.is_public ? kvPublicUrl(ctx, r.entry.key) : null
    const dashboard = dashboardUrl(ctx, 'kv')
    const counter = kvCounterUrl(ctx, r.entry)
    // a public counter that is not public: its page can add to it but not read it (1604)
    const unreadable =
      counter && !url
        ? `; its public URL answers 404 (1604) until it is public: kv_set {key: ${JSON.stringify(r.entry.key)}, is_public: true} makes it readable, the count kept`
        : ''
    return {
      summary: `${r.entry.key} = ${String(r.entry.value)}; ${kvWhere(url, dashboard)}${counter ? `; visitors add 1 with POST ${counter}` : ''}${unreadable}`,
      data: { created: r.created, entry: r.entry, public_url: url, dashboard_url: dashboard, ...(counter ? { public_incr_url: counter } : {}) },
    }
  },
})

/**
 * kv_list shows a value whose JSON text is at most this many bytes; a longer one is left out
 * (value null, value_omitted true) for kv_get to read, so a page of 100 entries of the store's
 * largest size stays within what a client hands its model (decisions 213, 315).
 */
export const KV_LIST_VALUE_BYTES = 512

const kvList = tool({
  name: 'kv_list',
  title: 'List key-value entries',
  description: `Lists the caller's key-value entries, by key, a page at a time; with prefix, only keys starting with it (exact, case-sensitive). A value over ${KV_LIST_VALUE_BYTES} bytes of JSON is left out (value null, value_omitted true): kv_get reads it.`,
  readOnly: true,
  input: {
    page: pageArg,
    per_page: z.number().int().min(1).max(100).optional().describe('Entries per page (default 50, at most 100)'),
    prefix: z.string().optional().describe('Only keys starting with it (exact, case-sensitive)'),
  },
  async run(s, ctx, a) {
    const q: Record<string, unknown> = {}
    if (a.page !== undefined) q.page = String(a.page)
    if (a.per_page !== undefined) q.per_page = String(a.per_page)
    if (a.prefix !== undefined) q.prefix = a.prefix
    const r = await s.kv.list(ctx.user, q)
    const items = r.items.map((e) => ({
      ...e,
      ...(e.size > KV_LIST_VALUE_BYTES ? { value: null, value_omitted: true as const } : {}),
      public_url: e.is_public ? kvPublicUrl(ctx, e.key) : null,
    }))
    const dashboard = dashboardUrl(ctx, 'kv')
    const keys = items.map((e) => (e.public_url ? `${e.key} (public at ${e.public_url})` : e.key))
    const omitted = items.filter((e) => 'value_omitted' in e)
    const left =
      omitted.length === 0
        ? ''
        : `${omitted.length} value(s) over ${KV_LIST_VALUE_BYTES} bytes left out (value_omitted): kv_get {key: ${JSON.stringify(omitted[0].key)}} reads one\n`
    const more = (n: number) =>
      `kv_list {${[`page: ${n}`, a.per_page ? `per_page: ${a.per_page}` : '', a.prefix !== undefined ? `prefix: ${JSON.stringify(a.prefix)}` : ''].filter(Boolean).join(', ')}}`
    const paging = pageOf(r.total, r.page, r.per_page, 'entries', more)
    return {
      summary: `${r.total} entries${keys.length ? `: ${keys.join(', ')}` : ''}\n${paging.note ? `${paging.note.slice(2)}\n` : ''}${left}The dashboard shows them: ${dashboard}`,
      data: { ...r, items, dashboard_url: dashboard },
    }
  },
})

const kvDelete = tool({
  name: 'kv_delete',
  title: 'Delete a key-value entry',
  description:
    "Deletes one entry of the caller's key-value store (any key kv_list shows); its public URL answers 404 at once. A key the store does not hold is 1604.",
  readOnly: false,
  destructive: true,
  idempotent: true,
  input: { key: kvLookupKey },
  solutions: () => ({ KV_KEY_NOT_FOUND: 'kv_list lists the keys the store holds (prefix narrows it)' }),
  async run(s, ctx, a) {
    await s.kv.remove(ctx.user, a.key)
    return { summary: `Deleted ${a.key}.`, data: { key: a.key } }
  },
})

const formName = z.string().min(1).max(100).describe('The name the dashboard and list_submissions show')
/** A form's settings, as create_form and update_form take them (the forms service checks each). */
const formSettings = {
  form_slug: z.string().optional().describe('3-64 characters A-Z a-z 0-9 _ -, unique; generated when omitted'),
  fields_config: z
    .array(
      z
        .object({
          name: z.string().describe('1-64 letters, digits, "_", "." or "-", starting with a letter or digit'),
          label: z.string().optional(),
          type: z.enum(FIELD_TYPES).optional().describe('default text'),
          required: z.boolean().optional(),
          options: z.array(z.string()).optional().describe('The choices of a select (required there) or checkbox field'),
        })
        .strict(),
    )
    .max(50)
    .optional()
    .describe('Fields to accept (empty: any field names)'),
  allowed_origins: z.array(z.string()).max(20).optional().describe('Origins allowed to submit (empty: any)'),
  redirect_url: z
    .string()
    .optional()
    .describe(
      "Absolute http(s) URL a visitor's browser goes to after a submission, e.g. the page's own URL, which deploy_files answers (empty: none); without one, a short thank-you page of the service's",
    ),
}

const createForm = tool({
  name: 'create_form',
  title: 'Create a form',
  description:
    'Creates a form that pages can post to (JSON, form-encoded or multipart) and returns its submit_url, e.g. <form method="post" action="{submit_url}">, and its id, which list_submissions takes as form_id. update_form changes its settings later (a redirect_url to a page deployed after it).',
  readOnly: false,
  input: { form_name: formName, ...formSettings },
  async run(s, ctx, a) {
    const f = formView(await s.forms.create(ctx.user, a), ctx.serviceOrigin)
    return { summary: `Created form ${f.form_name}; submit to ${f.submit_url}`, data: { form: f } }
  },
})

const formIdArg = idArg("The form's id (create_form's form.id; not its slug)")
/** A form_id that names no form of the caller's: the forms list gives the ids. */
const formSolutions = () => ({ FORM_NOT_FOUND: 'list_submissions without form_id lists your forms with their ids (form_id is the id, not the slug)' })

const updateForm = tool({
  name: 'update_form',
  title: 'Change a form',
  description:
    "Changes a form's settings (form_id: create_form's form.id, or list_submissions'); the settings not given stay. A new form_slug changes its submit_url (the answer gives it): pages posting to the old one must change too. is_active false stops it taking submissions (1612) until set true again.",
  readOnly: false,
  idempotent: true,
  input: {
    form_id: formIdArg,
    form_name: formName.optional(),
    ...formSettings,
    is_active: z.boolean().optional().describe('false: the form refuses submissions'),
  },
  solutions: formSolutions,
  async run(s, ctx, a) {
    const { form_id, ...settings } = a
    const f = formView(await s.forms.update(ctx.user, form_id, settings), ctx.serviceOrigin)
    return { summary: `Updated form ${f.form_name}; submit to ${f.submit_url}`, data: { form: f } }
  },
})

/**
 * list_submissions shows a field value whose JSON text is at most this many bytes, as kv_list
 * shows a value (315); a longer one is null in `data` and named in `omitted_fields`.
 */
export const SUBMISSION_FIELD_BYTES = 512
/**
 * The JSON text of the `data` one page of list_submissions shows at most: past it, a
 * submission's data is {} with `data_omitted` (325), so a page of 100 submissions
 * with many fields stays within what a client hands its model; get_submission reads one whole.
 */
export const SUBMISSIONS_PAGE_DATA_BYTES = 32768

/** A page of submissions with long values and what passes the page's budget left out (get_submission reads them). */
function boundSubmissions<T extends { id: string; data: Record<string, unknown> }>(subs: T[]) {
  let spent = 0
  return subs.map((sub) => {
    const omitted: string[] = []
    const data: Record<string, unknown> = {}
    for (const [field, value] of Object.entries(sub.data)) {
      if (Buffer.byteLength(JSON.stringify(value) ?? 'null') > SUBMISSION_FIELD_BYTES) {
        data[field] = null
        omitted.push(field)
      } else data[field] = value
    }
    const size = Buffer.byteLength(JSON.stringify(data))
    if (spent + size > SUBMISSIONS_PAGE_DATA_BYTES) return { ...sub, data: {}, data_omitted: true as const }
    spent += size
    return { ...sub, data, ...(omitted.length ? { omitted_fields: omitted } : {}) }
  })
}

const listSubmissions = tool({
  name: 'list_submissions',
  title: 'Read form submissions',
  description: `Lists the caller's forms, or with form_id one form's submissions, newest first (spam is flagged, not hidden). A field value over ${SUBMISSION_FIELD_BYTES} bytes of JSON is left out (null, named in omitted_fields), and past ${SUBMISSIONS_PAGE_DATA_BYTES} bytes of data on a page a submission's data is {} (data_omitted): get_submission reads one whole.`,
  readOnly: true,
  input: {
    form_id: formIdArg.optional().describe("The form's id (create_form's form.id; not its slug); omit to list the forms with their ids"),
    page: pageArg.describe('With form_id: page number, from 1 (default 1)'),
    per_page: z.number().int().min(1).max(100).optional().describe('With form_id: submissions per page (default 20, at most 100)'),
    is_spam: z.boolean().optional().describe('Only spam (true) or only not spam (false)'),
  },
  solutions: formSolutions,
  async run(s, ctx, a) {
    const dashboard = dashboardUrl(ctx, 'forms')
    if (a.form_id === undefined) {
      const r = await s.forms.list(ctx.user)
      const forms = r.forms.map(({ row, stats }) => ({ ...formView(row, ctx.serviceOrigin), ...stats }))
      const lines = forms.map((f) => `${f.form_name} (id ${f.id}): ${f.submission_count} submissions; submit to ${f.submit_url}`)
      return {
        summary: forms.length ? `${lines.join('\n')}\nThe dashboard shows the submissions: ${dashboard}` : 'No forms yet.',
        data: { forms, dashboard_url: dashboard },
      }
    }
    const q: Record<string, unknown> = {}
    if (a.page !== undefined) q.page = String(a.page)
    if (a.per_page !== undefined) q.per_page = String(a.per_page)
    if (a.is_spam !== undefined) q.is_spam = String(a.is_spam)
    const r = await s.forms.data(ctx.user, a.form_id, q, ctx.serviceOrigin)
    const api = `${ctx.serviceOrigin}/svc_api/forms/data/${encodeURIComponent(r.form_id)}`
    const submissions = boundSubmissions(r.submissions)
    const cut = submissions.filter((x) => 'omitted_fields' in x || 'data_omitted' in x)
    const left =
      cut.length === 0
        ? ''
        : `\n${cut.length} submission(s) with values left out (omitted_fields, data_omitted): get_submission {submission_id: ${JSON.stringify(cut[0].id)}} reads one whole`
    const more = (n: number) =>
      `list_submissions {${[`form_id: ${JSON.stringify(a.form_id)}`, `page: ${n}`, a.per_page ? `per_page: ${a.per_page}` : '', a.is_spam !== undefined ? `is_spam: ${a.is_spam}` : ''].filter(Boolean).join(', ')}}`
    const paging = pageOf(r.total, r.page, r.per_page, 'submissions', more)
    return {
      summary: `${r.total} submissions${paging.note}. The dashboard shows them: ${dashboard} (API, with the key: ${api})${left}`,
      data: { ...r, submissions, submissions_url: api, dashboard_url: dashboard },
    }
  },
})

const getSubmission = tool({
  name: 'get_submission',
  title: 'Read one form submission',
  description:
    "Reads one submission of the caller's forms whole (submission_id: an id list_submissions {form_id} shows), with every field's full value, which list_submissions leaves out when long, and its files' download URLs.",
  readOnly: true,
  input: { submission_id: idArg("The submission's id, as list_submissions {form_id} shows it") },
  solutions: () => ({ RESOURCE_NOT_FOUND: "list_submissions {form_id} lists a form's submissions with their ids" }),
  async run(s, ctx, a) {
    const r = await s.forms.submission(ctx.user, a.submission_id, ctx.serviceOrigin)
    const fields = Object.keys(r.submission.data)
    return {
      summary: `Submission ${r.submission.id} of form ${r.form_id} (${utcTime(r.submission.created_at)}${r.submission.is_spam ? ', spam' : ''}): ${fields.length} field(s)${r.submission.files.length ? `, ${r.submission.files.length} file(s)` : ''}; every value is in the JSON below`,
      data: { form_id: r.form_id, submission: r.submission },
    }
  },
})

const deleteForm = tool({
  name: 'delete_form',
  title: 'Delete a form',
  description:
    "Deletes a form and all of its submissions (form_id: create_form's form.id, or list_submissions'); its submit_url then refuses posts (1611). Cannot be undone.",
  readOnly: false,
  destructive: true,
  idempotent: true,
  input: { form_id: formIdArg },
  solutions: formSolutions,
  async run(s, ctx, a) {
    await s.forms.remove(ctx.user, a.form_id)
    return { summary: `Deleted form ${a.form_id} and all its submissions.`, data: { form_id: a.form_id } }
  },
})

const deleteSubmission = tool({
  name: 'delete_submission',
  title: 'Delete a form submission',
  description:
    "Deletes one submission of the caller's forms with its files (submission_id: an id list_submissions {form_id} shows), as the dashboard's Delete does; its files' bytes leave the form_file_bytes quota. The month's submission count is not given back. Cannot be undone.",
  readOnly: false,
  destructive: true,
  idempotent: true,
  input: { submission_id: idArg("The submission's id, as list_submissions {form_id} shows it") },
  solutions: () => ({ RESOURCE_NOT_FOUND: "list_submissions {form_id} lists a form's submissions with their ids" }),
  async run(s, ctx, a) {
    const r = await s.forms.removeSubmission(ctx.user, a.submission_id)
    return { summary: `Deleted submission ${r.id} of form ${r.form_id}.`, data: { submission_id: r.id, form_id: r.form_id } }
  },
})

const dataInput = {
  content: z.string().describe('UTF-8 text or JSON'),
  content_type: z.string().optional().describe('application/json (default), text/plain, text/csv, ...'),
}

async function needEntitlement(ctx: ToolContext, feature: string) {
  if (!(await ctx.entitled(feature))) throw new AppError('ENTITLEMENT_REQUIRED')
}

/** `route`: the REST route that takes the same upload as multipart, with no inline limit. */
function dataUpload(ctx: ToolContext, content: string, type: string | undefined, route: string) {
  const bytes = encodeText(content)
  if (bytes.length > MAX_INLINE_BYTES)
    throw payloadTooLarge('content is', `upload larger data files in the dashboard (${dashboardUrl(ctx, 'data')}) or with ${route} (multipart)`)
  const contentType = normalizeContentType(type ?? 'application/json')
  checkContent(bytes, contentType)
  return { bytes, contentType }
}

const createData = tool({
  name: 'create_data',
  title: 'Host a data file',
  description: `Creates a hosted data file (JSON, CSV, text ...) with a public raw URL pages can fetch. At most ${MAX_INLINE_BYTES} bytes here (and the account's size per version). Needs the hosted-data entitlement.`,
  readOnly: false,
  input: {
    display_name: z.string().min(1).max(255).describe('The name the dashboard and list_data show, e.g. "scores.json"'),
    description: z.string().max(1000).optional().describe('A note shown in the dashboard'),
    ...dataInput,
  },
  async run(s, ctx, a) {
    await needEntitlement(ctx, 'hosted-data')
    const upload = dataUpload(ctx, a.content, a.content_type, 'POST /api/hosted-data/files')
    const r = await s.data.create(ctx.user, { displayName: checkDisplayName(a.display_name), description: a.description ?? '', upload }, ctx.contentOrigin)
    return { summary: `Created ${r.file.display_name}: ${r.file.public_url}`, data: { file: r.file } }
  },
})

const listData = tool({
  name: 'list_data',
  title: 'List data files',
  description:
    "Lists the caller's hosted data files, most recently updated first: each one's file_id (what update_data takes), name, type, versions and public URL. Needs the hosted-data entitlement.",
  readOnly: true,
  input: {},
  async run(s, ctx) {
    await needEntitlement(ctx, 'hosted-data')
    const r = await s.data.list(ctx.user, ctx.contentOrigin)
    const lines = r.files.map(
      (f) => `${f.display_name} (${f.content_type}, version ${f.default_version} of ${f.version_count}): ${f.public_url} (file_id ${f.id})`,
    )
    return { summary: lines.length ? lines.join('\n') : 'No data files yet; create_data makes one.', data: { files: r.files, total: r.total } }
  },
})

const dataIdArg = idArg("The data file's id: create_data's file.id, or list_data's file_id")

const updateData = tool({
  name: 'update_data',
  title: 'Update a data file',
  description: `Uploads a new version of a hosted data file (file_id: create_data's file.id, or list_data's) and makes it the one its public URL serves. At most ${MAX_INLINE_BYTES} bytes here (and the account's size per version). Needs the hosted-data entitlement.`,
  readOnly: false,
  input: { file_id: dataIdArg, ...dataInput },
  async run(s, ctx, a) {
    await needEntitlement(ctx, 'hosted-data')
    const type = a.content_type ?? (await s.data.currentType(ctx.user, a.file_id))
    const r = await s.data.addVersion(
      ctx.user,
      a.file_id,
      { upload: dataUpload(ctx, a.content, type, `POST /api/hosted-data/files/${encodeURIComponent(a.file_id)}/versions`), setDefault: true },
      ctx.contentOrigin,
    )
    return { summary: `${r.file.display_name} is now version ${r.version.version}: ${r.file.public_url}`, data: { file: r.file, version: r.version } }
  },
})

const uploadImage = tool({
  name: 'upload_image',
  title: 'Upload an image',
  description: `Uploads one image (PNG, JPEG, GIF, WebP, AVIF, SVG) given as base64 and returns its public URL and public_token (delete_image takes it). At most ${MAX_INLINE_BYTES} bytes decoded here (and the account's image size limit); larger images through the dashboard. Needs the image-host entitlement.`,
  readOnly: false,
  input: {
    base64: z.string().min(1).describe('The image bytes, base64-encoded (a data: URL prefix is accepted)'),
    file_name: z.string().max(255).optional().describe('The name list_images shows (default "image")'),
    remark: z.string().max(500).optional().describe('A note shown in the dashboard'),
  },
  async run(s, ctx, a) {
    await needEntitlement(ctx, 'image-host')
    const bytes = decodeBase64(a.base64, 'base64')
    if (bytes.length > MAX_INLINE_BYTES)
      throw payloadTooLarge(
        'the image is',
        `upload larger images in the dashboard (${dashboardUrl(ctx, 'images')}) or with POST /api/image-host/upload (multipart)`,
      )
    async function* one(): AsyncGenerator<IncomingFile> {
      yield {
        fileName: a.file_name ?? 'image',
        async read(max: number) {
          if (bytes.length > max) throw new AppError('FILE_TOO_LARGE', { params: { limit: max } })
          return bytes
        },
      }
    }
    const [img] = await s.images.upload(ctx.user, one(), () => ({ remark: a.remark, keepMetadata: false }), ctx.contentOrigin)
    // an SVG has no pixel size (width and height null)
    const size = img.width === null || img.height === null ? '' : ` (${img.width}x${img.height})`
    return { summary: `Uploaded ${img.file_name}${size}: ${img.public_url}`, data: { image: img } }
  },
})

const imageTokenSolutions = () => ({ RESOURCE_NOT_FOUND: 'list_images lists your images with their public_token' })

const listImages = tool({
  name: 'list_images',
  title: 'List hosted images',
  description:
    "Lists the caller's hosted images, newest first, 50 a page by default (page and per_page, at most 100): each one's public_token (what delete_image takes), file name, size and public URL. Needs the image-host entitlement.",
  readOnly: true,
  input: { page: pageArg, per_page: z.number().int().min(1).max(100).optional().describe('Images per page (default 50, at most 100)') },
  async run(s, ctx, a) {
    await needEntitlement(ctx, 'image-host')
    const q: Record<string, unknown> = {}
    if (a.page !== undefined) q.page = String(a.page)
    if (a.per_page !== undefined) q.per_page = String(a.per_page)
    // the REST list's own paging rule (defaults, bounds and codes)
    const page = parsePage(q, { perPage: 50, maxPerPage: 100 })
    const r = await s.images.list(ctx.user, page, ctx.contentOrigin)
    const paging = pageOf(r.total, page.page, page.perPage, 'images', (n) => `list_images {page: ${n}${a.per_page ? `, per_page: ${page.perPage}` : ''}}`)
    const lines = r.images.map((i) => `${i.file_name} (${i.size} bytes): ${i.public_url} (public_token ${i.public_token})`)
    const summary = r.total === 0 ? 'No images yet; upload_image uploads one.' : `${r.total} images${lines.length ? `\n${lines.join('\n')}` : ''}`
    return {
      summary: paging.note ? `${summary}\n${paging.note.slice(2)}` : summary,
      data: {
        images: r.images,
        total: r.total,
        page: page.page,
        per_page: page.perPage,
        total_pages: paging.totalPages,
        dashboard_url: dashboardUrl(ctx, 'images'),
      },
    }
  },
})

const deleteImage = tool({
  name: 'delete_image',
  title: 'Delete a hosted image',
  description:
    "Deletes one hosted image (public_token: upload_image's image.public_token, or list_images'); its public URL answers 404 at once. A locked image is refused (1423). Cannot be undone. Needs the image-host entitlement.",
  readOnly: false,
  destructive: true,
  idempotent: true,
  input: { public_token: idArg("The image's public_token, as upload_image and list_images give it") },
  solutions: imageTokenSolutions,
  async run(s, ctx, a) {
    await needEntitlement(ctx, 'image-host')
    await s.images.remove(ctx.user, a.public_token)
    return { summary: `Deleted image ${a.public_token}.`, data: { public_token: a.public_token } }
  },
})

const deleteData = tool({
  name: 'delete_data',
  title: 'Delete a data file or one of its versions',
  description:
    "Deletes a hosted data file with all of its versions (file_id: create_data's file.id, or list_data's); its public URL answers 404 at once. With version, deletes that version only (its ?v= URL answers 404) and answers the versions left; the default version, which the public URL serves, cannot be deleted (update_data makes a new one the default). A locked file is refused (1423). Cannot be undone. Needs the hosted-data entitlement.",
  readOnly: false,
  destructive: true,
  idempotent: true,
  input: {
    file_id: dataIdArg,
    version: z
      .number()
      .int()
      .positive()
      .max(MAX_VERSION)
      .optional()
      .describe("Only this version (update_data's version.version); omit to delete the whole file"),
  },
  solutions: () => ({
    RESOURCE_NOT_FOUND: 'list_data lists your data files with their file_id',
    INVALID_PARAMETER:
      "list_data gives each file's default_version and latest_version; the default version cannot be deleted (update_data makes a new one the default)",
  }),
  async run(s, ctx, a) {
    await needEntitlement(ctx, 'hosted-data')
    if (a.version === undefined) {
      await s.data.remove(ctx.user, a.file_id)
      return { summary: `Deleted data file ${a.file_id} and all its versions.`, data: { file_id: a.file_id } }
    }
    const r = await s.data.removeVersion(ctx.user, a.file_id, a.version, ctx.contentOrigin)
    const left = r.file.versions.map((v) => `${v.version}${v.is_default ? ' (default)' : ''}`).join(', ')
    return {
      summary: `Deleted version ${a.version} of ${r.file.display_name}; versions left: ${left}. ${r.file.public_url} still serves version ${r.file.default_version}.`,
      data: { file_id: a.file_id, version: a.version, file: r.file },
    }
  },
})

/**
 * A project or page name as visitor access takes it (the first path segment after the user):
 * what the REST route takes, at most 255 bytes (the service checks) and without NUL.
 */
const accessNameArg = z
  .string()
  .min(1)
  .max(MAX_SEGMENT_BYTES)
  .regex(/^[^\u0000]*$/, 'must not contain a NUL character (U+0000)')
  .describe('A project name, or a page by its file name (about.html; ".html" is added when only that names one, as publish_html adds it)')

/**
 * The name a visitor setting is stored under, found as delete_site finds a site: a project of
 * that name, else the page of that exact name, else the page with ".html" added (publish_html
 * names "landing" landing.html). A name that is none of them is passed on unchanged, for the
 * service to refuse (1346).
 */
async function accessTarget(s: McpServices, ctx: ToolContext, name: string): Promise<string> {
  if (name.includes('/') || /\.html?$/i.test(name)) return name
  if ((await s.folders.projects(ctx.user, ctx.contentOrigin)).some((p) => p.name === name)) return name
  if ((await s.files.one(ctx.user, name, ctx.contentOrigin)) !== null) return name
  return (await s.files.one(ctx.user, `${name}.html`, ctx.contentOrigin)) !== null ? `${name}.html` : name
}

/** One visitor setting in a line; never the password, which the service keeps only hashed. */
const accessLine = (a: { name: string; password: boolean; expires_at: string | null; expired: boolean }) =>
  `${a.name}: ${a.password ? 'visitors need a password' : 'no password'}, ${a.expires_at === null ? 'no expiry' : `${a.expired ? 'expired' : 'expires'} ${a.expires_at}`}`

const accessSolutions = () => ({
  SITE_TARGET_NOT_FOUND: 'list_sites lists your projects and pages (a page by its file name, e.g. about.html)',
  ACCESS_NOT_FOUND: 'list_access lists the names with a visitor password or an expiry',
})

const listAccess = tool({
  name: 'list_access',
  title: 'List visitor passwords and expiries',
  description:
    "Lists the caller's projects and pages that have a visitor password or an expiry: for each, whether visitors need a password (never the password itself), when it expires and whether it has. set_access changes one, clear_access opens one to everyone again.",
  readOnly: true,
  input: {},
  async run(s, ctx) {
    const access = (await s.domains.listAccess(ctx.user)).map((a) => s.domains.accessView(a))
    const dashboard = dashboardUrl(ctx, 'domains')
    return {
      summary: access.length
        ? `${access.map(accessLine).join('\n')}\nThe dashboard shows them: ${dashboard}`
        : 'No project or page has a visitor password or an expiry; set_access sets one.',
      data: { access, dashboard_url: dashboard },
    }
  },
})

const setAccess = tool({
  name: 'set_access',
  title: 'Set a visitor password or an expiry',
  description:
    'Protects a project or a single page: with password, visitors must enter it (a form in a browser, HTTP Basic for scripts) on every URL of that name; with expires_at, from then on it answers 410 to everyone. Send either or both; null removes one, an omitted one stays. A new password signs out every visitor who entered the old one. The password is stored only as a hash and never shown again, in this answer or list_access: tell it to the people who should see the site. clear_access removes both.',
  readOnly: false,
  // a repeated call with a password signs its visitors out again (a new secret each time)
  idempotent: false,
  input: {
    name: accessNameArg,
    password: z
      .string()
      .min(4)
      .max(MAX_PASSWORD_BYTES)
      .nullable()
      .optional()
      .describe(`The visitor password, 4 characters to ${MAX_PASSWORD_BYTES} bytes; null removes it; omit to keep it`),
    expires_at: z
      .union([z.string().max(64), z.number().int().nonnegative()])
      .nullable()
      .optional()
      .describe('When the name stops answering (410): ISO 8601 with a zone (2026-12-31T23:00:00Z) or epoch milliseconds; null removes it; omit to keep it'),
  },
  solutions: accessSolutions,
  async run(s, ctx, a) {
    const name = await accessTarget(s, ctx, a.name)
    const body: Record<string, unknown> = {}
    if (a.password !== undefined) body.password = a.password
    if (a.expires_at !== undefined) body.expires_at = a.expires_at
    const access = s.domains.accessView(await s.domains.setAccess(ctx.user, name, body))
    return { summary: `Saved. ${accessLine(access)}.`, data: { access } }
  },
})

const clearAccess = tool({
  name: 'clear_access',
  title: 'Open a project or page to everyone',
  description:
    'Removes the visitor password and the expiry of a project or page (a name list_access shows): it answers everyone again at once. A name without a setting is 1348.',
  readOnly: false,
  destructive: true,
  idempotent: true,
  input: { name: accessNameArg },
  solutions: accessSolutions,
  async run(s, ctx, a) {
    // the name as stored, else with ".html" added when only that one has a setting
    const names = new Set((await s.domains.listAccess(ctx.user)).map((r) => r.name))
    const given = a.name.normalize('NFC')
    const name = !names.has(given) && !/\.html?$/i.test(given) && names.has(`${given}.html`) ? `${given}.html` : a.name
    await s.domains.removeAccess(ctx.user, name)
    return { summary: `${name} is open to everyone again (no password, no expiry).`, data: { name } }
  },
})

const domainArg = z.string().min(1).max(255).describe('A host name such as www.example.com (no scheme, port or path)')
/** The TXT record of a domain, as the dashboard and `svc domain add` show it. */
const txtRecord = (d: DomainView) => `${d.verification.name} TXT "${d.verification.value}"`
const domainSolutions = () => ({
  DOMAIN_NOT_FOUND: 'list_domains lists the domains you added',
  SITE_TARGET_NOT_FOUND: 'list_sites lists your projects; a domain serves a folder project (deploy_files makes one)',
  DOMAIN_LIMIT: 'remove_domain removes a domain you no longer use (list_domains lists them)',
})

const listDomains = tool({
  name: 'list_domains',
  title: 'List custom domains',
  description:
    "Lists the caller's custom domains: the project each serves, whether it is verified (serving) or still waits for its DNS TXT record (given), and how many the account may add.",
  readOnly: true,
  input: {},
  async run(s, ctx) {
    const domains = (await s.domains.list(ctx.user)).map(domainView)
    const dashboard = dashboardUrl(ctx, 'domains')
    const lines = domains.map(
      (d) =>
        `${d.domain} -> ${d.project}: ${d.verified ? `verified${d.primary ? ', primary' : ''}, ${d.site_url}` : `${d.lost_at ? 'taken by another account' : 'not verified'}; DNS record: ${txtRecord(d)}`}`,
    )
    return {
      summary: `${domains.length} of ${s.domains.limit} domains${lines.length ? `\n${lines.join('\n')}` : '; add_domain adds one'}\nThe dashboard shows them: ${dashboard}`,
      data: { domains, limit: s.domains.limit, dashboard_url: dashboard },
    }
  },
})

const addDomain = tool({
  name: 'add_domain',
  title: 'Add a custom domain',
  description:
    'Attaches a domain the user controls (www.example.com) to one of their folder projects, unverified: the answer gives the DNS TXT record the user must create (domain.verification) to prove control, and the domain must also point at the service (CNAME or A/AAAA). Once the record exists, verify_domain makes the domain serve the project. Removed and added again, a domain keeps its record.',
  readOnly: false,
  input: { domain: domainArg, project: projectName },
  solutions: domainSolutions,
  async run(s, ctx, a) {
    const { row, heldByOther } = await s.domains.add(ctx.user, { domain: a.domain, project: a.project })
    const d = domainView(row)
    const held = heldByOther ? ' Another account holds it verified: verifying with your record moves it to your project.' : ''
    return {
      summary: `Added ${d.domain} to ${d.project}, not verified yet. Create this DNS record: ${txtRecord(d)}; and point ${d.domain} at the service (CNAME or A/AAAA). Then call verify_domain {domain: "${d.domain}"} (DNS changes may take a few minutes).${held}`,
      data: { domain: d, held_by_other: heldByOther },
    }
  },
})

const verifyDomain = tool({
  name: 'verify_domain',
  title: 'Verify a custom domain',
  description:
    "Looks up the domain's DNS TXT record (the one add_domain and list_domains give) now; when it is there, the domain serves its project from then on (a verified domain stays verified). Refused with 1343 naming the record while it is missing or wrong: DNS changes may take minutes.",
  readOnly: false,
  idempotent: true,
  input: { domain: domainArg },
  solutions: domainSolutions,
  async run(s, ctx, a) {
    const d = domainView(await s.domains.verify(ctx.user, a.domain))
    return {
      summary: `Verified ${d.domain}: it serves ${d.project} at ${d.site_url} while the project is published and the name points at the service.`,
      data: { domain: d },
    }
  },
})

const removeDomain = tool({
  name: 'remove_domain',
  title: 'Remove a custom domain',
  description:
    'Removes a custom domain (a name list_domains shows): it stops serving its project at once. Its TXT record stays valid for this account: adding the domain again needs no DNS change.',
  readOnly: false,
  destructive: true,
  idempotent: true,
  input: { domain: domainArg },
  solutions: domainSolutions,
  async run(s, ctx, a) {
    await s.domains.remove(ctx.user, a.domain)
    const p = parseDomain(a.domain)
    const name = p.ok ? p.name : a.domain
    return { summary: `Removed ${name}: it no longer serves a project.`, data: { domain: name } }
  },
})

/** Every tool. */
export const TOOLS: readonly McpTool[] = [
  publishHtml,
  deployFiles,
  listSites,
  getSite,
  readFile,
  listDeploys,
  rollback,
  promote,
  setUserSite,
  deleteSite,
  deleteFile,
  kvGet,
  kvSet,
  kvIncr,
  kvList,
  kvDelete,
  createForm,
  updateForm,
  listSubmissions,
  getSubmission,
  deleteForm,
  deleteSubmission,
  createData,
  listData,
  updateData,
  uploadImage,
  listImages,
  deleteImage,
  deleteData,
  listAccess,
  setAccess,
  clearAccess,
  listDomains,
  addDomain,
  verifyDomain,
  removeDomain,
]

/** The tools a caller sees: a read-only key gets the read-only ones only. */
export const toolsFor = (readOnly: boolean): readonly McpTool[] => (readOnly ? TOOLS.filter((t) => t.readOnly) : TOOLS)

/** tools/list for a read-only key and for another, each made once: the same for every caller. */
const listings = new Map<boolean, Tool[]>()
export function toolList(readOnly: boolean): Tool[] {
  let list = listings.get(readOnly)
  if (list === undefined) listings.set(readOnly, (list = toolsFor(readOnly).map((t) => t.definition())))
  return list
}

/**
 * Answers tools/list and tools/call for the tools a caller sees. tools/list is the listing
 * made once (toolList): the tools' schemas compacted (compactSchema). tools/call is answered
 * here rather than by the SDK's handler, which checks arguments before a tool runs and answers
 * a bad one as bare text ("MCP error -32602: Input validation error ..."), with no error code.
 * Here a bad argument is a tool result with 1106, a write tool on a read-only key 1440 and an
 * unknown name 1106, each with `isError` and the service's code like every other refusal (the
 * MCP specification puts input validation among the tool execution errors).
 */
export function serveTools(server: McpServer, readOnly: boolean, s: McpServices, ctx: ToolContext): void {
  const tools = toolsFor(readOnly)
  const byName = new Map(tools.map((t) => [t.name, t]))
  server.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: toolList(readOnly) }))
  server.server.setRequestHandler(AnyArgumentsCallSchema, async (req) => {
    const name = req.params.name
    const t = byName.get(name)
    if (t)
      // an unexpected failure is logged and answered as the REST API answers one (1501 with the
      // request id): its text (a database's, a path) is the operator's, not the agent's
      return t.call(s, ctx, callArguments(req.params)).catch((e: unknown) => errorResult(ctx.unexpected(e)))
    if (TOOLS.some((x) => x.name === name)) return errorResult(new AppError('READ_ONLY_KEY'))
    return errorResult(
      new AppError('INVALID_PARAMETER', {
        params: { detail: `unknown tool "${name}"` },
        extra: { details: { info: 'tools/list names the tools this key may call.' } },
      }),
    )
  })
}
