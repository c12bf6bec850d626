// Bundles src/main.ts into one ESM file, bin/calicoctl, with a node shebang, and compiles that into a
// native executable, bin/native/calicoctl (bun build --compile), which starts much faster (see
// scripts/bundle-lib.mjs at the repository root). calicoctl talks to etcd over node:http2, so
// etcd3 is left out. The git revision, when there is one, is what `calicoctl version` shows as
// "Git commit".
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { bundleExecutable, compileNative, withoutEtcd3 } from '../../../scripts/bundle-lib.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function gitRevision() {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

export async function bundle(outDir = join(root, 'bin')) {
  return bundleExecutable(build, {
    root,
    outfile: join(outDir, 'calicoctl'),
    plugins: [withoutEtcd3('calicoctl')],
    define: { __CALICOCTL_GIT_REVISION__: JSON.stringify(gitRevision()) },
  });
}

/** bin/calicoctl (bundling it first unless given) compiled into `outDir`/calicoctl. */
export async function native(outDir = join(root, 'bin', 'native'), bundleFile = undefined) {
  return compileNative(root, bundleFile ?? (await bundle()), join(outDir, 'calicoctl'));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = await bundle(process.argv[2]);
  process.stdout.write(`bundled ${out}\n`);
  const exe = await native(process.argv[2] && join(process.argv[2], 'native'), out);
  process.stdout.write(`compiled ${exe}\n`);
}
