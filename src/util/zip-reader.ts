/**
 * A zip read by random access with yauzl, as the server reads one (a deploy, an account
 * import): lazy entries, the zip kept open until closed, every entry's inflated length held to
 * its declared size, names checked (no backslash, absolute path or ".." segment).
 */
import yauzl from 'yauzl'

/** Opens `file`; rejects with yauzl's own error. Errors after that reach the pending nextEntry. */
export async function openZip(file: string): Promise<yauzl.ZipFile> {
  const zip = await new Promise<yauzl.ZipFile>((res, rej) =>
    yauzl.open(file, { lazyEntries: true, autoClose: false, validateEntrySizes: true, strictFileNames: true, decodeStrings: true }, (e, z) =>
      e ? rej(e) : res(z),
    ),
  )
  // a late error with no read pending would otherwise be unhandled
  zip.on('error', () => {})
  return zip
}

/** The zip's next entry in central-directory order, or null after the last. */
export function nextEntry(zip: yauzl.ZipFile): Promise<yauzl.Entry | null> {
  return new Promise<yauzl.Entry | null>((res, rej) => {
    const off = () => {
      zip.off('entry', onEntry)
      zip.off('end', onEnd)
      zip.off('error', onError)
    }
    const onEntry = (e: yauzl.Entry) => (off(), res(e))
    const onEnd = () => (off(), res(null))
    const onError = (e: Error) => (off(), rej(e))
    zip.on('entry', onEntry).on('end', onEnd).on('error', onError)
    zip.readEntry()
  })
}

/** yauzl's own refusals of a name (strictFileNames): what it found, and the name. */
export const YAUZL_NAME_ERROR = /^(invalid characters in fileName|absolute path|invalid relative path): (.*)$/s
