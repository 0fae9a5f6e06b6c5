import type { Deps } from '../../deps.js'
import { createKvService, type KvService } from '../kv/service.js'
import { createFormService, type FormService } from '../forms/service.js'
import { createFilesService, type FilesService } from '../sites/files-service.js'
import { createFoldersService, type FoldersService } from '../sites/folders-service.js'
import { createDeploysService, type DeploysService } from '../sites/deploys-service.js'
import { createHostedData, type HostedData } from '../hosted-data/service.js'
import { createImageHost, type ImageHost } from '../image-host/service.js'
import { createDomains } from '../domains/state.js'
import type { DomainService } from '../domains/service.js'

/**
 * The other features' services the MCP tools call: the very instances the REST routes use
 * (deps.services), so the same rules, quotas, codes, caches and write rounds apply, never
 * their stores. Forms are the exception: the tools only manage forms and read submissions,
 * so their service has no notification queue (submissions come in through the forms routes).
 */
export interface McpServices {
  kv: KvService
  forms: FormService
  files: FilesService
  folders: FoldersService
  deploys: DeploysService
  data: HostedData
  images: ImageHost
  /** Custom domains and visitor access: the one service that drops the public host's caches of them. */
  domains: DomainService
}

export function mcpServices(deps: Deps): McpServices {
  return {
    kv: deps.services.get(createKvService),
    forms: createFormService(deps),
    files: deps.services.get(createFilesService),
    folders: deps.services.get(createFoldersService),
    deploys: deps.services.get(createDeploysService),
    data: deps.services.get(createHostedData),
    images: deps.services.get(createImageHost),
    domains: deps.services.get(createDomains).service,
  }
}
