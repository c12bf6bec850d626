/**
 * What the `lab up --kubelet` scenarios share: their prerequisites (the Kubernetes node servers,
 * containerd, busybox, the lab's own), and an HTTP GET from a pod with busybox `nc`, whose answer
 * from the httpd image is the answering pod's name.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type LabDriver, missingPrerequisites } from './lab-driver.js';

const CACHE = '/var/cache/calico-ts/bin';
const KUBERNETES = 'v1.36.3';

/** What a `--kubelet` lab needs beyond the lab's own prerequisites; `extra` paths too. */
export function missingForCluster(extra: readonly string[] = []): string[] {
  const missing = missingPrerequisites();
  for (const s of ['kubelet', 'kube-proxy', 'kube-scheduler', 'kube-controller-manager'])
    if (!existsSync(join(CACHE, `${s}-${KUBERNETES}`))) missing.push(`${s} (scripts/setup.sh builds it)`);
  for (const p of ['/usr/bin/containerd', '/usr/bin/ctr', '/bin/busybox', ...extra])
    if (!existsSync(p)) missing.push(`${p} (scripts/setup.sh)`);
  for (const t of ['podman', 'buildah', 'runc'])
    if (!existsSync(`/usr/bin/${t}`) && !existsSync(`/usr/sbin/${t}`))
      missing.push(`${t} (scripts/setup.sh)`);
  return missing;
}

/** `GET /` from pod `from` to `ip:port`; the body's last line (the pod's name), or '' on no answer. */
export async function httpGet(
  lab: LabDriver,
  from: string,
  ip: string,
  port = 80,
  timeoutS = 2,
): Promise<string> {
  const r = await lab.run(
    'kubectl',
    'exec',
    from,
    '--',
    'sh',
    '-c',
    `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w ${timeoutS} ${ip} ${port} | tail -n 1`,
  );
  return r.code === 0 ? r.stdout.trim() : '';
}
