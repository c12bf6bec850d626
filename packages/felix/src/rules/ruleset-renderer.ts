/**
 * The whole desired nftables ruleset for a `DataplaneState` (upstream `felix/rules/static.go`,
 * `dispatch.go`, `endpoints.go`, `policy.go`, `nat.go`, rendered the way `felix/nftables` names
 * things): table `calico` in families `ip` and `ip6`.
 *
 *   filter-INPUT   ─► filter-cali-INPUT   ─► IPIP: accept from @cali40all-hosts-net, else drop;
 *                                          │  VXLAN to the host: accept from @cali40all-vxlan-net, else drop
 *                                          ├► cali* ─► filter-cali-wl-to-host ─► from-wl dispatch
 *                                          └► filter-cali-from-host-endpoint (iifname vmap → fh-<if>)
 *   filter-FORWARD ─► filter-cali-FORWARD ─► from-hep-forward, from-wl dispatch (iifname vmap →
 *                                           fw-<if>), to-wl dispatch (oifname vmap → tw-<if>),
 *                                           to-hep-forward; accept if the accept mark is set
 *   filter-OUTPUT  ─► filter-cali-OUTPUT  ─► IPIP / VXLAN to the other hosts: accept
 *                                          └► filter-cali-to-host-endpoint (oifname vmap → th-<if>)
 *   nat-POSTROUTING ─► nat-cali-POSTROUTING ─► nat-cali-nat-outgoing (masquerade pool → outside)
 *
 * Host endpoints' doNotTrack and preDNAT policies run in earlier stages (upstream's raw and mangle
 * tables), which pass their verdict on to the filter stage through the accept mark:
 *
 *   raw-PREROUTING (prio raw, -300)  ─► raw-cali-PREROUTING: clear marks; not a workload ─►
 *                                        raw-cali-from-host-endpoint (iifname vmap → fh-<if>)
 *   raw-OUTPUT (prio raw, -300)      ─► raw-cali-OUTPUT: clear marks ─►
 *                                        raw-cali-to-host-endpoint (oifname vmap → th-<if>)
 *     untracked Allow: notrack, accept mark, accept; Deny: drop; no verdict: on to conntrack
 *   mangle-PREROUTING (prio mangle, -150, before dstnat) ─► mangle-cali-PREROUTING ─►
 *                                        mangle-cali-from-host-endpoint (iifname vmap → fh-<if>)
 *     pre-DNAT Allow: accept mark, accept; Deny: drop; no verdict: on to DNAT and normal policy
 *
 * filter-cali-INPUT and -OUTPUT accept a packet that already carries the accept mark, and
 * filter-cali-FORWARD skips the from-host-endpoint forward policy for it.
 *
 * The raw and mangle base chains and filter-OUTPUT are hooked only on a node with a host endpoint,
 * and nat-POSTROUTING only when a pool of the family has NAT outgoing; the chains they jump to are
 * always rendered.
 *
 * An all-interfaces host endpoint (`interfaceName: "*"`, upstream's "any-interface-at-all") has
 * chains `cali-fh-any-interface-at-all` etc. and is the default of the filter host endpoint
 * dispatch chains (and, with pre-DNAT policy, of the mangle one): after the map misses, a workload
 * interface returns and any other interface goes to its chain. Named host endpoints win.
 *
 * Endpoint chains jump to policy chains `filter-cali-pi-<id>`/`-po-` and profile chains
 * `filter-cali-pri-<name>`/`-pro-`; rules match IP sets `cali40…`/`cali60…`.
 *
 * This file holds the sections a change re-renders one by one (IP sets, policies, profiles,
 * workloads) and composes the node-wide one from files split by concern, as upstream's rules are:
 *
 *   renderGlobalSection ─► nat-renderer.ts            pool sets … NAT outgoing chains
 *                        ├► host-endpoint-renderer.ts host endpoint chains and maps, all stages
 *                        ├► dispatch-renderer.ts      interface → endpoint chain dispatch
 *                        └► static-renderer.ts        failsafes, entry chains, tunnels, base hooks
 *
 * in the order shown in renderGlobalSection (the order chains are made is the order they are
 * programmed). `TableBuilder`, `TableEnv` and `TunnelRules` are in table-builder.ts.
 */
