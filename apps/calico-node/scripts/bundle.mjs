// Bundles src/main.ts into one ESM file, bin/calico-node, with a node shebang (see
// scripts/bundle-lib.mjs at the repository root). Workspace packages are bundled from their
// TypeScript sources; etcd3 is carried, with its protos inlined and protobufjs given `long`, as for
// calico-felix. koffi (native) stays outside the bundle and is found from node_modules.
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { bundleExecutable, withEtcd3 } from '../../../scripts/bundle-lib.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

export async function bundle(outDir = join(root, 'bin')) {
  const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8'));
  const etcd3 = await withEtcd3(join(root, '../../packages/datastore'));
  try {
    return await bundleExecutable(build, {
      root,
      outfile: join(outDir, 'calico-node'),
      external: ['koffi'],
      plugins: etcd3.plugins,
      inject: etcd3.inject,
      define: { __CALICO_TS_VERSION__: JSON.stringify(`v${pkg.version}`) },
    });
  } finally {
    await etcd3.cleanup();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = await bundle(process.argv[2]);
  process.stdout.write(`bundled ${out}\n`);
}
