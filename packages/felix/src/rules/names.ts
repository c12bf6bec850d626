/**
 * Names of Calico's nftables objects, as upstream builds them (`felix/rules/rule_defs.go`,
 * `felix/ipsets/ipset_defs.go`, `felix/nftables/ipsets.go`, `felix/nftables/table_layer.go`).
 */

import type { NftFamily } from '@calico-ts/nftables';
import { lengthLimitedID } from '../calc/hash.js';

/** The families Felix programs, a table `calico` each. */
export type IpFamily = Extract<NftFamily, 'ip' | 'ip6'>;

export const TABLE_NAME = 'calico';

/** nftables allows 256 bytes per chain name; names are limited before the layer prefix is added. */
export const MAX_CHAIN_NAME_LENGTH = 256;
/** ipset's limit, which upstream keeps for nftables set names too. */
export const MAX_SET_NAME_LENGTH = 31;

/** Chains of the emulated `filter` table carry this prefix in the one `calico` table. */
export const FILTER = 'filter-';
export const NAT = 'nat-';
/** Untracked (doNotTrack) policy: the emulated `raw` table, before conntrack. */
export const RAW = 'raw-';
/** Pre-DNAT policy: the emulated `mangle` table, before DNAT. */
export const MANGLE = 'mangle-';

export const CHAIN = {
  input: 'cali-INPUT',
  forward: 'cali-FORWARD',
  output: 'cali-OUTPUT',
  prerouting: 'cali-PREROUTING',
  postrouting: 'cali-POSTROUTING',
  natOutgoing: 'cali-nat-outgoing',
  failsafeIn: 'cali-failsafe-in',
  failsafeOut: 'cali-failsafe-out',
  wlToHost: 'cali-wl-to-host',
  fromWlDispatch: 'cali-from-wl-dispatch',
  toWlDispatch: 'cali-to-wl-dispatch',
  fromHostEndpoint: 'cali-from-host-endpoint',
  toHostEndpoint: 'cali-to-host-endpoint',
  fromHepForward: 'cali-from-hep-forward',
  toHepForward: 'cali-to-hep-forward',
} as const;

/**
 * The interface name the chains of an all-interfaces (`interfaceName: "*"`) host endpoint are named
 * after, as upstream does: longer than IFNAMSIZ, so it can never be a real interface.
 */
export const ALL_INTERFACES = 'any-interface-at-all';

export const POLICY_INBOUND_PREFIX = 'cali-pi-';
export const POLICY_OUTBOUND_PREFIX = 'cali-po-';
export const PROFILE_INBOUND_PREFIX = 'cali-pri-';
export const PROFILE_OUTBOUND_PREFIX = 'cali-pro-';
export const TO_WORKLOAD_PREFIX = 'cali-tw-';
export const FROM_WORKLOAD_PREFIX = 'cali-fw-';
export const TO_HOST_ENDPOINT_PREFIX = 'cali-th-';
export const FROM_HOST_ENDPOINT_PREFIX = 'cali-fh-';
export const TO_HOST_ENDPOINT_FORWARD_PREFIX = 'cali-thfw-';
export const FROM_HOST_ENDPOINT_FORWARD_PREFIX = 'cali-fhfw-';

/** `cali-pi-np/prod/web`: a policy chain (without the layer prefix). */
export function policyChainName(prefix: string, policyId: string): string {
  return lengthLimitedID(prefix, policyId, MAX_CHAIN_NAME_LENGTH);
}

/** `cali-pri-kns.default`: a profile chain (without the layer prefix). */
export function profileChainName(prefix: string, profileId: string): string {
  return lengthLimitedID(prefix, profileId, MAX_CHAIN_NAME_LENGTH);
}

/** `cali-tw-cali1234`: an endpoint chain (without the layer prefix). */
export function endpointChainName(prefix: string, iface: string): string {
  return lengthLimitedID(prefix, iface, MAX_CHAIN_NAME_LENGTH);
}

/** `cali40` for IPv4 sets, `cali60` for IPv6 (upstream's versioned prefix plus the main-set token). */
export function ipSetPrefix(family: IpFamily): string {
  return family === 'ip' ? 'cali40' : 'cali60';
}

/**
 * The nftables set name of an IP set ID: prefix + ID cut to 31 characters, then `:` → `-`
 * (nftables set names cannot hold a colon), e.g. `cali40s-qMt7iLlGDhvLnCjM0l9nzxb`.
 */
export function ipSetName(family: IpFamily, setId: string): string {
  return (ipSetPrefix(family) + setId).slice(0, MAX_SET_NAME_LENGTH).replaceAll(':', '-');
}
