/**
 * The two resources every test cluster starts from, as calico-node would have written them on a
 * fresh cluster: a ready ClusterInformation and the default IPv4 pool (198.19.0.0/16, /26 blocks,
 * no encapsulation, no NAT).
 */
import type { Resource } from '@calico-ts/api';

export interface ClusterSeedOptions {
  /** Default: a fixed GUID, so runs are reproducible. */
  clusterGUID?: string;
  /** Default 198.19.0.0/16 (inside the test range 198.18.0.0/15). */
  poolCidr?: string;
}

export function clusterSeed(options: ClusterSeedOptions = {}): Resource[] {
  return [
    {
      apiVersion: 'projectcalico.org/v3',
      kind: 'ClusterInformation',
      metadata: { name: 'default' },
      spec: {
        clusterGUID: options.clusterGUID ?? 'b7d4a1c0f3e24a6b9d1e2f3a4b5c6d7e',
        clusterType: 'k8s,bgp',
        calicoVersion: 'v3.32.1',
        datastoreReady: true,
      },
    },
    {
      apiVersion: 'projectcalico.org/v3',
      kind: 'IPPool',
      metadata: { name: 'default-ipv4-ippool' },
      spec: {
        cidr: options.poolCidr ?? '198.19.0.0/16',
        blockSize: 26,
        ipipMode: 'Never',
        vxlanMode: 'Never',
        natOutgoing: false,
        nodeSelector: 'all()',
      },
    },
  ] as Resource[];
}
