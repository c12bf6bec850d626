/**
 * What the tests on the Kubernetes datastore do to their kube-apiserver besides running calicoctl:
 * kubectl with the server's admin kubeconfig, and the Calico CRDs installed and established.
 */
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findKubectl, type KubeApiServer } from '@calico-ts/datastore/testing';

/** The CRDs `pnpm crds` generates (deploy/crds). */
export const CRDS = join(dirname(fileURLToPath(import.meta.url)), '../../../../deploy/crds/calico-crds.yaml');

/** `kubectl --kubeconfig <admin> ARGS` with `input` on stdin; rejects with kubectl's stderr. */
export function kubectl(api: KubeApiServer, args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      findKubectl()!,
      ['--kubeconfig', api.kubeconfigPath, ...args],
      { maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) =>
        err ? reject(new Error(`kubectl ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout),
    );
    child.stdin!.end(input ?? '');
  });
}

/** Applies the Calico CRDs and waits until the API server serves them. */
export async function installCrds(api: KubeApiServer): Promise<void> {
  await kubectl(api, ['apply', '--server-side', '-f', CRDS]);
  await kubectl(api, ['wait', '--for', 'condition=established', '--timeout', '60s', 'crd', '--all']);
}
