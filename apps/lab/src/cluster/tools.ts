/**
 * The programs a `--kubelet` lab runs beside the API server: the Kubernetes node and control-plane
 * servers scripts/setup.sh builds from `k8s.io/kubernetes` (cached next to kube-apiserver, same
 * release), containerd, runc and ctr from Debian, and the images' OCI archives from `pnpm images`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { archivePath } from '@calico-ts/images/definitions';
import { LabError } from '../errors.js';
import { REPO_ROOT } from '../prereqs.js';
import { CLUSTER_IMAGES, type ClusterImage } from './plan.js';

/**
 * The helm scripts/setup.sh builds beside the Kubernetes servers, at the release tools/helm/go.mod
 * pins (as `pnpm helm` finds it); CALICO_HELM_BIN overrides.
 */
export function helmPath(dir: string): string {
  if (process.env.CALICO_HELM_BIN) return process.env.CALICO_HELM_BIN;
  const mod = readFileSync(join(REPO_ROOT, 'tools/helm/go.mod'), 'utf8');
  const version = /^\s*(?:require\s+)?helm\.sh\/helm\/v3\s+(v\S+)/m.exec(mod)?.[1] ?? 'unknown';
  return join(dir, `helm-${version}`);
}

const firstOf = (paths: string[], exists: (p: string) => boolean) => paths.find(exists) ?? paths[0]!;

export interface ClusterTools {
  readonly kubelet: string;
  readonly kubeProxy: string;
  readonly kubeScheduler: string;
  readonly kubeControllerManager: string;
  readonly containerd: string;
  readonly ctr: string;
  readonly runc: string;
  /** helm, built by scripts/setup.sh (for `--install helm`). */
  readonly helm: string;
  readonly archives: Readonly<Record<ClusterImage, string>>;
}

/**
 * The tools, found beside `kubeApiServer` (`kube-apiserver-<version>` → `kubelet-<version>`, …), or
 * an error naming every one that is missing and how to get it.
 */
export function clusterTools(
  kubeApiServer: string,
  exists: (p: string) => boolean = existsSync,
): ClusterTools {
  const dir = dirname(kubeApiServer);
  const version = kubeApiServer.slice(kubeApiServer.lastIndexOf('kube-apiserver') + 'kube-apiserver'.length);
  const k8s = (name: string) => join(dir, `${name}${version}`);
  const tools = {
    kubelet: k8s('kubelet'),
    kubeProxy: k8s('kube-proxy'),
    kubeScheduler: k8s('kube-scheduler'),
    kubeControllerManager: k8s('kube-controller-manager'),
    containerd: firstOf(['/usr/bin/containerd', '/usr/local/bin/containerd'], exists),
    ctr: firstOf(['/usr/bin/ctr', '/usr/local/bin/ctr'], exists),
    runc: firstOf(['/usr/sbin/runc', '/usr/bin/runc', '/usr/local/sbin/runc'], exists),
    helm: helmPath(dir),
  };
  const missing: string[] = [];
  for (const name of ['kubelet', 'kubeProxy', 'kubeScheduler', 'kubeControllerManager'] as const)
    if (!exists(tools[name])) missing.push(`${tools[name]} (./scripts/setup.sh builds it)`);
  for (const name of ['containerd', 'ctr', 'runc'] as const)
    if (!exists(tools[name]))
      missing.push(`${name} (./scripts/setup.sh installs Debian's containerd and runc)`);
  const archives = Object.fromEntries(CLUSTER_IMAGES.map((i) => [i, archivePath(i)])) as Record<
    ClusterImage,
    string
  >;
  const noImages = CLUSTER_IMAGES.filter((i) => !exists(archives[i]));
  if (noImages.length > 0)
    missing.push(
      `the image archives ${noImages.map((i) => archives[i]).join(', ')} (\`pnpm images\` builds them)`,
    );
  if (missing.length > 0) throw new LabError('prerequisite', `lab up --kubelet needs: ${missing.join('; ')}`);
  return { ...tools, archives };
}
