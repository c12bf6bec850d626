import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { renderBirdConfig } from './bird-config-renderer.js';
import { GOLDEN_CASES } from './testdata/golden-cases.js';

const GOLDEN_DIR = join(dirname(fileURLToPath(import.meta.url)), 'testdata', 'golden');
const update = process.env.UPDATE_GOLDEN === '1';

describe('golden BIRD configurations', () => {
  for (const c of GOLDEN_CASES) {
    test(c.name, () => {
      const dir = join(GOLDEN_DIR, c.name);
      const rendered: Record<string, string> = {};
      for (const family of c.families) Object.assign(rendered, renderBirdConfig(c.input, family).files);
      if (update) {
        mkdirSync(dir, { recursive: true });
        for (const [name, text] of Object.entries(rendered)) writeFileSync(join(dir, name), text);
      }
      expect(existsSync(dir), `no golden files for ${c.name}; run with UPDATE_GOLDEN=1`).toBe(true);
      expect(readdirSync(dir).sort()).toEqual(Object.keys(rendered).sort());
      for (const [name, text] of Object.entries(rendered)) {
        expect(text, `${c.name}/${name}`).toBe(readFileSync(join(dir, name), 'utf8'));
      }
    });
  }
});
