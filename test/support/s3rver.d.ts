// Minimal typing of the part of s3rver (a fake S3 server, dev dependency) the tests use.
declare module 's3rver' {
  import type { AddressInfo } from 'node:net'
  interface S3rverOptions {
    port?: number
    address?: string
    silent?: boolean
    directory: string
    resetOnClose?: boolean
    configureBuckets?: Array<{ name: string; configs?: Array<string | Buffer> }>
  }
  export default class S3rver {
    constructor(options: S3rverOptions)
    run(): Promise<AddressInfo>
    close(): Promise<void>
  }
}
