/**
 * Identifiers that reach the dataplane, computed exactly as upstream does: policy IDs
 * (`felix/types/policy_id.go`), selector and named-port IP set IDs (`felix/calc/rule_scanner.go`)
 * and the fixed IDs of the pool sets (`felix/rules/rule_defs.go`, masquerade manager).
 */
import { makeUniqueID } from './hash.js';
import type { NamedPortProtocol, PolicyKind } from './types.js';

/** `np/<namespace>/<name>` for a NetworkPolicy, `gnp/<name>` for a GlobalNetworkPolicy. */
export function policyId(kind: PolicyKind, name: string, namespace?: string): string {
  return namespace ? `${kind}/${namespace}/${name}` : `${kind}/${name}`;
}

/** The ID of the IP set of all endpoints matching a selector, from its canonical text. */
export function selectorIPSetId(canonicalSelector: string): string {
  return makeUniqueID('s', canonicalSelector);
}

/** The ID of a named-port IP set: endpoints matching the selector that have the named port. */
export function namedPortIPSetId(
  canonicalSelector: string,
  protocol: NamedPortProtocol,
  port: string,
): string {
  return makeUniqueID('n', `${selectorIPSetId(canonicalSelector)},${protocol},${port}`);
}

/**
 * The ID of a Service's IP set: `svc:` with ports (a destination match), `svcnoport:` with the
 * addresses only (a source match), over `<namespace>/<name>`.
 */
export function serviceIPSetId(namespace: string, name: string, includePorts: boolean): string {
  return makeUniqueID(includePorts ? 'svc' : 'svcnoport', `${namespace}/${name}`);
}

/** The IP set of every IP pool's CIDR (the destinations NAT outgoing leaves alone). */
export const IPSET_ID_ALL_POOLS = 'network-ip-pools';
/** The IP set of the CIDRs of pools with `natOutgoing`. */
export const IPSET_ID_MASQ_POOLS = 'masq-ipam-pools';
/** The IP set of the hosts VXLAN packets are accepted from: other nodes' VTEPs, external nodes. */
export const IPSET_ID_ALL_VXLAN_SOURCES = 'all-vxlan-net';
/** The IP set of every Calico host's address (and the external nodes): where IPIP may come from. */
export const IPSET_ID_ALL_HOSTS = 'all-hosts-net';
