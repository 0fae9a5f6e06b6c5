import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

let cached: string | null = null

/**
 * The service version: package.json of the checkout or install this code runs from (the
 * nearest one up named svc, from src/, dist/src/ or the bundle in dist/bin/); 'unknown'
 * when none is found. Read once per process.
 */
export function serviceVersion(): string {
  if (cached !== null) return cached
  let dir = path.dirname(fileURLToPath(import.meta.url))
  for (let i = 0; i < 5; i++) {
    const p = path.join(dir, 'package.json')
    if (fs.existsSync(p)) {
      const pkg = JSON.parse(fs.readFileSync(p, 'utf8')) as { name?: string; version?: string }
      if (pkg.name === 'svc' && pkg.version) return (cached = pkg.version)
    }
    dir = path.dirname(dir)
  }
  return (cached = 'unknown')
}
