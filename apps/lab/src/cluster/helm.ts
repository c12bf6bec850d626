/**
 * `helm install` on a `--kubelet` lab (I/O): the chart from the repository, run in the lab's etcd
 * namespace (the API server's) with the admin kubeconfig and Helm's cache, config and data in the
 * cluster's directory, so nothing of the machine's Helm is read or written.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { LabError } from '../errors.js';
import type { LabPlan } from '../plan.js';
import { REPO_ROOT } from '../prereqs.js';
import { runAsync } from '../processes.js';
import { nsenter, PATH } from '../up-network.js';

/** `helm install <release> <chart> <args> --set <values>`; what was run, for the progress line. */
export async function helmInstall(
  plan: LabPlan,
  clusterDir: string,
  helm: string,
  args: readonly string[],
  values: readonly string[],
): Promise<string> {
  const what = `helm install ${args.join(' ')}`;
  if (!existsSync(helm))
    throw new LabError('prerequisite', `${what} needs ${helm} (./scripts/setup.sh builds it)`);
  const [release, chart, ...rest] = args;
  const argv = [
    ...nsenter(plan.etcdNetns),
    helm,
    'install',
    release!,
    join(REPO_ROOT, chart!),
    ...rest,
    ...values.flatMap((v) => ['--set', v]),
  ];
  const r = await runAsync(argv, {
    env: {
      PATH,
      KUBECONFIG: plan.kube.kubeconfig,
      HELM_CACHE_HOME: join(clusterDir, 'helm-cache'),
      HELM_CONFIG_HOME: join(clusterDir, 'helm-config'),
      HELM_DATA_HOME: join(clusterDir, 'helm-data'),
    },
    timeoutMs: 180_000,
  });
  if (r.status !== 0) throw new LabError('setup', `${what} failed:\n${(r.stderr || r.stdout).trim()}`);
  return values.length > 0 ? `${what} --set ${values.join(' --set ')}` : what;
}
