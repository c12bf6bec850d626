// One test configuration for every workspace package.
//
// - `source` export condition: tests run against the TypeScript sources of sibling packages, so a
//   change in `api` is seen by `datastore` tests without a rebuild.
// - CALICO_TEST_UNIT=1 runs unit tests only (no `*.int.test.ts`): the fast loop.
// - CALICO_TEST_RESULTS=<dir> adds a JSON report per package, which scripts/run-tests.mjs sums.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

export function packageTestConfig(dir: string) {
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name: string };
  const resultsDir = process.env.CALICO_TEST_RESULTS;
  const unitOnly = process.env.CALICO_TEST_UNIT === '1';
  const reporters: (string | [string, Record<string, unknown>])[] = ['default'];
  if (resultsDir) {
    reporters.push(['json', { outputFile: join(resultsDir, `${pkg.name.replace(/[@/]/g, '_')}.json`) }]);
  }
  return defineConfig({
    resolve: { conditions: ['source', 'import', 'default'] },
    ssr: { resolve: { conditions: ['source', 'import', 'default'] } },
    test: {
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      exclude: unitOnly ? ['**/node_modules/**', '**/*.int.test.ts'] : ['**/node_modules/**'],
      reporters,
      testTimeout: 30_000,
      hookTimeout: 60_000,
      passWithNoTests: true,
    },
  });
}
