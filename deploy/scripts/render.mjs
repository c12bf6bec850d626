#!/usr/bin/env node
// Renders deploy/manifests/ from the Helm chart, after syncing the chart's copy of the CRDs from
// deploy/crds/ (which `pnpm crds` generates).
//
//   pnpm --filter @calico-ts/deploy render            (re)write the chart's CRDs and the manifests
//   pnpm --filter @calico-ts/deploy render --check    write nothing; exit 1 if anything differs
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { chartCrds, crdsSource, deployDir, findHelm, MANIFESTS, renderManifest, root } from './helm.mjs';

const check = process.argv.includes('--check');
const helm = findHelm();
if (!helm) {
  console.error('render: no helm binary; run scripts/setup.sh to build it');
  process.exit(1);
}

const stale = [];
const write = (path, text) => {
  const old = existsSync(path) ? readFileSync(path, 'utf8') : undefined;
  if (old === text) return;
  stale.push(relative(root, path));
  if (!check) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
  }
};
// The CRDs first: the Kubernetes-datastore manifest includes the chart's copy.
write(chartCrds, readFileSync(crdsSource, 'utf8'));
if (check && stale.length > 0) {
  console.error(`${stale[0]} differs from deploy/crds/calico-crds.yaml; run the render script`);
  process.exit(1);
}
for (const m of MANIFESTS) {
  write(join(deployDir, 'manifests', m.file), renderManifest(helm, m));
}
if (check) {
  for (const s of stale) console.error(`${s} is out of date`);
  if (stale.length > 0) {
    console.error('run `pnpm --filter @calico-ts/deploy render`');
    process.exit(1);
  }
  console.log('deploy/manifests and the chart CRDs are up to date');
} else {
  console.log(stale.length ? `written: ${stale.join(', ')}` : 'nothing changed');
}
