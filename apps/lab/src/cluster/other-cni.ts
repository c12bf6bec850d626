/**
 * The pods' own CNI on a `--kubelet` node when Calico polices only (pure): what the lab writes into
 * the node's /opt/cni/bin and /etc/cni/net.d before Calico is installed, as the Amazon VPC CNI's
 * aws-node DaemonSet has done on an EKS node before a user installs Calico.
 *
 *   /etc/cni/net.d/10-lab-eni.conflist   the lab-eni plugin (eni-cni.ts), host-local IPAM on the
 *                                        node's range (its Node's spec.podCIDR), its state in the
 *                                        node's directory
 *   /opt/cni/bin/lab-eni                 a shell wrapper that runs the built eni-cni-main.js
 *   /opt/cni/bin/host-local, loopback    the reference plugins (containerd sets up each pod's lo
 *                                        with `loopback`)
 *
 * No piece of Calico's CNI is there: the operator renders no install-cni for `cni.type: AmazonVPC`,
 * so this configuration stays the node's only one.
 */
import { PLUGIN_TYPE } from './eni-cni.js';

export const ENI_CONFLIST = '10-lab-eni.conflist';
/** The reference plugins the node's bin directory links to (Debian's containernetworking-plugins). */
export const REFERENCE_PLUGINS = ['host-local', 'loopback'] as const;
/** The fabric's MTU: the node's eth0. */
const MTU = 1500;

/** The network configuration list containerd reads for every pod of the node. */
export function eniConflist(podCidr: string, dataDir: string): Record<string, unknown> {
  return {
    cniVersion: '1.0.0',
    name: PLUGIN_TYPE,
    plugins: [
      {
        type: PLUGIN_TYPE,
        mtu: MTU,
        ipam: { type: 'host-local', ranges: [[{ subnet: podCidr }]], dataDir },
      },
    ],
  };
}

const shQuote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/** /opt/cni/bin/lab-eni: runs the plugin's program with this Node.js. */
export function eniWrapper(node: string, program: string): string {
  return `#!/bin/sh
# calico-lab: the node's stand-in for the Amazon VPC CNI (apps/lab/src/cluster/eni-cni.ts)
exec ${shQuote(node)} ${shQuote(program)} "$@"
`;
}

/** Node name → spec.podCIDR, from `kubectl get nodes -o json`; nodes without one are absent. */
export function nodePodCidrs(list: {
  items?: { metadata?: { name?: string }; spec?: { podCIDR?: string } }[];
}): Map<string, string> {
  const m = new Map<string, string>();
  for (const n of list.items ?? [])
    if (n.metadata?.name && n.spec?.podCIDR) m.set(n.metadata.name, n.spec.podCIDR);
  return m;
}
