import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, test } from 'node:test'
import url from 'node:url'

const root = path.resolve(path.dirname(url.fileURLToPath(import.meta.url)), '../..')
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-format-check-'))
after(() => fs.rmSync(tmp, { recursive: true, force: true }))

/** scripts/format-check.mjs on folder with the cache file given; its exit status and output */
const check = (folder: string, cache: string) => {
  const r = spawnSync(process.execPath, [path.join(root, 'scripts/format-check.mjs'), folder], {
    env: { ...process.env, FORMAT_CACHE: cache },
    encoding: 'utf8',
  })
  return { status: r.status, out: r.stdout + r.stderr }
}

test("the format check's cache holds across clones in other folders, and a changed file is checked again", () => {
  const first = path.join(tmp, 'first')
  fs.mkdirSync(path.join(first, 'src'), { recursive: true })
  fs.copyFileSync(path.join(root, '.prettierrc.json'), path.join(first, '.prettierrc.json'))
  fs.writeFileSync(path.join(first, '.prettierignore'), 'src/ignored.ts\n')
  fs.writeFileSync(path.join(first, 'src/a.ts'), "export const a = 'a'\n")
  fs.writeFileSync(path.join(first, 'src/b.json'), '{ "b": 1 }\n')
  fs.writeFileSync(path.join(first, 'src/ignored.ts'), 'export   const   x=1;')
  fs.writeFileSync(path.join(first, 'notes.txt'), 'no   parser   for   this')
  execFileSync('git', ['init', '-q', first])
  execFileSync('git', ['-C', first, 'add', '.'])
  const cache = path.join(tmp, 'cache.json')

  // three files: .prettierrc.json and the two sources; the ignored one and the text file are
  // not looked at
  assert.deepEqual(check(first, cache), {
    status: 0,
    out: 'All 3 files use Prettier code style (3 checked, 0 unchanged since a run that found them formatted).\n',
  })
  assert.match(check(first, cache).out, /\(0 checked, 3 unchanged/)

  // a copy elsewhere (a fresh clone in another folder) reads the same verdicts
  const second = path.join(tmp, 'second')
  fs.cpSync(first, second, { recursive: true })
  assert.match(check(second, cache).out, /\(0 checked, 3 unchanged/)

  // a file changed into a badly formatted one is checked, named and fails the run; the others
  // still come from the cache
  fs.writeFileSync(path.join(second, 'src/a.ts'), 'export const a = "a";\n')
  const bad = check(second, cache)
  assert.equal(bad.status, 1)
  assert.match(bad.out, /^\[warn\] src\/a\.ts$/m)
  assert.match(bad.out, /Code style issues found in 1 of 3 files/)
  assert.doesNotMatch(bad.out, /ignored\.ts|b\.json/)

  // put right, it is checked again (the failing run did not record it) and passes
  fs.writeFileSync(path.join(second, 'src/a.ts'), "export const a = 'b'\n")
  assert.match(check(second, cache).out, /^All 3 files use Prettier code style \(1 checked, 2 unchanged/)

  // FORMAT_CACHE=off checks every file
  assert.match(check(second, 'off').out, /\(3 checked, 0 unchanged/)
})

test('the format check names a file Prettier cannot parse and a folder that is not a git checkout (exit 2)', () => {
  const broken = path.join(tmp, 'broken')
  fs.mkdirSync(broken)
  fs.copyFileSync(path.join(root, '.prettierrc.json'), path.join(broken, '.prettierrc.json'))
  fs.writeFileSync(path.join(broken, 'bad.ts'), 'export const = (\n')
  execFileSync('git', ['init', '-q', broken])
  execFileSync('git', ['-C', broken, 'add', '.'])
  const cache = path.join(tmp, 'broken-cache.json')
  const r = check(broken, cache)
  assert.equal(r.status, 2)
  assert.match(r.out, /^\[error\] bad\.ts: /m)
  assert.match(r.out, /1 of 2 files could not be parsed/)

  const plain = path.join(tmp, 'plain')
  fs.mkdirSync(plain)
  const n = check(plain, cache)
  assert.equal(n.status, 2)
  assert.match(n.out, /is not a git checkout: the format check lists its files with git/)
})
