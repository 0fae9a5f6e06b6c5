#!/usr/bin/env node
// A tenant writing at a steady rate: RATE increments/s (default 500) over 4 connections to
// BASE, key API_KEY, for DURATION_S seconds; prints the rate it achieved and how many failed.
// MODE=get sends the same rate of authenticated reads of those keys instead (what a request
// costs the server without its write); MODE=page reads the public page PAGE, unauthenticated
// (what this client itself takes from a machine it shares with the server).
import { Agent, request } from 'undici'

const base = process.env.BASE
const key = process.env.API_KEY
const rate = Number(process.env.RATE ?? 500)
const seconds = Number(process.env.DURATION_S ?? 10)
const mode = process.env.MODE ?? 'incr'
const get = mode !== 'incr'
const target = (n) => (mode === 'page' ? process.env.PAGE : mode === 'get' ? `${base}/svc_api/data/get?key=w${n % 50}` : `${base}/svc_api/data/incr`)
const agent = new Agent({ connections: 4, pipelining: 1 })
let ok = 0
let failed = 0
const started = Date.now()
const inflight = new Set()
let sent = 0
await new Promise((resolve) => {
  const tick = setInterval(() => {
    const due = Math.floor(((Date.now() - started) / 1000) * rate)
    for (; sent < due; sent++) {
      const p = request(target(sent), {
        method: get ? 'GET' : 'POST',
        dispatcher: agent,
        headers:
          mode === 'page'
            ? { 'x-forwarded-proto': 'https' }
            : { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-forwarded-proto': 'https' },
        body: get ? undefined : JSON.stringify({ key: `w${sent % 50}` }),
      })
        .then(async (r) => {
          await r.body.dump()
          if (r.statusCode === 200 || (mode === 'get' && r.statusCode === 404)) ok++
          else failed++
        })
        .catch(() => failed++)
        .finally(() => inflight.delete(p))
      inflight.add(p)
    }
    if (Date.now() - started >= seconds * 1000) {
      clearInterval(tick)
      resolve()
    }
  }, 5)
})
await Promise.all(inflight)
await agent.close()
console.log(JSON.stringify({ ok, failed, per_second: Math.round(ok / ((Date.now() - started) / 1000)) }))
