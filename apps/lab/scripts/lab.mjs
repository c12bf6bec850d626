#!/usr/bin/env node
// `pnpm lab …` starts here: if the lab or the executables it runs (calico-node, the CNI plugin,
// calicoctl, calico-kube-controllers) are not built yet, build them (turbo, only what the lab
// needs), then run the lab.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const app = fileURLToPath(new URL('..', import.meta.url));
const root = join(app, '..', '..');
const needed = [
  join(app, 'dist/main.js'),
  join(root, 'apps/calico-node/bin/calico-node'),
  join(root, 'packages/cni-plugin/bin/calico.mjs'),
  join(root, 'packages/ctl/bin/calicoctl'),
  join(root, 'apps/kube-controllers/dist/main.js'),
];
const missing = needed.filter((f) => !existsSync(f));
if (missing.length > 0) {
  process.stderr.write(
    `lab: not built yet (${missing.map((f) => f.slice(root.length + 1)).join(', ')}); building the lab and what it runs…\n`,
  );
  const r = spawnSync(
    'pnpm',
    [
      'exec',
      'turbo',
      'run',
      'build',
      '--filter=@calico-ts/lab...',
      '--filter=@calico-ts/kube-controllers-app...',
      '--output-logs=errors-only',
    ],
    {
      cwd: root,
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
  const still = needed.filter((f) => !existsSync(f));
  if (r.status !== 0 || still.length > 0) {
    process.stderr.write('lab: the build failed; run `pnpm install && pnpm build` and look at its errors\n');
    process.exit(1);
  }
  process.stderr.write('lab: built\n');
}
// `lab up --kubelet` imports the images' OCI archives into every node's containerd: the first
// time, make them (`pnpm images`: a Debian root filesystem once, then the images; a few minutes).
const argv = process.argv.slice(2);
if (argv.includes('up') && argv.some((a) => a === '--kubelet')) {
  const archives = ['node', 'cni', 'kube-controllers', 'ctl', 'pause', 'httpd'].map((i) =>
    join(root, 'images/out', `${i}.oci.tar`),
  );
  const absent = archives.filter((f) => !existsSync(f));
  if (absent.length > 0 && !argv.includes('--help') && !argv.includes('-h')) {
    process.stderr.write(
      `lab: no image archives yet (${absent.map((f) => f.slice(root.length + 1)).join(', ')}); running pnpm images…\n`,
    );
    const r = spawnSync('pnpm', ['images'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
    if (r.status !== 0 || archives.some((f) => !existsSync(f))) {
      process.stderr.write('lab: pnpm images failed; run it by hand and look at its errors\n');
      process.exit(1);
    }
  }
}
await import(pathToFileURL(join(app, 'dist/main.js')).href);
