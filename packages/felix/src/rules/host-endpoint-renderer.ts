/**
 * Host endpoints (upstream `felix/rules/endpoints.go` for host endpoints): each named host
 * endpoint's filter chains `filter-cali-th-<if>`, `-fh-`, `-thfw-`, `-fhfw-` and the verdict maps
 * that dispatch to them by interface; an all-interfaces ("*") endpoint's chains under
 * ALL_INTERFACES (the dispatch chains go to it when the maps miss, see dispatch-renderer.ts); and
 * the untracked (`raw-`) and pre-DNAT (`mangle-`) stage chains of those with such policies, with
 * the stage's own copies of the policy chains they jump to.
 */
import { goto, type NftVerdict, returnVerdict } from '@calico-ts/nftables';
import type { EndpointState, EndpointTier, PolicyState } from '../calc/types.js';
import { renderEndpointChain } from './endpoint-renderer.js';
import {
  ALL_INTERFACES,
  CHAIN,
  endpointChainName,
  FILTER,
  FROM_HOST_ENDPOINT_FORWARD_PREFIX,
  FROM_HOST_ENDPOINT_PREFIX,
  MANGLE,
  POLICY_INBOUND_PREFIX,
  POLICY_OUTBOUND_PREFIX,
  policyChainName,
  RAW,
  TO_HOST_ENDPOINT_FORWARD_PREFIX,
  TO_HOST_ENDPOINT_PREFIX,
} from './names.js';
import { renderPolicyRules } from './policy-renderer.js';
import {
  byString,
  endpointsByIface,
  policyContext,
  type TableBuilder,
  type TableEnv,
} from './table-builder.js';

/** What the dispatch and base chains need to know of the node's host endpoints. */
export interface HostEndpointLayout {
  /** Host endpoints with chains (named ones and the all-interfaces one). */
  readonly count: number;
  /** There is an all-interfaces ("*") host endpoint. */
  readonly hasAllInterfaces: boolean;
  /** ... and it has pre-DNAT policy (the mangle dispatch then goes to it). */
  readonly allInterfacesPreDNAT: boolean;
}

/** What the host endpoint chains are rendered from. */
export interface HostEndpointInput {
  /** This node's host endpoints, by key. */
  readonly heps: readonly EndpointState[];
  readonly policy: (id: string) => PolicyState | undefined;
  readonly hasProfile: (id: string) => boolean;
}

type HepsByIface = readonly (readonly [string, EndpointState])[];

/** Every host endpoint chain and map, filter stage first. */
export function renderHostEndpoints(
  t: TableBuilder,
  env: TableEnv,
  input: HostEndpointInput,
): HostEndpointLayout {
  const { marks } = env;
  const hasPolicy = (id: string) => input.policy(id) !== undefined;
  const hasProfile = input.hasProfile;
  // Host endpoints. Named ones are dispatched by interface; an all-interfaces ("*") one gets its
  // chains under the name ALL_INTERFACES and is the default of the dispatch chains (below).
  const namedHeps = endpointsByIface(input.heps);
  const allIfacesHep = input.heps.find((ep) => ep.interfaceName === '*');
  const heps: [string, EndpointState][] = [...namedHeps];
  if (allIfacesHep) heps.push([ALL_INTERFACES, allIfacesHep]);
  const toHep = new Map<string, NftVerdict>();
  const fromHep = new Map<string, NftVerdict>();
  const toHepFwd = new Map<string, NftVerdict>();
  const fromHepFwd = new Map<string, NftVerdict>();
  for (const [iface, ep] of heps) {
    const th = FILTER + endpointChainName(TO_HOST_ENDPOINT_PREFIX, iface);
    const fh = FILTER + endpointChainName(FROM_HOST_ENDPOINT_PREFIX, iface);
    const thfw = FILTER + endpointChainName(TO_HOST_ENDPOINT_FORWARD_PREFIX, iface);
    const fhfw = FILTER + endpointChainName(FROM_HOST_ENDPOINT_FORWARD_PREFIX, iface);
    const common = { profileIds: ep.profileIds, marks, hasPolicy, hasProfile };
    t.chain(
      th,
      renderEndpointChain({
        ...common,
        tiers: ep.tiers,
        direction: 'egress',
        failsafeChain: CHAIN.failsafeOut,
      }),
    );
    t.chain(
      fh,
      renderEndpointChain({
        ...common,
        tiers: ep.tiers,
        direction: 'ingress',
        failsafeChain: CHAIN.failsafeIn,
      }),
    );
    t.chain(
      thfw,
      renderEndpointChain({ ...common, tiers: ep.forwardTiers, direction: 'egress', forward: true }),
    );
    t.chain(
      fhfw,
      renderEndpointChain({ ...common, tiers: ep.forwardTiers, direction: 'ingress', forward: true }),
    );
    if (iface === ALL_INTERFACES) continue;
    toHep.set(iface, goto(th));
    fromHep.set(iface, goto(fh));
    toHepFwd.set(iface, goto(thfw));
    fromHepFwd.set(iface, goto(fhfw));
  }
  t.verdictMap(FILTER + CHAIN.toHostEndpoint, toHep);
  t.verdictMap(FILTER + CHAIN.fromHostEndpoint, fromHep);
  t.verdictMap(FILTER + CHAIN.toHepForward, toHepFwd);
  t.verdictMap(FILTER + CHAIN.fromHepForward, fromHepFwd);

  const allIfacesPreDNAT = renderStageHostEndpoints(t, env, input, heps, [...namedHeps.keys()]);
  return {
    count: heps.length,
    hasAllInterfaces: allIfacesHep !== undefined,
    allInterfacesPreDNAT: allIfacesPreDNAT,
  };
}

