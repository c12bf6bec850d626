/**
 * install-cni's image carries this app's `dist/` and no workspace package (images/src/definitions.mjs),
 * so its source may import `@calico-ts/*` for types only: a value import would fail in the container
 * with ERR_MODULE_NOT_FOUND.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = import.meta.dirname;

describe('install-cni', () => {
  it('imports workspace packages for types only', () => {
    const files = readdirSync(SRC).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
    expect(files).toContain('main.ts');
    const valueImports = files.flatMap((f) =>
      [
        ...readFileSync(join(SRC, f), 'utf8').matchAll(
          /^import\s+(?!type\b)[^;]*?from\s+'(@calico-ts\/[^']+)'/gms,
        ),
      ].map((m) => `${f}: ${m[1]}`),
    );
    expect(valueImports).toEqual([]);
  });
});
