/**
 * A POSIX ustar archive of regular files, in memory (pure): what `node diags` bundles, with no
 * program of the host's needed to read it back but `tar`. Names longer than 100 bytes use the
 * ustar prefix field (up to 255 bytes in all); a name that still does not fit is refused.
 */

export interface TarEntry {
  /** Path inside the archive, `/`-separated, relative. */
  readonly name: string;
  readonly data: Buffer;
  /** Default 0o644. */
  readonly mode?: number;
  /** Seconds since the epoch. */
  readonly mtime: number;
}

const BLOCK = 512;

function octal(value: number, width: number): string {
  // width - 1 digits, then NUL.
  return `${value.toString(8).padStart(width - 1, '0')}\0`;
}

function splitName(name: string): { prefix: string; name: string } {
  if (Buffer.byteLength(name) <= 100) return { prefix: '', name };
  // The prefix takes whole leading directories: at most 155 bytes, the rest at most 100.
  for (let i = name.indexOf('/'); i >= 0; i = name.indexOf('/', i + 1)) {
    const prefix = name.slice(0, i);
    const rest = name.slice(i + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(rest) <= 100) return { prefix, name: rest };
  }
  throw new RangeError(`tar: the path "${name}" is too long for a ustar archive`);
}

function header(e: TarEntry): Buffer {
  const h = Buffer.alloc(BLOCK);
  const { prefix, name } = splitName(e.name);
  h.write(name, 0, 100, 'utf8');
  h.write(octal(e.mode ?? 0o644, 8), 100, 'ascii');
  h.write(octal(0, 8), 108, 'ascii'); // uid
  h.write(octal(0, 8), 116, 'ascii'); // gid
  h.write(octal(e.data.length, 12), 124, 'ascii');
  h.write(octal(Math.max(0, Math.floor(e.mtime)), 12), 136, 'ascii');
  h.write('        ', 148, 'ascii'); // checksum, counted as spaces
  h.write('0', 156, 'ascii'); // regular file
  h.write('ustar\0', 257, 'ascii');
  h.write('00', 263, 'ascii');
  h.write('root', 265, 'ascii');
  h.write('root', 297, 'ascii');
  h.write(prefix, 345, 155, 'utf8');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
  return h;
}

export function tarArchive(entries: readonly TarEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    parts.push(header(e), e.data);
    const pad = (BLOCK - (e.data.length % BLOCK)) % BLOCK;
    if (pad > 0) parts.push(Buffer.alloc(pad));
  }
  // Two empty blocks end the archive.
  parts.push(Buffer.alloc(2 * BLOCK));
  return Buffer.concat(parts);
}
