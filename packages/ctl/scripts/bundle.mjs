// Bundles src/main.ts into one ESM file, bin/calicoctl, with a node shebang, and compiles the
// program into a native executable, bin/native/calicoctl (bun build --compile), which starts much
// faster (see scripts/bundle-lib.mjs at the repository root). The native one is split at the
// dynamic imports of src/cli.ts (one per command): a run parses only the chunks its command
// reaches, and `calicoctl --version` or `--help` only the command tree. calicoctl talks to etcd
// over node:http2, so etcd3 is left out. The git revision, when there is one, is what
// `calicoctl version` shows as "Git commit".
//
// @kubernetes/client-node (5 MB of the 6.5 MB the Node bundle would be; Node parses all of it at
// every start, ~0.2-0.3 s here) is needed only for kubeconfig users with exec or auth-provider
// credential plugins; every other kubeconfig the datastore reads itself. The native executable
// keeps it as a chunk loaded only for such a kubeconfig; the Node bundle leaves it out and says so
// if one is met.
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

/** `@kubernetes/client-node` as a stub whose KubeConfig says what to use instead. */
function withoutClientNode() {
  const message =
    'this calicoctl (bin/calicoctl, the Node bundle) cannot run the kubeconfig credential plugins (exec, auth-provider) this kubeconfig names: use bin/native/calicoctl, or a kubeconfig with a token or a client certificate';
  return {
    name: 'without-client-node',
    setup(b) {
      b.onResolve({ filter: /^@kubernetes\/client-node$/ }, () => ({
        path: 'client-node',
        namespace: 'without-client-node',
      }));
      b.onLoad({ filter: /.*/, namespace: 'without-client-node' }, () => ({
        contents: `export class KubeConfig { constructor() { throw new Error(${JSON.stringify(message)}); } }`,
        loader: 'js',
      }));
    },
  };
}

export async function bundle(outDir = join(root, 'bin')) {
  const options = esbuildOptions();
  return bundleExecutable(build, {
    ...options,
    plugins: [...options.plugins, withoutClientNode()],
    outfile: join(outDir, 'calicoctl'),
  });
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
