import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { writeAllSync } from './stdio.js';

describe('writeAllSync', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('writes every byte of a large text and of bytes, in order', () => {
    const dir = mkdtempSync(join(tmpdir(), 'stdio-'));
    dirs.push(dir);
    const file = join(dir, 'out');
    const fd = openSync(file, 'w');
    const big = 'ü'.repeat(300_000);
    try {
      writeAllSync(fd, big);
      writeAllSync(fd, new Uint8Array([0x0a, 0x41]));
    } finally {
      closeSync(fd);
    }
    expect(readFileSync(file, 'utf8')).toBe(`${big}\nA`);
  });

  it('names what failed on a bad descriptor', () => {
    expect(() => writeAllSync(987654, 'x')).toThrow(/EBADF/);
  });
});
