import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/** The repository's (or the install's) root: the nearest folder up from here with package.json. */
const root = (() => {
  let dir = path.dirname(fileURLToPath(import.meta.url))
  for (let i = 0; i < 8 && !fs.existsSync(path.join(dir, 'package.json')); i++) dir = path.dirname(dir)
  return dir
})()

/**
 * The source file `src/{rel}`: browser scripts and stylesheets are plain files in src/ (no
 * build step), read from there by the compiled code and by the bundle alike, whose modules no
 * longer sit next to them (dist/src/..., dist/bin/...).
 */
export function sourceFile(rel: string): string {
  const file = path.join(root, 'src', rel)
  if (!fs.existsSync(file)) throw new Error(`web: src/${rel} not found under ${root}`)
  return file
}
