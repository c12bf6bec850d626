/**
 * The two ends of an explained flow: a pod (`NAMESPACE/POD`, found among the WorkloadEndpoints by
 * their `pod` field or their name), a host endpoint (by name: its first IPv4 expected IP) or an
 * address. Each failure names what was wrong: no such pod, a pod with no IPv4 address, a host
 * endpoint without expected IPs, an address that is not IPv4.
 */
import type { WorkloadEndpoint } from '@calico-ts/api';
import { parseCidrOrIP, parseIP } from '@calico-ts/api/net';
import type { PolicyWorld } from '@calico-ts/api/policy-eval';
import { CtlError } from '../errors.js';

export type EndSpec =
  | { kind: 'pod'; side: 'from' | 'to'; namespace: string; pod: string }
  | { kind: 'ip'; side: 'from' | 'to'; ip: string }
  | { kind: 'hep'; side: 'from' | 'to'; name: string };

export interface ResolvedEnd {
  readonly ip: string;
  /** How the user named it: `pod shop/web`, `hostendpoint node1-eth0`, `address 192.0.2.9`. */
  readonly described: string;
}

function ipv4Of(networks: readonly string[]): string | undefined {
  for (const n of networks) {
    if (parseCidrOrIP(n)?.family === 4) return n.split('/')[0]!;
  }
  return undefined;
}

function findPod(world: PolicyWorld, namespace: string, pod: string): WorkloadEndpoint[] {
  const inNs = world.workloadEndpoints.filter((w) => (w.metadata.namespace ?? 'default') === namespace);
  const byPod = inNs.filter((w) => w.spec.pod === pod);
  return byPod.length > 0 ? byPod : inNs.filter((w) => w.metadata.name === pod);
}

export function resolveEnd(spec: EndSpec, world: PolicyWorld): ResolvedEnd {
  const flag = `--${spec.side}`;
  if (spec.kind === 'ip') {
    const ip = parseIP(spec.ip);
    if (!ip) throw new CtlError('usage', `${flag}-ip must be an IP address, not '${spec.ip}'`);
    if (ip.family !== 4)
      throw new CtlError('unsupported', `${flag}-ip ${spec.ip}: only IPv4 flows are explained`);
    return { ip: spec.ip, described: `address ${spec.ip}` };
  }
  if (spec.kind === 'hep') {
    const hep = world.hostEndpoints?.find((h) => h.metadata.name === spec.name);
    if (!hep) throw new CtlError('not-found', `${flag}-hep: HostEndpoint ${spec.name} not found`);
    const ip = ipv4Of(hep.spec.expectedIPs ?? []);
    if (!ip) {
      throw new CtlError(
        'invalid-input',
        `${flag}-hep: HostEndpoint ${spec.name} has no IPv4 address in spec.expectedIPs`,
      );
    }
    return { ip, described: `hostendpoint ${spec.name}` };
  }
  const found = findPod(world, spec.namespace, spec.pod);
  const name = `${spec.namespace}/${spec.pod}`;
  if (found.length === 0) {
    throw new CtlError(
      'not-found',
      `${flag}: pod ${name} not found (no WorkloadEndpoint in namespace ${spec.namespace} for pod ${spec.pod})`,
    );
  }
  for (const w of found) {
    const ip = ipv4Of(w.spec.ipNetworks ?? []);
    if (ip) return { ip, described: `pod ${name}` };
  }
  throw new CtlError(
    'invalid-input',
    `${flag}: pod ${name} has no IPv4 address (its WorkloadEndpoint lists none; is the pod running?)`,
  );
}
