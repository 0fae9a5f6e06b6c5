import fs from 'node:fs'

/**
 * The process's soft limit on open files (Node raises it to the hard limit at start), read
 * once from /proc; 4,096 where /proc cannot tell. Descriptor budgets (the open-file cache) take
 * a share of it, so they never keep the server from accepting connections.
 */
export const OPEN_FILE_LIMIT: number = (() => {
  try {
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(fs.readFileSync('/proc/self/limits', 'utf8'))
    return m === null ? 4096 : m[1] === 'unlimited' ? Infinity : Number(m[1])
  } catch {
    return 4096
  }
})()
