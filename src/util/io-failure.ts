/** An I/O error as an operator reads it: a full disk said as such, the system's or SQLite's words kept. */
export function ioFailure(e: unknown): string {
  const err = e as { code?: unknown; message?: unknown } | null
  const message = typeof err?.message === 'string' ? err.message : String(e)
  return err?.code === 'SQLITE_FULL' || err?.code === 'ENOSPC' ? `no space left on the device (${message})` : message
}

/** Whether an error came from the system (a file, a disk): it carries the failed call. */
export const isSystemError = (e: unknown): boolean => typeof (e as { syscall?: unknown } | null)?.syscall === 'string'
