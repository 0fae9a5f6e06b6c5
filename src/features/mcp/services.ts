import type { Deps } from '../../deps.js'
import { createKvService, type KvService } from '../kv/service.js'
import { createFormService, type FormService } from '../forms/service.js'
import { createFilesService, type FilesService } from '../sites/files-service.js'
import { createFoldersService, type FoldersService } from '../sites/folders-service.js'
import { createDeploysService, type DeploysService } from '../sites/deploys-service.js'
import { hostedDataFor, type HostedData } from '../hosted-data/service.js'
import { createImageHost, type ImageHost } from '../image-host/service.js'

/**
 * The other features' services the MCP tools call: their public service modules (the same
 * rules, quotas, codes and bus invalidations as the REST routes), never their stores. Each is
 * built from the same deps as the feature's own; the ones that cache public answers (KV,
 * hosted data) keep those caches right through the bus, which delivers every write to every
 * cache of the process (and, with Redis, of every instance).
 */
export interface McpServices {
  kv: KvService
  forms: FormService
  files: FilesService
  folders: FoldersService
  deploys: DeploysService
  data: HostedData
  images: ImageHost
}

export function mcpServices(deps: Deps): McpServices {
  return {
    kv: createKvService(deps),
    forms: createFormService(deps),
    files: createFilesService(deps),
    folders: createFoldersService(deps),
    deploys: createDeploysService(deps),
    data: hostedDataFor(deps),
    images: createImageHost(deps),
  }
}