import { goto, type NftVerdict } from '@calico-ts/nftables';
import type {
  DataplaneState,
  EndpointState,
  IPSetState,
  PolicyState,
  PoolState,
  ProfileState,
} from '../calc/types.js';
import { allocateMarks, type MarkBits, type RulesConfig } from './config.js';
import { renderDispatchChains } from './dispatch-renderer.js';
import { renderEndpointChain } from './endpoint-renderer.js';
import { renderHostEndpoints } from './host-endpoint-renderer.js';
import {
  CHAIN,
  endpointChainName,
  FILTER,
  FROM_WORKLOAD_PREFIX,
  type IpFamily,
  ipSetName,
  POLICY_INBOUND_PREFIX,
  POLICY_OUTBOUND_PREFIX,
  PROFILE_INBOUND_PREFIX,
  PROFILE_OUTBOUND_PREFIX,
  policyChainName,
  profileChainName,
  TO_WORKLOAD_PREFIX,
} from './names.js';
import { renderNatChains, renderPoolSets } from './nat-renderer.js';
import { renderPolicyRules } from './policy-renderer.js';
import type { NftDesired, NftTableDesired } from './ruleset.js';
import {
  renderBaseChains,
  renderFailsafeChains,
  renderFilterChains,
  renderStageChains,
} from './static-renderer.js';
import {
  byString,
  endpointsByIface,
  policyContext,
  TableBuilder,
  type TableEnv,
  type TunnelRules,
} from './table-builder.js';

export type { TunnelRules };

/** Section: one IP set (`cali40<id>` / `cali60<id>`). */
export function renderIPSetSection(t: TableBuilder, env: TableEnv, set: IPSetState): void {
  const name = ipSetName(env.family, set.id);
  if (set.type === 'ip-port') t.ipPortSet(name, set.members);
  else t.netSet(name, set.members);
}

/** Section: one active policy's filter chains (`filter-cali-pi-<id>`, `filter-cali-po-<id>`). */
export function renderPolicySection(t: TableBuilder, env: TableEnv, p: PolicyState): void {
  const ctx = policyContext(env);
  t.chain(FILTER + policyChainName(POLICY_INBOUND_PREFIX, p.id), renderPolicyRules(p.inbound, ctx));
  t.chain(FILTER + policyChainName(POLICY_OUTBOUND_PREFIX, p.id), renderPolicyRules(p.outbound, ctx));
}

/** Section: one active profile's chains (`filter-cali-pri-<name>`, `filter-cali-pro-<name>`). */
export function renderProfileSection(t: TableBuilder, env: TableEnv, p: ProfileState): void {
  const ctx = policyContext(env);
  t.chain(FILTER + profileChainName(PROFILE_INBOUND_PREFIX, p.id), renderPolicyRules(p.inbound, ctx));
  t.chain(FILTER + profileChainName(PROFILE_OUTBOUND_PREFIX, p.id), renderPolicyRules(p.outbound, ctx));
}

/** The verdicts the workload dispatch maps hold for one interface. */
export interface WorkloadDispatch {
  readonly to: NftVerdict;
  readonly from: NftVerdict;
}

/** Section: one workload interface's chains (`filter-cali-tw-<if>`, `filter-cali-fw-<if>`). */
export function renderWorkloadSection(
  t: TableBuilder,
  env: TableEnv,
  iface: string,
  ep: EndpointState,
  hasPolicy: (id: string) => boolean,
  hasProfile: (id: string) => boolean,
): WorkloadDispatch {
  const { config, marks } = env;
  const tw = FILTER + endpointChainName(TO_WORKLOAD_PREFIX, iface);
  const fw = FILTER + endpointChainName(FROM_WORKLOAD_PREFIX, iface);
  const common = { tiers: ep.tiers, profileIds: ep.profileIds, marks, hasPolicy, hasProfile };
  t.chain(tw, renderEndpointChain({ ...common, direction: 'ingress' }));
  t.chain(
    fw,
    renderEndpointChain({
      ...common,
      direction: 'egress',
      ...(config.allowVXLANPacketsFromWorkloads ? {} : { dropVXLANPort: config.vxlanPort }),
      dropIPIP: !config.allowIPIPPacketsFromWorkloads,
    }),
  );
  return { to: goto(tw), from: goto(fw) };
}

