import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * The source file `rel` next to the module at `moduleUrl`: browser scripts and stylesheets are
 * plain files in src/ (no build step), so compiled code (dist/src/...) finds them in src/.
 */
export function sourceFile(moduleUrl: string, rel: string): string {
  const dir = path.dirname(fileURLToPath(moduleUrl))
  const direct = path.join(dir, rel)
  if (fs.existsSync(direct)) return direct
  let root = dir
  for (let i = 0; i < 8 && !fs.existsSync(path.join(root, 'package.json')); i++) root = path.dirname(root)
  const parts = path.relative(root, direct).split(path.sep)
  const fromSrc = parts[0] === 'dist' ? path.join(root, ...parts.slice(1)) : direct
  if (!fs.existsSync(fromSrc)) throw new Error(`web: ${rel} not found next to ${dir}`)
  return fromSrc
}
