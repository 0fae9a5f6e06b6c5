import { fetch as undiciFetch } from 'undici'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js'
import { insecureAgent } from './server.js'

/** fetch that accepts the test server's self-signed certificate. */
export const insecureFetch: FetchLike = (url, init) => undiciFetch(url, { ...(init as object), dispatcher: insecureAgent }) as unknown as ReturnType<FetchLike>

/** The SDK's own client, connected over streamable HTTP to `${base}/mcp` with a Bearer key (none: no header). */
export async function mcpHttpClient(base: string, key: string | null): Promise<Client> {
  const client = new Client({ name: 'svc-test', version: '1.0.0' })
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', base), {
    fetch: insecureFetch,
    requestInit: key === null ? {} : { headers: { authorization: `Bearer ${key}` } },
  })
  await client.connect(transport)
  return client
}

/** The text of a tool result's first content item. */
export const textOf = (r: { content?: unknown }): string => (r.content as Array<{ type: string; text?: string }> | undefined)?.[0]?.text ?? ''
