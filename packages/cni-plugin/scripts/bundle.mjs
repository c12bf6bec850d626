// Bundles src/main.ts into one ESM file, bin/calico.mjs, with a node shebang, and links the two
// plugin names to it: bin/calico and bin/calico-ipam (the name picks the plugin). A runtime's
// CNI_PATH can point at bin/. Then compiles the bundle into a native executable that starts much
// faster (bun build --compile), bin/native/calico, with bin/native/calico-ipam linked to it: a
// CNI_PATH can point at bin/native/ instead (see scripts/bundle-lib.mjs at the repository root).
// The plugin talks to etcd over node:http2, so etcd3 is left out.
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { bundleExecutable, compileNative, linkNames, withoutEtcd3 } from '../../../scripts/bundle-lib.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

export async function bundle(outDir = join(root, 'bin')) {
  const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8'));
  const outfile = await bundleExecutable(build, {
    root,
    outfile: join(outDir, 'calico.mjs'),
    plugins: [withoutEtcd3('the CNI plugin')],
    define: { __CALICO_TS_VERSION__: JSON.stringify(`v${pkg.version}`) },
  });
  await linkNames(outDir, 'calico.mjs', ['calico', 'calico-ipam']);
  return outfile;
}

/**
 * bin/calico.mjs (bundling it first unless given) compiled into `outDir`/calico, with
 * `outDir`/calico-ipam a symlink to it: the native plugin executables, for a CNI_PATH.
 */
export async function native(outDir = join(root, 'bin', 'native'), bundleFile = undefined) {
  const exe = await compileNative(root, bundleFile ?? (await bundle()), join(outDir, 'calico'));
  await linkNames(outDir, 'calico', ['calico-ipam']);
  return exe;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = await bundle(process.argv[2]);
  process.stdout.write(`bundled ${out}\n`);
  const exe = await native(process.argv[2] && join(process.argv[2], 'native'), out);
  process.stdout.write(`compiled ${exe}\n`);
}
