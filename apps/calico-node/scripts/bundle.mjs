// Bundles src/main.ts into one ESM file, bin/calico-node, with a node shebang (see
// scripts/bundle-lib.mjs at the repository root). Workspace packages are bundled from their
// TypeScript sources; etcd3 is carried, with its protos inlined and protobufjs given `long`, as the
// felix package once did. koffi (native) stays outside the bundle and is found from node_modules.
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { bundleExecutable } from '../../../scripts/bundle-lib.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

export async function bundle(outDir = join(root, 'bin')) {
  const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8'));
  return bundleExecutable(build, {
    root,
    outfile: join(outDir, 'calico-node'),
    external: ['koffi'],
    etcd3From: join(root, '../../packages/datastore'),
    define: { __CALICO_TS_VERSION__: JSON.stringify(`v${pkg.version}`) },
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = await bundle(process.argv[2]);
  process.stdout.write(`bundled ${out}\n`);
}
