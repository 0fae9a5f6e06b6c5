import type { Feature } from '../feature.js'
import { mcpApi } from './routes.js'
import { mcpServices, type McpServices } from './services.js'

/**
 * The MCP server for AI agents: POST /mcp (stateless streamable HTTP, API-key Bearer). Its
 * tools (tools.ts) call the other features' services (services.ts); `svc mcp` (stdio, in
 * cli/client/commands/mcp.ts) forwards to this endpoint, so there is one set of tools.
 */
export const mcpFeature: Feature<McpServices> = {
  name: 'mcp',
  init: mcpServices,
  api: mcpApi,
}
