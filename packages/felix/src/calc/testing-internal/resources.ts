/** Small builders for the resources the calculation graph tests feed in. */
import type {
  GlobalNetworkPolicy,
  GlobalNetworkSet,
  HostEndpoint,
  IPPool,
  NetworkPolicy,
  NetworkSet,
  Profile,
  Rule,
  StagedGlobalNetworkPolicy,
  StagedKubernetesNetworkPolicy,
  StagedNetworkPolicy,
  Tier,
  WorkloadEndpoint,
} from '@calico-ts/api';
import type { CalcResource } from '../types.js';

const V3 = 'projectcalico.org/v3' as const;

export function wep(
  namespace: string,
  name: string,
  opts: {
    node?: string;
    labels?: Record<string, string>;
    ips?: string[];
    iface?: string;
    profiles?: string[];
    ports?: { name: string; protocol: 'TCP' | 'UDP' | 'SCTP'; port: number }[];
  } = {},
): WorkloadEndpoint {
  return {
    apiVersion: V3,
    kind: 'WorkloadEndpoint',
    metadata: { name, namespace, labels: { ...opts.labels } },
    spec: {
      node: opts.node ?? 'node1',
      orchestrator: 'k8s',
      ipNetworks: opts.ips ?? [],
      interfaceName: opts.iface ?? `cali${name.replace(/[^a-z0-9]/g, '').slice(0, 11)}`,
      profiles: opts.profiles ?? [],
      ...(opts.ports ? { ports: opts.ports } : {}),
    },
  };
}

export function hep(
  name: string,
  opts: {
    node?: string;
    labels?: Record<string, string>;
    ips?: string[];
    iface?: string;
    profiles?: string[];
  } = {},
): HostEndpoint {
  return {
    apiVersion: V3,
    kind: 'HostEndpoint',
    metadata: { name, labels: { ...opts.labels } },
    spec: {
      node: opts.node ?? 'node1',
      interfaceName: opts.iface ?? 'eth0',
      expectedIPs: opts.ips ?? [],
      profiles: opts.profiles ?? [],
    },
  };
}

export function gnp(
  name: string,
  spec: Partial<GlobalNetworkPolicy['spec']> & { selector?: string },
): GlobalNetworkPolicy {
  return { apiVersion: V3, kind: 'GlobalNetworkPolicy', metadata: { name }, spec: { ...spec } };
}

export function np(
  namespace: string,
  name: string,
  spec: Partial<NetworkPolicy['spec']> & { selector?: string },
): NetworkPolicy {
  return { apiVersion: V3, kind: 'NetworkPolicy', metadata: { name, namespace }, spec: { ...spec } };
}

export function snp(
  namespace: string,
  name: string,
  spec: Partial<StagedNetworkPolicy['spec']> & { selector?: string },
): StagedNetworkPolicy {
  return { apiVersion: V3, kind: 'StagedNetworkPolicy', metadata: { name, namespace }, spec: { ...spec } };
}

export function sgnp(
  name: string,
  spec: Partial<StagedGlobalNetworkPolicy['spec']> & { selector?: string },
): StagedGlobalNetworkPolicy {
  return { apiVersion: V3, kind: 'StagedGlobalNetworkPolicy', metadata: { name }, spec: { ...spec } };
}

export function sknp(
  namespace: string,
  name: string,
  spec: StagedKubernetesNetworkPolicy['spec'],
): StagedKubernetesNetworkPolicy {
  return { apiVersion: V3, kind: 'StagedKubernetesNetworkPolicy', metadata: { name, namespace }, spec };
}

export function tier(name: string, order: number | undefined, defaultAction?: 'Deny' | 'Pass'): Tier {
  return {
    apiVersion: V3,
    kind: 'Tier',
    metadata: { name },
    spec: { ...(order !== undefined ? { order } : {}), ...(defaultAction ? { defaultAction } : {}) },
  };
}

export function profile(
  name: string,
  opts: { ingress?: Rule[]; egress?: Rule[]; labelsToApply?: Record<string, string> } = {},
): Profile {
  return { apiVersion: V3, kind: 'Profile', metadata: { name }, spec: { ...opts } };
}

export function netSet(
  namespace: string,
  name: string,
  labels: Record<string, string>,
  nets: string[],
): NetworkSet {
  return { apiVersion: V3, kind: 'NetworkSet', metadata: { name, namespace, labels }, spec: { nets } };
}

export function globalNetSet(name: string, labels: Record<string, string>, nets: string[]): GlobalNetworkSet {
  return { apiVersion: V3, kind: 'GlobalNetworkSet', metadata: { name, labels }, spec: { nets } };
}

export function pool(name: string, cidr: string, natOutgoing = false): IPPool {
  return { apiVersion: V3, kind: 'IPPool', metadata: { name }, spec: { cidr, natOutgoing } };
}

/** A stable key for a resource in a test state. */
export function resourceKey(r: CalcResource): string {
  return `${r.kind}/${r.metadata.namespace ?? ''}/${r.metadata.name}`;
}

export const allow: Rule = { action: 'Allow' };
export const deny: Rule = { action: 'Deny' };
export const pass: Rule = { action: 'Pass' };
