/**
 * `lab-eni`: the lab's stand-in for the Amazon VPC CNI on a `--kubelet` node (pure part; the
 * program is eni-cni-main.ts, which containerd runs as a CNI plugin).
 *
 * It wires a pod the way the Amazon VPC CNI does, so Calico installed for policy only
 * (`cni.type: AmazonVPC`, FELIX_INTERFACEPREFIX=eni) finds and polices it exactly as on EKS:
 *
 *   host side   veth `eni` + the first 11 hex of SHA-1 of "<namespace>.<pod>" (the CNI's own
 *               name, and the one Calico's Kubernetes datastore gives the pod's endpoint), up,
 *               route <pod IP>/32 dev eni… scope link
 *   pod side    eth0 <pod IP>/32, 169.254.1.1 dev eth0 scope link, default via 169.254.1.1, a
 *               permanent neighbour 169.254.1.1 → the host side's MAC
 *   address     the reference host-local IPAM plugin on the node's range (its Node's podCIDR, the
 *               lab's stand-in for the node's VPC subnet), delegated as a CNI plugin delegates
 *
 * Between nodes the fabric routes each node's range to it, as a VPC's route table does
 * (other-cni.ts). DEL releases the address and deletes the host side (idempotent: a missing link
 * or namespace is not an error).
 */
import { createHash } from 'node:crypto';

export const PLUGIN_TYPE = 'lab-eni';
export const SUPPORTED_VERSIONS = ['0.3.0', '0.3.1', '0.4.0', '1.0.0'];
/** The gateway every pod routes by, answered by the host side's MAC (as the Amazon VPC CNI). */
export const POD_GATEWAY = '169.254.1.1';

export interface EniArgs {
  readonly command: string;
  readonly containerId: string;
  readonly netns: string;
  readonly ifName: string;
  readonly namespace: string;
  readonly pod: string;
}

export class CniError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly details = '',
  ) {
    super(message);
  }
}

/** The CNI environment (CNI_COMMAND, CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME, CNI_ARGS). */
export function parseEnv(env: Readonly<Record<string, string | undefined>>): EniArgs {
  const args = new Map(
    (env.CNI_ARGS ?? '')
      .split(';')
      .filter((kv) => kv.includes('='))
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)] as const),
  );
  const command = env.CNI_COMMAND ?? '';
  const need = (name: string, v: string | undefined): string => {
    if (v === undefined || v === '') throw new CniError(4, `${name} is required for ${command}`);
    return v;
  };
  if (command === 'VERSION')
    return { command, containerId: '', netns: '', ifName: '', namespace: '', pod: '' };
  const adding = command === 'ADD' || command === 'CHECK';
  return {
    command,
    containerId: need('CNI_CONTAINERID', env.CNI_CONTAINERID),
    netns: adding ? need('CNI_NETNS', env.CNI_NETNS) : (env.CNI_NETNS ?? ''),
    ifName: need('CNI_IFNAME', env.CNI_IFNAME),
    namespace: need('K8S_POD_NAMESPACE in CNI_ARGS', args.get('K8S_POD_NAMESPACE')),
    pod: need('K8S_POD_NAME in CNI_ARGS', args.get('K8S_POD_NAME')),
  };
}

/** The host side's name: `eni` + 11 hex of SHA-1 of "<namespace>.<pod>", as the Amazon VPC CNI names it. */
export function hostInterfaceName(namespace: string, pod: string): string {
  return `eni${createHash('sha1').update(`${namespace}.${pod}`).digest('hex').slice(0, 11)}`;
}

/** `ip -batch` lines inside the pod's namespace once eth0 is there. */
export function podSideCommands(o: { ifName: string; ip: string; hostMac: string }): string[] {
  return [
    `addr add ${o.ip}/32 dev ${o.ifName}`,
    `link set ${o.ifName} up`,
    `route add ${POD_GATEWAY} dev ${o.ifName} scope link`,
    `route add default via ${POD_GATEWAY} dev ${o.ifName}`,
    `neigh replace ${POD_GATEWAY} lladdr ${o.hostMac} dev ${o.ifName} nud permanent`,
  ];
}

/** `ip -batch` lines on the node. */
export function hostSideCommands(o: { host: string; ip: string }): string[] {
  return [`link set ${o.host} up`, `route replace ${o.ip}/32 dev ${o.host} scope link`];
}

/** The one IPv4 address host-local gave ("198.19.1.5/24" → "198.19.1.5"). */
export function addressOf(ipamResult: unknown): string {
  const ips = (ipamResult as { ips?: { address?: string }[] } | null)?.ips ?? [];
  const v4 = ips.map((i) => i.address ?? '').find((a) => /^\d+\.\d+\.\d+\.\d+\/\d+$/.test(a));
  if (!v4) throw new CniError(11, `the IPAM plugin returned no IPv4 address: ${JSON.stringify(ipamResult)}`);
  return v4.slice(0, v4.indexOf('/'));
}

/** The ADD result (CNI 0.3.0 and later shape). */
export function addResult(o: {
  cniVersion: string;
  host: string;
  hostMac: string;
  ifName: string;
  podMac: string;
  netns: string;
  ip: string;
}): Record<string, unknown> {
  return {
    cniVersion: o.cniVersion,
    interfaces: [
      { name: o.host, mac: o.hostMac },
      { name: o.ifName, mac: o.podMac, sandbox: o.netns },
    ],
    ips: [
      {
        ...(o.cniVersion.startsWith('0.') ? { version: '4' } : {}),
        address: `${o.ip}/32`,
        gateway: POD_GATEWAY,
        interface: 1,
      },
    ],
    routes: [{ dst: '0.0.0.0/0', gw: POD_GATEWAY }],
    dns: {},
  };
}
