/** s3rver in a process of its own for the benchmarks: node --import tsx bench/s3-server.ts PORT DIR BUCKET */
import S3rver from 's3rver'

const [port, directory, bucket] = process.argv.slice(2)
const server = new S3rver({ port: Number(port), address: '127.0.0.1', silent: true, directory, configureBuckets: [{ name: bucket }] })
await server.run()
process.stdout.write('ready\n')
process.on('SIGTERM', () => void server.close().then(() => process.exit(0)))
