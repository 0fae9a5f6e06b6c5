import * as z from 'zod'

/**
 * What each tool's structured content holds when it succeeds (its `outputSchema`, tools.ts
 * adds `success` and the refusal's fields). Objects the REST API also answers are open
 * (`looseObject`): they list the fields an agent uses next, and may carry more.
 */

const url = z.string()
const maybeUrl = z.string().nullable()
const siteUrl = maybeUrl.describe("On the user's own origin; null when the service has no content domain")
const originUrl = maybeUrl.describe("The root of the project's own origin; null without a content domain")
const openUrl = url.describe('The URL to open')
const dashboardUrl = url.describe('The dashboard page that shows these to the logged-in owner')
const count = z.number().int().nonnegative()
const publicIncrUrl = url.optional().describe('Only on a public counter: where a page adds 1 without a key (POST)')

const paging = {
  page: z.number().int().positive(),
  per_page: z.number().int().positive(),
  total_pages: count,
}

const page = z.looseObject({ file_name: z.string(), file_size: count, url, site_url: siteUrl.optional() })
const project = z.looseObject({
  name: z.string(),
  is_published: z.boolean(),
  file_count: count,
  website_url: url,
  site_url: siteUrl.optional(),
  origin_url: originUrl.optional(),
})
const projectFile = z.looseObject({ path: z.string(), size: count })
const deploy = z.looseObject({
  id: z.string().describe('What rollback and promote take as deploy_id'),
  created_at: z.string(),
  file_count: count,
  bytes: count,
  is_live: z.boolean(),
  is_preview: z.boolean(),
  is_partial: z.boolean(),
})
const entry = z.looseObject({
  key: z.string(),
  value: z.unknown(),
  data_type: z.string().describe('json, text or number'),
  is_public: z.boolean(),
  version: z.number().int(),
  expires_at: z.string().nullable(),
})
const form = z.looseObject({
  id: z.string().describe('What list_submissions and delete_form take as form_id'),
  form_name: z.string(),
  form_slug: z.string(),
  submit_url: url.describe('Where a page posts the form (<form method="post" action="...">)'),
  redirect_url: z.string().nullable(),
  is_active: z.boolean(),
  fields_config: z.array(z.looseObject({ name: z.string() })),
})
const submission = z.looseObject({
  id: z.string().describe('What delete_submission takes as submission_id'),
  data: z.record(z.string(), z.unknown()).describe('The fields the visitor sent'),
  is_spam: z.boolean(),
  created_at: z.string(),
})
/** A submission as list_submissions shows it: long values left out for get_submission to read. */
const listedSubmission = submission.extend({
  omitted_fields: z.array(z.string()).optional().describe('Fields whose value was too long to list (value null in data): get_submission reads them'),
  data_omitted: z.literal(true).optional().describe("The page's listing budget was spent: data is {} here; get_submission reads it"),
})
const dataFile = z.looseObject({
  id: z.string().describe('What update_data takes as file_id'),
  display_name: z.string(),
  content_type: z.string(),
  public_url: url,
})
const image = z.looseObject({
  public_token: z.string().describe('What delete_image takes'),
  public_url: url,
  file_name: z.string(),
  size: count,
  width: z.number().int().nullable().describe('null for an SVG'),
  height: z.number().int().nullable(),
})

const access = z.looseObject({
  name: z.string().describe('The project, or the page by its file name (about.html), that the setting holds for'),
  password: z.boolean().describe('Whether visitors need a password (the password itself is never shown)'),
  expires_at: z.string().nullable().describe('ISO 8601, UTC: from then on the name answers 410 to everyone; null: never'),
  expired: z.boolean(),
  updated_at: z.string(),
})
const domain = z.looseObject({
  domain: z.string().describe('The host name, lowercased (punycode for an internationalised one): what verify_domain and remove_domain take'),
  project: z.string().describe('The folder project it serves'),
  verified: z.boolean(),
  primary: z.boolean(),
  lost_at: z
    .string()
    .nullable()
    .describe('When another account proved control of it and took it (verify_domain takes it back with your record); null otherwise'),
  site_url: maybeUrl.describe('https://{domain}/ once verified; null before'),
  verification: z
    .looseObject({ type: z.literal('TXT'), name: z.string(), value: z.string() })
    .describe('The DNS record that proves control of the domain: a TXT record at name holding value; create it, then call verify_domain'),
})

/** A project's live deploy after rollback or promote. */
const liveDeploy = { project: z.string(), live_deploy_id: z.string(), open_url: openUrl }