/**
 * The untracked (raw) and pre-DNAT (mangle) chains and maps; returns whether the all-interfaces
 * host endpoint has pre-DNAT policy.
 */
function renderStageHostEndpoints(
  t: TableBuilder,
  env: TableEnv,
  input: HostEndpointInput,
  heps: HepsByIface,
  namedIfaces: readonly string[],
): boolean {
  const { marks } = env;
  const ctx = policyContext(env);
  const hasPolicy = (id: string) => input.policy(id) !== undefined;
  const hasProfile = input.hasProfile;
  const allIfacesHep = heps.find(([iface]) => iface === ALL_INTERFACES)?.[1];
  // Host endpoints' untracked (raw) and pre-DNAT (mangle) chains, for those with such policies;
  // each stage has its own copies of the policy chains it jumps to. As upstream, untracked policy
  // is not supported on the all-interfaces host endpoint (upstream logs and ignores it); its
  // pre-DNAT policy is the default of the mangle dispatch.
  const rawPolicies = new Set<string>();
  const manglePolicies = new Set<string>();
  const toHepRaw = new Map<string, NftVerdict>();
  const fromHepRaw = new Map<string, NftVerdict>();
  const fromHepMangle = new Map<string, NftVerdict>();
  const inUse = (tiers: readonly EndpointTier[], dir: 'ingressPolicies' | 'egressPolicies') =>
    tiers.flatMap((tr) => tr[dir]).filter(hasPolicy);
  for (const [iface, ep] of heps) {
    const untracked = ep.untrackedTiers;
    if (untracked.length > 0 && iface !== ALL_INTERFACES) {
      const th = RAW + endpointChainName(TO_HOST_ENDPOINT_PREFIX, iface);
      const fh = RAW + endpointChainName(FROM_HOST_ENDPOINT_PREFIX, iface);
      const common = { tiers: untracked, profileIds: [], marks, hasPolicy, hasProfile } as const;
      const stage = { stage: 'untracked', layer: RAW } as const;
      t.chain(
        th,
        renderEndpointChain({ ...common, ...stage, direction: 'egress', failsafeChain: CHAIN.failsafeOut }),
      );
      t.chain(
        fh,
        renderEndpointChain({ ...common, ...stage, direction: 'ingress', failsafeChain: CHAIN.failsafeIn }),
      );
      toHepRaw.set(iface, goto(th));
      fromHepRaw.set(iface, goto(fh));
      for (const id of inUse(untracked, 'ingressPolicies')) rawPolicies.add(id);
      for (const id of inUse(untracked, 'egressPolicies')) rawPolicies.add(id);
    }
    const preDNAT = ep.preDNATTiers.map((tr) => ({ ...tr, egressPolicies: [] }));
    if (preDNAT.length > 0) {
      const fh = MANGLE + endpointChainName(FROM_HOST_ENDPOINT_PREFIX, iface);
      t.chain(
        fh,
        renderEndpointChain({
          tiers: preDNAT,
          profileIds: [],
          marks,
          hasPolicy,
          hasProfile,
          stage: 'preDNAT',
          layer: MANGLE,
          direction: 'ingress',
          failsafeChain: CHAIN.failsafeIn,
        }),
      );
      if (iface !== ALL_INTERFACES) fromHepMangle.set(iface, goto(fh));
      for (const id of inUse(preDNAT, 'ingressPolicies')) manglePolicies.add(id);
    }
  }
  for (const id of [...rawPolicies].sort(byString)) {
    const p = input.policy(id)!;
    t.chain(RAW + policyChainName(POLICY_INBOUND_PREFIX, id), renderPolicyRules(p.inbound, ctx));
    t.chain(RAW + policyChainName(POLICY_OUTBOUND_PREFIX, id), renderPolicyRules(p.outbound, ctx));
  }
  for (const id of [...manglePolicies].sort(byString)) {
    const p = input.policy(id)!;
    t.chain(MANGLE + policyChainName(POLICY_INBOUND_PREFIX, id), renderPolicyRules(p.inbound, ctx));
  }
  const allIfacesPreDNAT = allIfacesHep !== undefined && allIfacesHep.preDNATTiers.length > 0;
  if (allIfacesPreDNAT) {
    // A named host endpoint wins over the all-interfaces one even without pre-DNAT policy of its own.
    for (const iface of namedIfaces) if (!fromHepMangle.has(iface)) fromHepMangle.set(iface, returnVerdict());
  }
  t.verdictMap(RAW + CHAIN.toHostEndpoint, toHepRaw);
  t.verdictMap(RAW + CHAIN.fromHostEndpoint, fromHepRaw);
  t.verdictMap(MANGLE + CHAIN.fromHostEndpoint, fromHepMangle);

  return allIfacesPreDNAT;
}
