/**
 * Every golden configuration must be accepted by the real BIRD 2 (`bird -p -c`). Needs the `bird`
 * executable (Debian bird2); under CI=true its absence fails the test instead of skipping it.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { renderBirdConfig } from './bird-config-renderer.js';
import { GOLDEN_CASES } from './testdata/golden-cases.js';

const BIRD = '/usr/sbin/bird';
const GOLDEN_DIR = join(dirname(fileURLToPath(import.meta.url)), 'testdata', 'golden');
const canRun = process.env.CI === 'true' || existsSync(BIRD);

function birdParse(file: string): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(BIRD, ['-p', '-c', file], (err, _stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, stderr });
    });
  });
}

describe.runIf(canRun)('real BIRD parses the rendered configurations', () => {
  for (const c of GOLDEN_CASES) {
    for (const family of c.families) {
      const main = family === 4 ? 'bird.cfg' : 'bird6.cfg';
      test(`${c.name}/${main}`, async () => {
        const r = await birdParse(join(GOLDEN_DIR, c.name, main));
        expect(r.stderr).toBe('');
        expect(r.code).toBe(0);
      });
    }
  }

  describe('and refuses a broken one', () => {
    let dir: string;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'bird-parse-'));
    });
    afterAll(async () => {
      if (dir) await rm(dir, { recursive: true, force: true });
    });
    test('a peer with an unknown AS keyword is reported with file and line', async () => {
      const { files } = renderBirdConfig(GOLDEN_CASES[0]!.input, 4);
      for (const [name, text] of Object.entries(files)) {
        await writeFile(
          join(dir, name),
          name === 'bird.cfg' ? text.replace('local as 64512;', 'local as;') : text,
        );
      }
      const r = await birdParse(join(dir, 'bird.cfg'));
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/bird\.cfg:\d+:\d+ syntax error/);
    });
  });
});
