/**
 * The Felix config file format (upstream `felix/config/file_loader.go`, go-ini): `key = value`
 * lines in any section; `;` and `#` start comments; later keys override earlier ones; keys are
 * matched to parameters without regard to case. Pure.
 */
export function parseIni(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith(';') || line.startsWith('#') || /^\[.*\]$/.test(line)) continue;
    const eq = line.search(/[=:]/);
    if (eq <= 0) continue;
    const key = line.slice(0, eq).trim();
    let value = line.slice(eq + 1).trim();
    if (/^".*"$/.test(value) || /^'.*'$/.test(value)) value = value.slice(1, -1);
    out[key] = value;
  }
  return out;
}
