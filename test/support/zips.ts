import { crc32, deflateRawSync } from 'node:zlib'
import type { Res, TestServer } from './server.js'

/**
 * Zip files written byte by byte, so a test can make the ones no zip tool writes: names with
 * "..", a backslash or a leading "/", symbolic links, encrypted entries, sizes that lie.
 */
export interface ZipEntry {
  name: string
  data?: string | Buffer
  /** 8 (deflate, the default) or 0 (stored). */
  method?: 0 | 8
  /** Unix mode recorded in the attributes (0o100644 for a file by default; 0o120777 a link). */
  mode?: number
  /** The uncompressed size the headers declare, in place of the real one. */
  declaredSize?: number
  /** Sets the "encrypted" flag (the data stays as it is). */
  encrypted?: boolean
}

/**
 * `entryCount`: the count the end record declares (past 65,535 through a zip64 record);
 * `badZip64`: a zip64 locator pointing at no zip64 record, as a broken zip64 writer leaves it.
 */
export function zipOf(entries: ZipEntry[], opts: { entryCount?: number; badZip64?: boolean } = {}): Buffer {
  const locals: Buffer[] = []
  const centrals: Buffer[] = []
  let offset = 0
  for (const e of entries) {
    const name = Buffer.from(e.name, 'utf8')
    const raw = Buffer.from(e.data ?? '')
    const method = e.method ?? 8
    const body = method === 8 ? deflateRawSync(raw) : raw
    const flags = 0x800 | (e.encrypted ? 1 : 0)
    const size = e.declaredSize ?? raw.length
    const compressed = body.length
    const crc = crc32(raw)
    const local = Buffer.alloc(30)
    local.writeUInt32LE(0x04034b50, 0)
    local.writeUInt16LE(20, 4)
    local.writeUInt16LE(flags, 6)
    local.writeUInt16LE(method, 8)
    local.writeUInt16LE(0, 10)
    local.writeUInt16LE(0x21, 12)
    local.writeUInt32LE(crc, 14)
    local.writeUInt32LE(compressed, 18)
    local.writeUInt32LE(size, 22)
    local.writeUInt16LE(name.length, 26)
    local.writeUInt16LE(0, 28)
    const central = Buffer.alloc(46)
    central.writeUInt32LE(0x02014b50, 0)
    central.writeUInt16LE((3 << 8) | 20, 4)
    central.writeUInt16LE(20, 6)
    central.writeUInt16LE(flags, 8)
    central.writeUInt16LE(method, 10)
    central.writeUInt16LE(0, 12)
    central.writeUInt16LE(0x21, 14)
    central.writeUInt32LE(crc, 16)
    central.writeUInt32LE(compressed, 20)
    central.writeUInt32LE(size, 24)
    central.writeUInt16LE(name.length, 28)
    central.writeUInt32LE(((e.mode ?? (e.name.endsWith('/') ? 0o40755 : 0o100644)) << 16) >>> 0, 38)
    central.writeUInt32LE(offset, 42)
    locals.push(local, name, body)
    centrals.push(central, name)
    offset += local.length + name.length + body.length
  }
  const cd = Buffer.concat(centrals)
  const end = Buffer.alloc(22)
  end.writeUInt32LE(0x06054b50, 0)
  const count = opts.entryCount ?? entries.length
  end.writeUInt16LE(Math.min(count, 0xffff), 8)
  end.writeUInt16LE(Math.min(count, 0xffff), 10)
  end.writeUInt32LE(cd.length, 12)
  end.writeUInt32LE(offset, 16)
  if (opts.badZip64) {
    const loc = Buffer.alloc(20)
    loc.writeUInt32LE(0x07064b50, 0)
    loc.writeUInt32LE(1, 16)
    return Buffer.concat([...locals, cd, loc, end])
  }
  if (count < 0xffff) return Buffer.concat([...locals, cd, end])
  // more entries than 16 bits hold: a zip64 end record and its locator say how many
  const z64 = Buffer.alloc(56)
  z64.writeUInt32LE(0x06064b50, 0)
  z64.writeBigUInt64LE(44n, 4)
  z64.writeUInt16LE(45, 12)
  z64.writeUInt16LE(45, 14)
  z64.writeBigUInt64LE(BigInt(count), 24)
  z64.writeBigUInt64LE(BigInt(count), 32)
  z64.writeBigUInt64LE(BigInt(cd.length), 40)
  z64.writeBigUInt64LE(BigInt(offset), 48)
  const loc = Buffer.alloc(20)
  loc.writeUInt32LE(0x07064b50, 0)
  loc.writeBigUInt64LE(BigInt(offset + cd.length), 8)
  loc.writeUInt32LE(1, 16)
  return Buffer.concat([...locals, cd, z64, loc, end])
}

/** POSTs a zip to a project's deploys, with query parameters (preview, message). */
export function postZip(s: TestServer, key: string, project: string, body: Buffer, query = '', contentType = 'application/zip'): Promise<Res> {
  return s.post(`/api/folders/${project}/deploys${query}`, { key, body, headers: { 'content-type': contentType, 'accept-language': 'en' } })
}
