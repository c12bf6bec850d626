/**
 * How Go's fmt prints the JSON-shaped values calicoctl shows (the `%v` verb that text/template
 * uses), so table cells and template output read as upstream's do.
 */

/** Go's `%v` of a float64 or integer. */
export function goNumber(n: number): string {
  if (Number.isInteger(n) && Math.abs(n) < 1e21) return String(n);
  const s = String(n);
  // ECMAScript prints 1e+21 / 1.5e-7 like Go's %v does; only the exponent padding differs.
  return s.replace(/e([+-])(\d)$/, 'e$10$2');
}

/** Go's `%v` of a decoded JSON value: maps as `map[k:v]` (sorted keys), slices as `[a b]`. */
export function goValue(v: unknown): string {
  if (v === undefined || v === null) return '<nil>';
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return goNumber(v);
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (Array.isArray(v)) return `[${v.map(goValue).join(' ')}]`;
  if (typeof v === 'object') {
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o).sort();
    return `map[${keys.map((k) => `${k}:${goValue(o[k])}`).join(' ')}]`;
  }
  return String(v);
}

/** calicoctl's `join`/`joinAndTruncate` template functions. */
export function joinAndTruncate(items: unknown, separator: string, maxLen = 0): string {
  if (items === undefined || items === null) return '';
  let list: unknown[];
  if (Array.isArray(items)) list = items;
  else if (typeof items === 'object') {
    list = Object.entries(items as Record<string, unknown>)
      .map(([k, v]) => `${k}=${goValue(v)}`)
      .sort();
  } else list = [items];
  let out = '';
  for (let i = 0; i < list.length; i++) {
    if (i > 0) out += separator;
    out += goValue(list[i]);
    if (maxLen > 0 && out.length > maxLen) {
      out = `${out.slice(0, maxLen - 3)}...`;
      break;
    }
  }
  return out;
}
