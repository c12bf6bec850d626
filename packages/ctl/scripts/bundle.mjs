// Bundles src/main.ts into one ESM file, bin/calicoctl, with a node shebang, and compiles the
// program into a native executable, bin/native/calicoctl (bun build --compile), which starts much
// faster (see scripts/bundle-lib.mjs at the repository root). The native one is split at the
// dynamic imports of src/cli.ts (one per command): a run parses only the chunks its command
// reaches, and `calicoctl --version` or `--help` only the command tree. calicoctl talks to etcd
// over node:http2, so etcd3 is left out. The git revision, when there is one, is what
// `calicoctl version` shows as "Git commit".
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

function esbuildOptions() {
  return {
    root,
    plugins: [withoutEtcd3('calicoctl')],
    define: { __CALICOCTL_GIT_REVISION__: JSON.stringify(gitRevision()) },
  };
}

export async function bundle(outDir = join(root, 'bin')) {
  return bundleExecutable(build, { ...esbuildOptions(), outfile: join(outDir, 'calicoctl') });
}

/** The native executable `outDir`/calicoctl, compiled from a bundle split at dynamic imports. */
export async function native(outDir = join(root, 'bin', 'native')) {
  return compileNative(build, esbuildOptions(), join(outDir, 'calicoctl'));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = await bundle(process.argv[2]);
  process.stdout.write(`bundled ${out}\n`);
  const exe = await native(process.argv[2] && join(process.argv[2], 'native'));
  process.stdout.write(`compiled ${exe}\n`);
}
