/**
 * A tiny valid TrueType font, made here so no font file (or its licence) is needed: one glyph,
 * a square 1000 units wide (the full em), mapped to "A". Text in this font is exactly
 * font-size wide per letter, so a page can tell from a width that the web font was used
 * (Chromium's font sanitizer, OTS, refuses a malformed file with a console error).
 */
export function tinyFont(family = 'SvcTest'): Buffer {
  const u16 = (...v: number[]) => {
    const b = Buffer.alloc(v.length * 2)
    v.forEach((x, i) => b.writeUInt16BE(x & 0xffff, i * 2))
    return b
  }
  const u32 = (...v: number[]) => {
    const b = Buffer.alloc(v.length * 4)
    v.forEach((x, i) => b.writeUInt32BE(x >>> 0, i * 4))
    return b
  }
  const cat = (...b: Buffer[]) => Buffer.concat(b)

  // glyph 0: .notdef (empty); glyph 1: a square from (0,0) to (1000,800), clockwise
  const square = cat(
    u16(1, 0, 0, 1000, 800), // numberOfContours, xMin, yMin, xMax, yMax
    u16(3, 0), // endPtsOfContours[0], instructionLength
    Buffer.from([1, 1, 1, 1]), // flags: on curve, 16-bit deltas
    u16(0, 0, 1000, 0), // x deltas
    u16(0, 800, 0, -800), // y deltas
  )
  const glyf = square.length % 2 ? cat(square, Buffer.alloc(1)) : square
  const loca = u16(0, 0, glyf.length / 2)
  const head = cat(
    u32(0x00010000, 0x00010000, 0, 0x5f0f3cf5), // version, fontRevision, checkSumAdjustment, magic
    u16(0x000b, 1000), // flags, unitsPerEm
    u32(0, 0, 0, 0), // created, modified
    u16(0, 0, 1000, 800), // xMin, yMin, xMax, yMax
    u16(0, 8, 2, 0, 0), // macStyle, lowestRecPPEM, fontDirectionHint, indexToLocFormat (short), glyphDataFormat
  )
  const hhea = cat(u32(0x00010000), u16(800, -200, 0, 1000, 0, 0, 1000, 1, 0, 0, 0, 0, 0, 0, 0, 2))
  const maxp = cat(u32(0x00010000), u16(2, 4, 1, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0))
  const hmtx = u16(1000, 0, 1000, 0)
  // cmap: one format 4 subtable (Windows, Unicode BMP): "A" -> glyph 1
  const cmap = cat(u16(0, 1, 3, 1), u32(12), u16(4, 32, 0, 4, 4, 1, 0, 0x41, 0xffff, 0, 0x41, 0xffff, 1 - 0x41, 1, 0, 0))
  const names: Array<[number, string]> = [
    [1, family],
    [2, 'Regular'],
    [3, `${family}-Regular-1.0`],
    [4, `${family} Regular`],
    [6, `${family}-Regular`],
  ]
  const strings = names.map(([, s]) => Buffer.from(s, 'utf16le').swap16())
  let off = 0
  const records = names.map(([id], i) => {
    const r = u16(3, 1, 0x0409, id, strings[i].length, off)
    off += strings[i].length
    return r
  })
  const name = cat(u16(0, names.length, 6 + 12 * names.length), ...records, ...strings)
  const os2 = cat(
    u16(4, 1000, 400, 5, 0), // version, xAvgCharWidth, weight, width, fsType
    u16(650, 600, 0, 75, 650, 600, 0, 350, 50, 300, 0), // sub/superscript sizes and offsets, strikeout, family class
    Buffer.alloc(10), // panose
    u32(1, 0, 0, 0), // Unicode ranges: Basic Latin
    Buffer.from('SVC '), // vendor
    u16(0x40, 0x41, 0x41, 800, -200, 0, 800, 200), // fsSelection REGULAR, first/last char, typo and win metrics
    u32(1, 0), // code page: Latin 1
    u16(500, 800, 0, 32, 1), // xHeight, capHeight, defaultChar, breakChar, maxContext
  )
  const post = cat(u32(0x00030000, 0), u16(-100, 50), u32(0, 0, 0, 0, 0))

  const tables: Array<[string, Buffer]> = [
    ['OS/2', os2],
    ['cmap', cmap],
    ['glyf', glyf],
    ['head', head],
    ['hhea', hhea],
    ['hmtx', hmtx],
    ['loca', loca],
    ['maxp', maxp],
    ['name', name],
    ['post', post],
  ]
  const pad = (b: Buffer) => (b.length % 4 ? cat(b, Buffer.alloc(4 - (b.length % 4))) : b)
  const checksum = (b: Buffer) => {
    const p = pad(b)
    let s = 0
    for (let i = 0; i < p.length; i += 4) s = (s + p.readUInt32BE(i)) >>> 0
    return s
  }
  const n = tables.length
  const pow = 2 ** Math.floor(Math.log2(n))
  const dir = [cat(u32(0x00010000), u16(n, pow * 16, Math.log2(pow), n * 16 - pow * 16))]
  const bodies: Buffer[] = []
  let offset = 12 + 16 * n
  for (const [tag, data] of tables) {
    dir.push(cat(Buffer.from(tag, 'latin1'), u32(checksum(data), offset, data.length)))
    const p = pad(data)
    bodies.push(p)
    offset += p.length
  }
  const font = cat(...dir, ...bodies)
  // head.checkSumAdjustment makes the whole file sum to 0xB1B0AFBA
  const headOffset = 12 + 16 * n + bodies.slice(0, 3).reduce((a, b) => a + b.length, 0)
  font.writeUInt32BE((0xb1b0afba - checksum(font)) >>> 0, headOffset + 8)
  return font
}
