import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'

// The contributor docs name the folders of src/: a folder added or removed there without its
// line in docs/architecture.md (and CONTRIBUTING.md's layer rule) fails here.
const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..')
const read = (p: string): string => fs.readFileSync(path.join(ROOT, p), 'utf8')
const folders = (p: string): string[] =>
  fs
    .readdirSync(path.join(ROOT, p), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort()

/** The "Source layout" block of docs/architecture.md. */
function sourceLayout(): string {
  const doc = read('docs/architecture.md')
  const m = /## Source layout\s+```\n([\s\S]*?)```/.exec(doc)
  assert.ok(m, 'docs/architecture.md has a Source layout block')
  return m[1]
}

describe('the contributor docs name the folders of src/', () => {
  it('docs/architecture.md lists every feature folder, and no other', () => {
    // a feature's line is indented four spaces below `features/`
    const listed = [...sourceLayout().matchAll(/^ {4}([a-z][a-z-]*)\/ /gm)].map((m) => m[1]).sort()
    assert.deepEqual(listed, folders('src/features'))
  })

  it('docs/architecture.md lists every folder of src/', () => {
    const listed = new Set([...sourceLayout().matchAll(/^ {2}([a-z][a-z-]*)\/ /gm)].map((m) => m[1]))
    assert.deepEqual(
      folders('src').filter((f) => !listed.has(f)),
      [],
    )
  })

  it("CONTRIBUTING.md's layer rule names every layer folder of src/", () => {
    const m = /## The layer rule\s+```\n(.*)\n```/.exec(read('CONTRIBUTING.md'))
    assert.ok(m, 'CONTRIBUTING.md has the layer rule')
    const named = new Set([...m[1].matchAll(/([a-z]+)\//g)].map((x) => x[1]))
    // cli/ is the composition root's, above every layer
    assert.deepEqual(
      folders('src').filter((f) => f !== 'cli' && !named.has(f)),
      [],
    )
  })
})
