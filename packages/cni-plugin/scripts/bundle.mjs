// Bundles src/main.ts into one ESM file, bin/calico.mjs, with a node shebang, and links the two
// plugin names to it: bin/calico and bin/calico-ipam (the name picks the plugin). A runtime's
// CNI_PATH can point at bin/. Then compiles the program into a native executable that starts much
// faster (bun build --compile), bin/native/calico, with bin/native/calico-ipam linked to it: a
// CNI_PATH can point at bin/native/ instead (see scripts/bundle-lib.mjs at the repository root).
// The native one is split at dynamic imports, so handing an ADD to the plugin service parses only
// the few kB that takes, not the plugin.
// The plugin talks to etcd over node:http2, so etcd3 is left out.
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { bundleExecutable, compileNative, linkNames, withoutEtcd3 } from '../../../scripts/bundle-lib.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

async function esbuildOptions() {
  const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8'));
  return {
    root,
    plugins: [withoutEtcd3('the CNI plugin')],
    define: { __CALICO_TS_VERSION__: JSON.stringify(`v${pkg.version}`) },
  };
}

export async function bundle(outDir = join(root, 'bin')) {
  const outfile = await bundleExecutable(build, {
    ...(await esbuildOptions()),
    outfile: join(outDir, 'calico.mjs'),
  });
  await linkNames(outDir, 'calico.mjs', ['calico', 'calico-ipam']);
  return outfile;
}

/**
 * The native plugin executables: `outDir`/calico, compiled from a split bundle, with
 * `outDir`/calico-ipam a symlink to it, for a CNI_PATH.
 */
export async function native(outDir = join(root, 'bin', 'native')) {
  const exe = await compileNative(build, await esbuildOptions(), join(outDir, 'calico'));
  await linkNames(outDir, 'calico', ['calico-ipam']);
  return exe;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = await bundle(process.argv[2]);
  process.stdout.write(`bundled ${out}\n`);
  const exe = await native(process.argv[2] && join(process.argv[2], 'native'));
  process.stdout.write(`compiled ${exe}\n`);
}
