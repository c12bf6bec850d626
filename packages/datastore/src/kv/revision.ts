import { DatastoreError } from '../errors.js';

/**
 * Revisions travel as decimal strings (etcd's are int64). Inside a store they are plain numbers:
 * 2^53 writes is beyond any store this client will meet, and parsing rejects anything larger.
 */
export function parseRevision(text: string, what = 'revision'): number {
  if (!/^\d{1,16}$/.test(text)) {
    throw new DatastoreError('invalid', `${what} must be a decimal revision, got ${JSON.stringify(text)}`);
  }
  const n = Number(text);
  if (!Number.isSafeInteger(n)) {
    throw new DatastoreError('invalid', `${what} ${text} is out of range`);
  }
  return n;
}

/**
 * Order keys as etcd does: by their UTF-8 bytes. Comparing code points gives the same order as
 * comparing UTF-8 bytes (JavaScript's `<` compares UTF-16 units, which differs above U+FFFF).
 */
export function compareKeys(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // Only surrogate halves (0xD800–0xDFFF) sort differently in UTF-8: they encode code points
    // above every BMP character.
    const xs = x >= 0xd800 && x <= 0xdfff;
    const ys = y >= 0xd800 && y <= 0xdfff;
    if (xs !== ys) return xs ? 1 : -1;
    return x < y ? -1 : 1;
  }
  return a.length - b.length;
}
