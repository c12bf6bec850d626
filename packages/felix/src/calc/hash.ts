/**
 * The two hashing helpers upstream uses for names that reach the dataplane
 * (`libcalico-go/lib/hash/unique_id.go`). Pure functions over node:crypto's digests.
 */
import { createHash } from 'node:crypto';

/**
 * `<prefix>:` + base64url (no padding) of SHA-224 over `<prefix>:<content>`: the IDs of selector
 * (`s`), named-port (`n`) and service (`svc`) IP sets.
 */
export function makeUniqueID(prefix: string, content: string): string {
  const digest = createHash('sha224').update(`${prefix}:${content}`, 'utf8').digest();
  return `${prefix}:${digest.toString('base64url')}`;
}

const SHORTENED_MARK = '_';

/**
 * `fixedPrefix + suffix` when that fits in `maxLength` bytes; otherwise `fixedPrefix + "_" +` the
 * base64url SHA-256 of the suffix, cut to fit. A suffix that would fit exactly but starts with `_`
 * is hashed too, so a hashed name can never equal a plain one. Chain names for policies, profiles
 * and endpoints are built this way.
 */
export function lengthLimitedID(fixedPrefix: string, suffix: string, maxLength: number): string {
  const s = suffix.length === 0 ? SHORTENED_MARK : suffix;
  const prefixLen = Buffer.byteLength(fixedPrefix, 'utf8');
  const total = prefixLen + Buffer.byteLength(s, 'utf8');
  if (total > maxLength || (total === maxLength && s.startsWith(SHORTENED_MARK))) {
    const room = maxLength - 1 - prefixLen;
    if (room <= 0) throw new RangeError(`maxLength ${maxLength} leaves no room after prefix ${fixedPrefix}`);
    const hash = createHash('sha256').update(s, 'utf8').digest('base64url');
    return fixedPrefix + SHORTENED_MARK + hash.slice(0, room);
  }
  return fixedPrefix + s;
}
