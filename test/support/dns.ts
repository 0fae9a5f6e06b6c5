import assert from 'node:assert/strict'
import dns2 from 'dns2'
import type { TestServer } from './server.js'

/**
 * A real DNS server (dns2, UDP) on loopback for custom-domain verification tests: TXT records
 * set by the test, NXDOMAIN for every other name, SERVFAIL for names put in `failing`.
 * Point the service at it with DNS_RESOLVER=`addr`.
 */
export interface TestDns {
  addr: string
  txt: Map<string, string[]>
  failing: Set<string>
  /** Questions received, for tests that check a lookup happened. */
  asked: string[]
  close(): Promise<void>
}

export async function startDns(): Promise<TestDns> {
  const { Packet } = dns2
  // dns2's typings lack RCODE and want full Resource objects; the runtime takes plain records
  const RCODE = (Packet as unknown as { RCODE: Record<'SERVFAIL' | 'NXDOMAIN', number> }).RCODE
  const txt = new Map<string, string[]>()
  const failing = new Set<string>()
  const asked: string[] = []
  const server = dns2.createServer({
    udp: true,
    handle(request, send) {
      const response = Packet.createResponseFromRequest(request)
      const [q] = request.questions
      const name = q.name.toLowerCase()
      asked.push(name)
      if (failing.has(name)) response.header.rcode = RCODE.SERVFAIL
      else if (q.type === Packet.TYPE.TXT && txt.has(name)) {
        for (const v of txt.get(name) ?? [])
          response.answers.push({
            name: q.name,
            type: Packet.TYPE.TXT,
            class: Packet.CLASS.IN,
            ttl: 1,
            data: v,
          } as unknown as (typeof response.answers)[number])
      } else if (!txt.has(name)) response.header.rcode = RCODE.NXDOMAIN
      void send(response)
    },
  })
  const addrs = await server.listen({ udp: { port: 0, address: '127.0.0.1' } })
  const port = (addrs as unknown as { udp: { port: number } }).udp.port
  return { addr: `127.0.0.1:${port}`, txt, failing, asked, close: () => server.close() }
}

/** Adds `domain` for the key's `project` and verifies it, its TXT record served by `dns`. */
export async function verifiedDomain(s: TestServer, dns: TestDns, key: string, domain: string, project: string): Promise<void> {
  const add = await s.post('/api/domains', { key, json: { domain, project } })
  assert.equal(add.status, 200, add.text)
  dns.txt.set(`_svc-challenge.${domain}`, [add.json.data.verification.value])
  const verify = await s.post(`/api/domains/${domain}/verify`, { key })
  assert.equal(verify.status, 200, verify.text)
}