export const OUTPUTS = {
  publish_html: { file_name: z.string(), file_size: count, url, is_update: z.boolean(), site_url: siteUrl, open_url: openUrl },
  deploy_files: {
    project: z.string(),
    uploaded_count: count,
    changed_count: count.optional().describe('Live deploys only'),
    unchanged: z.boolean().optional().describe('Live deploys only: true when the call changed no file (no new deploy)'),
    deploy_id: z.string().nullable().optional().describe('Live deploys only: the deploy now live'),
    deploy: z.looseObject({ id: z.string(), file_count: count }).optional().describe('Previews only: the preview deploy, which promote takes'),
    is_published: z.boolean().describe('false for a preview'),
    website_url: url,
    site_url: siteUrl,
    origin_url: originUrl,
    preview_url: url.optional(),
    preview_site_url: maybeUrl.optional(),
    preview_origin_url: maybeUrl.optional(),
    open_url: openUrl,
  },
  list_sites: {
    pages: z.array(page),
    pages_total: count,
    ...paging,
    projects: z.array(project).describe('Every project (not paged)'),
  },
  get_site: {
    type: z.enum(['project', 'page']),
    name: z.string().optional().describe('A project'),
    is_published: z.boolean().optional(),
    website_url: url.optional(),
    origin_url: originUrl.optional(),
    files: z.array(projectFile).optional().describe("A project's files, this page of them"),
    files_total: count.optional(),
    page: z.number().int().positive().optional(),
    per_page: z.number().int().positive().optional(),
    total_pages: count.optional(),
    file_name: z.string().optional().describe('A page'),
    file_size: count.optional(),
    url: url.optional(),
    site_url: siteUrl,
  },
  read_file: {
    project: z.string(),
    path: z.string(),
    size: count,
    content: z.string().nullable().optional().describe("UTF-8 text, this page's; in the summary rather than here when shown; null when binary or over 5 MiB"),
    page: z.number().int().positive().optional().describe('A text file: the page shown'),
    total_pages: z.number().int().positive().optional().describe('A text file: its pages (page takes 2 and on)'),
    site_url: siteUrl,
  },
  list_deploys: {
    project: z.string(),
    live_deploy_id: z.string().nullable(),
    open_url: openUrl,
    deploys: z.array(deploy.extend({ preview_url: url, preview_site_url: maybeUrl, preview_origin_url: maybeUrl })).describe('Newest first'),
  },
  rollback: liveDeploy,
  promote: liveDeploy,
  set_user_site: {
    project: z.string(),
    user_site: z.boolean(),
    user_site_url: maybeUrl.describe("The root of the user's own origin; null when the service has no content domain"),
  },
  delete_site: {
    type: z.enum(['project', 'page']),
    name: z.string(),
    deleted_files: count.optional().describe('A project: how many files went'),
  },
  delete_file: { project: z.string(), path: z.string() },
  kv_get: { entry, public_url: maybeUrl, dashboard_url: dashboardUrl, public_incr_url: publicIncrUrl },
  kv_set: { created: z.boolean(), entry, public_url: maybeUrl, public_incr_url: publicIncrUrl },
  kv_incr: {
    created: z.boolean(),
    entry,
    public_url: maybeUrl,
    dashboard_url: dashboardUrl,
    public_incr_url: publicIncrUrl,
  },
  kv_list: {
    items: z.array(
      entry.extend({
        public_url: maybeUrl,
        value_omitted: z.literal(true).optional().describe('Only on a value too long to list (value null): kv_get reads it'),
      }),
    ),
    total: count,
    ...paging,
    quota: z.looseObject({ max_keys: count, max_entry_bytes: count }),
    usage: z.looseObject({ keys: count, bytes: count }),
    dashboard_url: dashboardUrl,
  },
  kv_delete: { key: z.string() },
  create_form: { form },
  update_form: { form },
  list_submissions: {
    forms: z
      .array(form.extend({ submission_count: count, unread_count: count, spam_count: count }))
      .optional()
      .describe('Without form_id'),
    form_id: z.string().optional().describe('With form_id'),
    submissions: z.array(listedSubmission).optional().describe('With form_id: newest first'),
    total: count.optional(),
    page: z.number().int().positive().optional(),
    per_page: z.number().int().positive().optional(),
    total_pages: count.optional(),
    submissions_url: url.optional().describe('The REST route that lists them, with the key'),
    dashboard_url: dashboardUrl,
  },
  get_submission: { form_id: z.string().describe('The form it was sent to'), submission },
  delete_form: { form_id: z.string() },
  delete_submission: { submission_id: z.string(), form_id: z.string().describe('The form it was sent to') },
  create_data: { file: dataFile },
  list_data: { files: z.array(dataFile), total: count },
  update_data: { file: dataFile, version: z.looseObject({ version: z.number().int().positive(), url }) },
  delete_data: {
    file_id: z.string(),
    version: z.number().int().positive().optional().describe('With version: the version deleted'),
    file: dataFile
      .extend({ versions: z.array(z.looseObject({ version: z.number().int().positive(), is_default: z.boolean(), url })) })
      .optional()
      .describe('With version: the file as it is now, with the versions left'),
  },
  upload_image: { image },
  list_images: { images: z.array(image), total: count, ...paging, dashboard_url: dashboardUrl },
  delete_image: { public_token: z.string() },
  list_access: { access: z.array(access), dashboard_url: dashboardUrl },
  set_access: { access },
  clear_access: { name: z.string().describe('The name now open to everyone') },
  list_domains: { domains: z.array(domain), limit: count.describe('How many domains the account may add'), dashboard_url: dashboardUrl },
  add_domain: { domain, held_by_other: z.boolean().describe('Another account holds it verified: verify_domain with your record moves it to your project') },
  verify_domain: { domain },
  remove_domain: { domain: z.string().describe('The host name removed') },
} satisfies Record<string, Record<string, z.ZodType>>

export type ToolName = keyof typeof OUTPUTS

/**
 * The output schema of a tool: `success`, then its own fields, each optional since a refusal
 * (success false, isError) carries the refusal's fields instead (errorResult in tools.ts:
 * error_code, error_type, message, solution, details), which `success` names once rather
 * than each tool declaring them again; the schema is open, so a refusal meets it.
 */
export function outputSchema(shape: Record<string, z.ZodType>) {
  const own = Object.fromEntries(Object.entries(shape).map(([k, v]) => [k, v instanceof z.ZodOptional ? v : v.optional()]))
  return z.looseObject({
    success: z.boolean().describe('false on a refusal (isError), which has error_code, error_type, message and solution (the next step) instead'),
    ...own,
  })
}
