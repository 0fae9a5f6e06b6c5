/**
 * The MCP server's `instructions`, one text for both transports: POST /mcp answers it to
 * initialize, and `svc mcp` (stdio) passes on what the service answered (328).
 * `username` null: the service could not be asked (a wrong key; every call then fails).
 */
export function mcpInstructions(username: string | null, readOnly: boolean): string {
  const whose = username === null ? '' : ` for ${username}`
  return (
    `svc hosts HTML pages and small sites${whose}. Publish with publish_html (one page) or deploy_files (files of a project; it publishes them, there is no separate publish step); every answer carries the URL to open. ` +
    'Pages keep data with kv_set and kv_incr (public entries and counters), take visitor input with create_form and list_submissions, and go back with list_deploys and rollback. ' +
    'A refused call answers isError with an error code and the next step to take; a rate-limited one says after how many seconds to retry (retry_after).' +
    (readOnly ? ' This key is read-only: only reading tools are available.' : '')
  )
}
