/**
 * Endpoint chains (upstream `felix/rules/endpoints.go`, `endpointIptablesChain`):
 *
 *   ct state established,related  accept
 *   ct state invalid               drop
 *   meta mark set mark & ~(accept|pass)
 *   [workload egress: drop VXLAN and IPIP sent by the workload]
 *   for each tier with policies in this direction:
 *     meta mark set mark & ~pass                      "Start of tier <name>"
 *     for each policy:  mark & pass == 0  jump <policy chain>
 *                       mark & accept == accept  return
 *     mark & pass == 0  drop    (unless the tier's defaultAction is Pass)
 *   for each profile:   jump <profile chain>;  mark & accept == accept  return
 *   drop                                              "Drop if no profiles matched"
 *
 * Profiles are reached only when no tier applied or the last tier passed. Forward chains of host
 * endpoints have no profiles and, with no policy, accept.
 *
 * Host endpoint chains of the earlier stages (upstream's raw and mangle tables) differ: they have
 * no profiles, no end-of-tier drop and no final drop (a packet no policy decided falls through to
 * the normal filter-stage policy); an untracked chain has no conntrack rules (conntrack has not run
 * yet) and turns a policy's allow into `notrack` as well.
 */

import {
  accept,
  clearMarkBits,
  ctState,
  drop,
  eq,
  jump,
  markBitsClear,
  markBitsSet,
  meta,
  notrack,
  payload,
  returnVerdict,
  setMarkBits,
} from '@calico-ts/nftables';
import type { EndpointTier } from '../calc/types.js';
import type { MarkBits } from './config.js';
import {
  FILTER,
  POLICY_INBOUND_PREFIX,
  POLICY_OUTBOUND_PREFIX,
  PROFILE_INBOUND_PREFIX,
  PROFILE_OUTBOUND_PREFIX,
  policyChainName,
  profileChainName,
} from './names.js';
import { l4protoExpr } from './protocols.js';
import type { NftRuleDesired } from './ruleset.js';

export type Direction = 'ingress' | 'egress';

export interface EndpointChainOptions {
  readonly tiers: readonly EndpointTier[];
  readonly profileIds: readonly string[];
  readonly direction: Direction;
  readonly marks: MarkBits;
  /** Host endpoint chains jump to the failsafe chain first. */
  readonly failsafeChain?: string;
  /** Forward chains of host endpoints: no profiles; no policy means allow. */
  readonly forward?: boolean;
  /**
   * Host endpoint chains of the untracked (raw) or pre-DNAT (mangle) stage; their policy and
   * failsafe chains carry `layer`'s prefix.
   */
  readonly stage?: 'untracked' | 'preDNAT';
  /** Prefix of the chains jumped to: `filter-` (default), `raw-` or `mangle-`. */
  readonly layer?: string;
  readonly dropVXLANPort?: number;
  readonly dropIPIP?: boolean;
  /** Policy chains that exist; jumps to others are left out. */
  readonly hasPolicy: (id: string) => boolean;
  readonly hasProfile: (id: string) => boolean;
}

export function renderEndpointChain(o: EndpointChainOptions): NftRuleDesired[] {
  const { marks } = o;
  const layer = o.layer ?? FILTER;
  const rules: NftRuleDesired[] = [];
  if (o.stage !== 'untracked') {
    rules.push(
      { expr: [ctState('established', 'related'), accept()] },
      { expr: [ctState('invalid'), drop()] },
    );
  }
  if (o.failsafeChain) rules.push({ expr: [jump(layer + o.failsafeChain)] });
  rules.push({ expr: [clearMarkBits(marks.accept | marks.pass)] });
  if (o.dropVXLANPort !== undefined) {
    rules.push({
      expr: [eq(meta('l4proto'), 'udp'), eq(payload('udp', 'dport'), o.dropVXLANPort), drop()],
      comment: 'Drop VXLAN encapped packets originating in workloads',
    });
  }
  if (o.dropIPIP) {
    rules.push({
      expr: [eq(meta('l4proto'), l4protoExpr(4)), drop()],
      comment: 'Drop IPinIP encapped packets originating in workloads',
    });
  }
  const policyPrefix = o.direction === 'ingress' ? POLICY_INBOUND_PREFIX : POLICY_OUTBOUND_PREFIX;
  const profilePrefix = o.direction === 'ingress' ? PROFILE_INBOUND_PREFIX : PROFILE_OUTBOUND_PREFIX;
  let tiersApplied = 0;
  for (const tier of o.tiers) {
    const pols = (o.direction === 'ingress' ? tier.ingressPolicies : tier.egressPolicies).filter(o.hasPolicy);
    if (pols.length === 0) continue;
    tiersApplied++;
    rules.push({ expr: [clearMarkBits(marks.pass)], comment: `Start of tier ${tier.name}` });
    for (const id of pols) {
      rules.push({ expr: [markBitsClear(marks.pass), jump(layer + policyChainName(policyPrefix, id))] });
      if (o.stage === 'untracked') {
        rules.push({
          expr: [markBitsSet(marks.accept), notrack()],
          comment: 'Untracked policy accepted packet',
        });
      }
      rules.push({
        expr: [markBitsSet(marks.accept), returnVerdict()],
        comment: 'Return if policy accepted',
      });
    }
    // Earlier stages never drop at the end of a tier: normal policy still applies afterwards.
    if (o.stage !== undefined) continue;
    if (tier.defaultAction !== 'Pass') {
      rules.push({ expr: [markBitsClear(marks.pass), drop()], comment: 'Drop if no policies passed packet' });
    }
  }
  if (o.stage !== undefined) return rules;
  if (o.forward) {
    if (tiersApplied === 0) {
      rules.push({
        expr: [setMarkBits(marks.accept), returnVerdict()],
        comment: 'Allow forwarded traffic by default',
      });
    }
    return rules;
  }
  for (const id of o.profileIds.filter(o.hasProfile)) {
    rules.push({ expr: [jump(FILTER + profileChainName(profilePrefix, id))] });
    rules.push({ expr: [markBitsSet(marks.accept), returnVerdict()], comment: 'Return if profile accepted' });
  }
  rules.push({ expr: [drop()], comment: 'Drop if no profiles matched' });
  return rules;
}