/** Section: the two workload dispatch maps, interface → `goto` its chain. */
export function renderWorkloadDispatchMaps(
  t: TableBuilder,
  dispatch: ReadonlyMap<string, WorkloadDispatch>,
): void {
  const toWl = new Map<string, NftVerdict>();
  const fromWl = new Map<string, NftVerdict>();
  for (const [iface, d] of dispatch) {
    toWl.set(iface, d.to);
    fromWl.set(iface, d.from);
  }
  t.verdictMap(FILTER + CHAIN.toWlDispatch, toWl);
  t.verdictMap(FILTER + CHAIN.fromWlDispatch, fromWl);
}

/** What the node-wide section is rendered from. */
export interface GlobalSectionInput {
  readonly pools: readonly PoolState[];
  /** This node's host endpoints, by key. */
  readonly heps: readonly EndpointState[];
  readonly policy: (id: string) => PolicyState | undefined;
  readonly hasProfile: (id: string) => boolean;
}

/**
 * Section: everything node-wide: pool sets, host endpoints with their dispatch and stage chains,
 * dispatch, failsafe, static, tunnel, NAT and base chains. Small unless a node has many host
 * endpoints; re-rendered whole when pools, host endpoints, the policies and profiles they use,
 * the configuration or the tunnel hosts change.
 */
export function renderGlobalSection(t: TableBuilder, env: TableEnv, input: GlobalSectionInput): void {
  const masqPools = renderPoolSets(t, env, input.pools);
  const heps = renderHostEndpoints(t, env, input);
  renderDispatchChains(t, env, heps);
  renderFailsafeChains(t, env);
  renderFilterChains(t, env);
  const nat = renderNatChains(t, env, masqPools);
  renderStageChains(t, env);
  renderBaseChains(t, { hostEndpoints: heps.count > 0, nat });
}

function renderTable(
  state: DataplaneState,
  config: RulesConfig,
  tunnels: TunnelRules,
  marks: MarkBits,
  family: IpFamily,
): NftTableDesired {
  const t = new TableBuilder(family);
  const env: TableEnv = { family, config, tunnels, marks };
  const hasPolicy = (id: string) => state.policies[id] !== undefined;
  const hasProfile = (id: string) => state.profiles[id] !== undefined;
  for (const set of Object.values(state.ipSets)) renderIPSetSection(t, env, set);
  for (const p of Object.values(state.policies)) renderPolicySection(t, env, p);
  for (const p of Object.values(state.profiles)) renderProfileSection(t, env, p);
  const endpoints = Object.keys(state.endpoints)
    .sort(byString)
    .map((k) => state.endpoints[k]!);
  const dispatch = new Map<string, WorkloadDispatch>();
  for (const [iface, ep] of endpointsByIface(endpoints.filter((e) => e.kind === 'wep'))) {
    dispatch.set(iface, renderWorkloadSection(t, env, iface, ep, hasPolicy, hasProfile));
  }
  renderWorkloadDispatchMaps(t, dispatch);
  renderGlobalSection(t, env, {
    pools: Object.values(state.pools),
    heps: endpoints.filter((e) => e.kind === 'hep'),
    policy: (id) => state.policies[id],
    hasProfile,
  });
  return t.build();
}

/** The full desired ruleset: table `calico` for `ip`, and for `ip6` when IPv6 is supported. */
export function renderRuleset(
  state: DataplaneState,
  config: RulesConfig,
  tunnels: TunnelRules = {},
): NftDesired {
  const marks = allocateMarks(config.markMask);
  const families: IpFamily[] = config.ipv6Support ? ['ip', 'ip6'] : ['ip'];
  return { tables: families.map((f) => renderTable(state, config, tunnels, marks, f)) };
}
