import { NetlinuxError } from './errors.js';

/** Longest interface name the kernel accepts (IFNAMSIZ - 1 bytes). */
export const MAX_IFNAME_LEN = 15;

/** The kernel's rule (`dev_valid_name`): 1–15 bytes, not `.`/`..`, no `/`, `:` or whitespace. */
export function isValidIfName(name: string): boolean {
  return (
    name.length > 0 &&
    Buffer.byteLength(name) <= MAX_IFNAME_LEN &&
    name !== '.' &&
    name !== '..' &&
    !/[/:\s"'\\]/.test(name)
  );
}

/** Throws `invalid` unless `name` is a usable interface name. */
export function checkIfName(name: string): string {
  if (!isValidIfName(name)) {
    throw new NetlinuxError(
      'invalid',
      `invalid interface name ${JSON.stringify(name)} (1-15 bytes, no / : whitespace or quotes)`,
    );
  }
  return name;
}

/** Throws `invalid` unless `ns` is a usable namespace name or absolute path. */
export function checkNetns(ns: string): string {
  const ok = ns.startsWith('/')
    ? !ns.split('/').includes('..') && !/[\0\n]/.test(ns)
    : ns.length > 0 && ns !== '.' && ns !== '..' && !/[/\0\s]/.test(ns);
  if (!ok)
    throw new NetlinuxError(
      'invalid',
      `invalid network namespace ${JSON.stringify(ns)} (a name, or an absolute path)`,
    );
  return ns;
}
