#!/usr/bin/env node
// A tenant writing at a steady rate: RATE increments/s (default 500) over 4 connections to
// BASE, key API_KEY, for DURATION_S seconds; prints the rate it achieved and how many failed.
import { Agent, request } from 'undici'

const base = process.env.BASE
const key = process.env.API_KEY
const rate = Number(process.env.RATE ?? 500)
const seconds = Number(process.env.DURATION_S ?? 10)
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
      const p = request(`${base}/svc_api/data/incr`, {
        method: 'POST',
        dispatcher: agent,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-forwarded-proto': 'https' },
        body: JSON.stringify({ key: `w${sent % 50}` }),
      })
        .then(async (r) => {
          await r.body.dump()
          if (r.statusCode === 200) ok++
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
