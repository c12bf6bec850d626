// Where the helm binary is and how the checked-in manifests are made from the chart. Shared by
// render.mjs and the tests, so both render exactly the same way.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const root = join(import.meta.dirname, '..', '..');
export const deployDir = join(root, 'deploy');
export const chartDir = join(deployDir, 'helm', 'calico-ts');
export const crdsSource = join(deployDir, 'crds', 'calico-crds.yaml');
export const chartCrds = join(chartDir, 'files', 'calico-crds.yaml');

/** The helm release pinned in tools/helm/go.mod, e.g. `v3.22.0`. */
export function helmVersion() {
  const mod = readFileSync(join(root, 'tools', 'helm', 'go.mod'), 'utf8');
  const m = /^\s*(?:require\s+)?helm\.sh\/helm\/v3\s+(v\S+)/m.exec(mod);
  if (!m) throw new Error('tools/helm/go.mod pins no helm.sh/helm/v3 version');
  return m[1];
}

/** `CALICO_HELM_BIN`, else the binary scripts/setup.sh caches; undefined if it is not there. */
export function findHelm() {
  const bin = process.env.CALICO_HELM_BIN || `/var/cache/calico-ts/bin/helm-${helmVersion()}`;
  return existsSync(bin) ? bin : undefined;
}

/**
 * Each checked-in manifest: its file in deploy/manifests and the values files it is rendered with.
 * The release is installed into kube-system, as upstream's manifests are.
 */
export const MANIFESTS = [
  {
    file: 'calico.yaml',
    values: [],
    title: 'the Kubernetes datastore (CRDs; values.yaml)',
  },
  {
    file: 'calico-etcd.yaml',
    values: ['values-etcd.yaml'],
    title: 'the etcd datastore (values-etcd.yaml)',
  },
  {
    file: 'calico-policy-only.yaml',
    values: ['values-policy-only.yaml'],
    title: 'policy only beside another CNI, on the Kubernetes datastore (values-policy-only.yaml)',
  },
];

/** helm template of the chart with the given values files (relative to the chart), as text. */
export function helmTemplate(helm, values = [], extraArgs = []) {
  return execFileSync(
    helm,
    [
      'template',
      'calico-ts',
      chartDir,
      '--namespace',
      'kube-system',
      ...values.flatMap((v) => ['--values', join(chartDir, v)]),
      ...extraArgs,
    ],
    {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, HELM_CACHE_HOME: '/tmp/calico-ts-helm-cache' },
    },
  );
}

/** The text of a checked-in manifest: a header naming its source, then helm's output. */
export function renderManifest(helm, manifest) {
  const how = ['pnpm helm template calico-ts deploy/helm/calico-ts --namespace kube-system']
    .concat(manifest.values.map((v) => `--values deploy/helm/calico-ts/${v}`))
    .join(' ');
  return (
    `# calico-ts for ${manifest.title}.\n` +
    '# Generated from the chart deploy/helm/calico-ts by `pnpm --filter @calico-ts/deploy render`\n' +
    `# (${how}). Do not edit: change the chart and render again.\n` +
    helmTemplate(helm, manifest.values)
  );
}

/** The tigera-operator chart (upstream's operator chart), installed as `calico` in tigera-operator. */
export const operatorChartDir = join(deployDir, 'helm', 'tigera-operator');

/** helm template of the tigera-operator chart, CRDs included, with values files and more args. */
export function operatorChartTemplate(helm, values = [], extraArgs = []) {
  return execFileSync(
    helm,
    [
      'template',
      'calico',
      operatorChartDir,
      '--namespace',
      'tigera-operator',
      '--include-crds',
      ...values.flatMap((v) => ['--values', v]),
      ...extraArgs,
    ],
    {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, HELM_CACHE_HOME: '/tmp/calico-ts-helm-cache' },
    },
  );
}
