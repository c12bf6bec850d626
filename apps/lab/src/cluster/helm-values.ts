/**
 * `lab up --kubelet --install operator-helm --helm-values eks|aks|FILE` (pure): the values the
 * operator's chart is installed with, and what the cluster must have for the Installation they give.
 *
 *   eks   upstream's Helm guide `installation: {kubernetesProvider: EKS}`, as written: Calico for
 *         policy only beside the Amazon VPC CNI, so the lab gives every node that CNI's stand-in
 *         (lab-eni, other-cni.ts) and the fabric routes each node's range, as a VPC does
 *   aks   upstream's `installation: {kubernetesProvider: AKS, cni: {type: Calico}, calicoNetwork:
 *         {bgp: Disabled, ipPools: [{cidr: 10.244.0.0/16, encapsulation: VXLAN}]}}` with the pool's
 *         CIDR moved into the lab's 198.19.0.0/16 (the lab uses no address outside 198.18.0.0/15);
 *         the Nodes carry AKS' `kubernetes.azure.com/cluster` label, which upstream's Typha affinity
 *         on AKS requires
 *   FILE  a values file as written; its pools must be inside 198.18.0.0/15
 *
 * What the Installation means for the cluster is the operator's own reading of it
 * (`resolveInstallation`): a CNI other than the Amazon VPC CNI's or Calico's has no stand-in here,
 * and an Installation the operator refuses is refused before the lab is built, with its reasons.
 */
import { resolveInstallation } from '@calico-ts/operator';
import { parseDocument } from 'yaml';
import { LabError } from '../errors.js';
import { HELM_VALUES_PRESETS } from './cluster-plan.js';
import { CLUSTER_CIDR } from './plan.js';

/** Where the presets are, from the repository's root: the chart tests' copies of upstream's files. */
export const PRESET_FILES: Readonly<Record<(typeof HELM_VALUES_PRESETS)[number], string>> = {
  eks: 'deploy/test/values/eks.yaml',
  aks: 'deploy/test/values/aks.yaml',
};

export const isPreset = (v: string): v is (typeof HELM_VALUES_PRESETS)[number] =>
  (HELM_VALUES_PRESETS as readonly string[]).includes(v);

/** What the lab gives the cluster before `helm install`, beyond what every lab has. */
export interface ClusterNeeds {
  /** The pods' CNI is not Calico's: the lab's stand-in for the Amazon VPC CNI on every node. */
  readonly eniCni: boolean;
  /** AKS: the label every AKS node carries (`kubernetes.azure.com/cluster`). */
  readonly aksNodeLabel: boolean;
}

export interface LabValues {
  /** The values file's text as the lab installs it. */
  readonly text: string;
  /** The Installation's spec the chart makes of them (`installation` without `enabled`). */
  readonly spec: Record<string, unknown>;
  readonly needs: ClusterNeeds;
}

/** `a.b.c.d/n` inside 198.18.0.0/15. */
function inLabRange(cidr: string): boolean {
  const m = /^198\.(18|19)\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(cidr.trim());
  return m !== null && Number(m[2]) <= 255 && Number(m[3]) <= 255 && Number(m[4]) >= 15 && Number(m[4]) <= 32;
}

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The values as the lab installs them, from the file's text: a preset with its pools' CIDR the lab's
 * (`preset`), a file of the user's checked (`name` says which file in messages).
 */
export function labOperatorValues(text: string, name: string, preset: boolean): LabValues {
  const doc = parseDocument(text);
  if (doc.errors.length > 0) throw new LabError('usage', `--helm-values ${name}: ${doc.errors[0]!.message}`);
  const pools = doc.getIn(['installation', 'calicoNetwork', 'ipPools']) as { items?: unknown[] } | undefined;
  const count = pools?.items?.length ?? 0;
  if (preset)
    for (let i = 0; i < count; i++)
      doc.setIn(['installation', 'calicoNetwork', 'ipPools', i, 'cidr'], CLUSTER_CIDR);
  const values = (doc.toJS() ?? {}) as Record<string, unknown>;
  if (!isObj(values)) throw new LabError('usage', `--helm-values ${name}: not a map of values`);
  const installation = isObj(values.installation) ? values.installation : {};
  const { enabled: _, ...spec } = installation;
  const network = isObj(spec.calicoNetwork) ? spec.calicoNetwork : {};
  const given = Array.isArray(network.ipPools) ? (network.ipPools as unknown[]) : undefined;
  for (const [i, p] of (given ?? []).entries()) {
    const cidr = isObj(p) && typeof p.cidr === 'string' ? p.cidr : '';
    if (!inLabRange(cidr))
      throw new LabError(
        'usage',
        `--helm-values ${name}: installation.calicoNetwork.ipPools[${i}].cidr ${JSON.stringify(cidr)} is ` +
          `outside 198.18.0.0/15, the only addresses the lab uses; use ${CLUSTER_CIDR}`,
      );
  }
  const r = resolveInstallation({ metadata: { name: 'default' }, spec });
  if (!r.ok)
    throw new LabError(
      'usage',
      `--helm-values ${name}: the operator would refuse this Installation:\n  ${r.errors.join('\n  ')}`,
    );
  const { provider, cni, ipam } = r.config.platform;
  if (cni !== 'Calico' && cni !== 'AmazonVPC')
    throw new LabError(
      'usage',
      `--helm-values ${name}: the pods' CNI would be ${cni}; the lab has a stand-in for the Amazon VPC CNI ` +
        'only (cni.type AmazonVPC, or kubernetesProvider EKS)',
    );
  if (cni === 'Calico' && ipam === 'Calico' && given === undefined)
    throw new LabError(
      'usage',
      `--helm-values ${name}: no installation.calicoNetwork.ipPools, so the chart would add 192.168.0.0/16, ` +
        `outside the lab's addresses; give a pool in ${CLUSTER_CIDR}`,
    );
  return {
    text: doc.toString({ lineWidth: 0 }),
    spec,
    needs: { eniCni: cni === 'AmazonVPC', aksNodeLabel: provider === 'AKS' },
  };
}
