/** Value of one sample of Prometheus text (name + exact label set as printed), 0 when absent. */
export function sample(text: string, name: string, labels: Record<string, string>): number {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`)
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue
    const inner = line.slice(name.length + 1, line.indexOf('}'))
    const have = inner.split(/,(?=[a-z_]+=")/)
    if (want.every((w) => have.includes(w)) && have.length === want.length) return Number(line.slice(line.indexOf('}') + 1).trim())
  }
  return 0
}
