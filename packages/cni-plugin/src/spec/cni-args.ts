/**
 * CNI_ARGS: `KEY=VALUE` pairs separated by `;` (pure).
 *
 * The keys Calico reads are `K8S_POD_NAMESPACE`, `K8S_POD_NAME`, `K8S_POD_INFRA_CONTAINER_ID` and
 * `IP`; every other key (including `IgnoreUnknown`) is ignored. A pair without `=` is an error
 * (code 4 naming CNI_ARGS), as in the reference library. The workload runs under Kubernetes when
 * both pod namespace and name are set; otherwise it is a plain `cni` workload in namespace `default`.
 */
import { CniPluginError } from '../errors.js';
import { isIP } from './ip.js';

export interface CniArgs {
  /** Every pair, in order, later duplicates winning. */
  raw: Record<string, string>;
  podNamespace?: string;
  podName?: string;
  infraContainerId?: string;
  /** A specific address asked for with `IP=` (calico-ipam assigns it instead of auto-assigning). */
  ip?: string;
}

export function parseCniArgs(text: string | undefined): CniArgs {
  const raw: Record<string, string> = {};
  if (text) {
    for (const pair of text.split(';')) {
      if (pair.trim() === '') continue;
      const eq = pair.indexOf('=');
      if (eq <= 0) {
        throw new CniPluginError('invalid-env', `CNI_ARGS: invalid pair "${pair}" (expected KEY=VALUE)`);
      }
      raw[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
  }
  const out: CniArgs = { raw };
  const take = (k: string) => (raw[k] !== undefined && raw[k] !== '' ? raw[k] : undefined);
  const ns = take('K8S_POD_NAMESPACE');
  const name = take('K8S_POD_NAME');
  const infra = take('K8S_POD_INFRA_CONTAINER_ID');
  const ip = take('IP');
  if (ns !== undefined) out.podNamespace = ns;
  if (name !== undefined) out.podName = name;
  if (infra !== undefined) out.infraContainerId = infra;
  if (ip !== undefined) {
    if (!isIP(ip)) throw new CniPluginError('invalid-env', `CNI_ARGS: IP=${ip} is not an IP address`);
    out.ip = ip;
  }
  return out;
}

export type Orchestrator = 'k8s' | 'cni';

export interface WorkloadIdentity {
  orchestrator: Orchestrator;
  /** The pod's namespace for k8s; `default` for every other workload. */
  namespace: string;
  /** Set for k8s only. */
  pod?: string;
}

export function workloadIdentity(args: CniArgs): WorkloadIdentity {
  if (args.podNamespace !== undefined && args.podName !== undefined) {
    return { orchestrator: 'k8s', namespace: args.podNamespace, pod: args.podName };
  }
  return { orchestrator: 'cni', namespace: 'default' };
}
