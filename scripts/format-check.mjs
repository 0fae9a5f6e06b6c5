#!/usr/bin/env node
// `prettier --check .` with a cache keyed by content rather than by absolute path: Prettier's own
// cache names each file by its absolute path, so a fresh clone in another folder (as CI makes
// for every run) checks every file again. A file is skipped when the hash of Prettier's
// version, the file's options, its path below the checkout and its bytes is in the cache; the
// cache then holds the files found formatted in this run only.
// Usage: node scripts/format-check.mjs [folder] (default: this checkout).
// Options: FORMAT_CACHE=file (default: $XDG_CACHE_HOME or ~/.cache, svc/format-check.json);
// FORMAT_CACHE=off checks every file.
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import * as prettier from 'prettier'

const root = path.resolve(process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..'))
const cacheFile = process.env.FORMAT_CACHE ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'svc', 'format-check.json')
const useCache = cacheFile !== 'off'

// the files `prettier --check .` looks at: what git tracks or would track, less what the ignore
// files leave out and what Prettier has no parser for
let names
try {
  names = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  })
} catch (e) {
  console.error(`[error] ${root} is not a git checkout: the format check lists its files with git (${String(e.stderr ?? e.message).trim()})`)
  process.exit(2)
}
const listed = names.split('\0').filter((f) => f !== '' && fs.existsSync(path.join(root, f)))
const ignorePath = ['.gitignore', '.prettierignore'].map((f) => path.join(root, f))

let known = new Set()
if (useCache) {
  try {
    known = new Set(JSON.parse(fs.readFileSync(cacheFile, 'utf8')))
  } catch {
    // no cache yet, or an unreadable one: every file is checked
  }
}
const formatted = []
const unformatted = []
const failed = []
let checked = 0
for (const rel of listed) {
  const file = path.join(root, rel)
  const info = await prettier.getFileInfo(file, { ignorePath })
  if (info.ignored || info.inferredParser === null) continue
  const options = { ...(await prettier.resolveConfig(file, { editorconfig: true })), filepath: file }
  const text = fs.readFileSync(file, 'utf8')
  // the options hold the path below the checkout, not the absolute one
  const key = createHash('sha256')
    .update(`${prettier.version}\0${JSON.stringify({ ...options, filepath: rel })}\0`)
    .update(text)
    .digest('hex')
  if (known.has(key)) {
    formatted.push(key)
    continue
  }
  checked++
  try {
    if (await prettier.check(text, options)) formatted.push(key)
    else unformatted.push(rel)
  } catch (e) {
    // a file Prettier cannot parse: named with Prettier's reason, as `prettier --check` does
    failed.push(`${rel}: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`)
  }
}
if (useCache) {
  fs.mkdirSync(path.dirname(cacheFile), { recursive: true })
  const tmp = `${cacheFile}.${process.pid}`
  fs.writeFileSync(tmp, JSON.stringify(formatted))
  fs.renameSync(tmp, cacheFile)
}
for (const rel of unformatted) console.log(`[warn] ${rel}`)
for (const line of failed) console.error(`[error] ${line}`)
const total = formatted.length + unformatted.length + failed.length
if (failed.length > 0) {
  console.error(`[error] ${failed.length} of ${total} files could not be parsed.`)
  process.exit(2)
}
if (unformatted.length > 0) {
  console.log(`[warn] Code style issues found in ${unformatted.length} of ${total} files. Run \`npm run format\` to fix them.`)
  process.exit(1)
}
console.log(`All ${total} files use Prettier code style (${checked} checked, ${total - checked} unchanged since a run that found them formatted).`)
