import createClient, { type Client } from 'openapi-fetch'
import { fetch as undiciFetch } from 'undici'
import type { paths } from './api-types.js'
import { insecureAgent, type TestServer } from './server.js'

/**
 * A client typed by the OpenAPI document (api-types.ts, from `npm run gen:api-types`) for a
 * test server. Requests go through undici with the agent that accepts the server's
 * self-signed certificate; the answer is handed back as a standard Response.
 */
export function apiClient(s: TestServer, auth: { key?: string; cookie?: string } = {}): Client<paths> {
  const headers: Record<string, string> = {}
  if (auth.key) headers.authorization = `Bearer ${auth.key}`
  if (auth.cookie) headers.cookie = auth.cookie
  return createClient<paths>({
    baseUrl: s.url,
    headers,
    fetch: async (req: Request) => {
      const body = req.body ? Buffer.from(await req.arrayBuffer()) : undefined
      const r = await undiciFetch(req.url, { method: req.method, headers: [...req.headers], body, dispatcher: insecureAgent })
      const buf = await r.arrayBuffer()
      return new Response(r.status === 204 || r.status === 304 ? null : buf, { status: r.status, headers: [...r.headers] })
    },
  })
}
