import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..')
export const SVC_BIN = path.join(ROOT, 'bin', 'svc')

export interface CliRun {
  code: number | null
  stdout: string
  stderr: string
  json: any
}

export interface CliOptions {
  env?: Record<string, string | undefined>
  input?: string
  /** Called with each line the CLI writes to stderr (e.g. to advance a fake clock on a wait). */
  onStderrLine?: (line: string) => void
  /** Called with each line the CLI writes to stdout (e.g. to cut a service off at a step it reports). */
  onStdoutLine?: (line: string) => void
  timeoutMs?: number
  /** Runs the CLI as this user (and group of the same number): the test process must be root. */
  uid?: number
  /** The CLI's working folder (the test process's by default). */
  cwd?: string
  /** Called with the child process once spawned (e.g. to send it a signal). */
  onSpawn?: (child: ChildProcess) => void
}

/**
 * Runs `node bin/svc ...` as a child process (asynchronously: the test server lives in this
 * process). HOME and XDG_CONFIG_HOME point to a fresh directory so no real config is read.
 */
export function runCli(args: string[], o: CliOptions = {}): Promise<CliRun> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-cli-home-'))
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('SVC_') && k !== 'CI') env[k] = v
  Object.assign(env, { HOME: home, XDG_CONFIG_HOME: path.join(home, '.config'), LANG: 'C' })
  for (const [k, v] of Object.entries(o.env ?? {})) {
    if (v === undefined) delete env[k]
    else env[k] = v
  }
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SVC_BIN, ...args], {
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
      ...(o.cwd === undefined ? {} : { cwd: o.cwd }),
      ...(o.uid === undefined ? {} : { uid: o.uid, gid: o.uid }),
    })
    o.onSpawn?.(child)
    let stdout = ''
    let stderr = ''
    let partial = ''
    const timer = setTimeout(() => child.kill('SIGKILL'), o.timeoutMs ?? 60_000)
    let partialOut = ''
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      stdout += c
      if (o.onStdoutLine === undefined) return
      partialOut += c
      let i: number
      while ((i = partialOut.indexOf('\n')) >= 0) {
        const line = partialOut.slice(0, i)
        partialOut = partialOut.slice(i + 1)
        o.onStdoutLine(line)
      }
    })
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      stderr += c
      partial += c
      let i: number
      while ((i = partial.indexOf('\n')) >= 0) {
        const line = partial.slice(0, i)
        partial = partial.slice(i + 1)
        o.onStderrLine?.(line)
      }
    })
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      fs.rmSync(home, { recursive: true, force: true })
      let json: any
      try {
        json = JSON.parse(stdout)
      } catch {}
      resolve({ code, stdout, stderr, json })
    })
    child.stdin.end(o.input ?? '')
  })
}

const trees: string[] = []
process.once('exit', () => {
  for (const d of trees) fs.rmSync(d, { recursive: true, force: true })
})

/** Writes files (path -> content) under a new temporary folder, removed when the process exits, and returns it. */
export function makeTree(files: Record<string, string | Buffer>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-site-'))
  trees.push(dir)
  for (const [p, content] of Object.entries(files)) {
    const abs = path.join(dir, p)
    fs.mkdirSync(path.dirname(abs), { recursive: true })
    fs.writeFileSync(abs, content)
  }
  return dir
}
