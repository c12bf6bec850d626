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
 */

import {
  accept,
  anonSet,
  cidr as cidrExpr,
  clearMarkBits,
  concat,
  ctState,
  drop,
  eq,
  fibType,
  goto,
  jump,
  markBitsClear,
  markBitsSet,
  masquerade,
  meta,
  type NftChainType,
  type NftExpr,
  type NftHook,
  type NftStatement,
  type NftVerdict,
  ne,
  range as nftRange,
  payload,
  returnVerdict,
  setRef,
  snat,
  vmap,
} from '@calico-ts/nftables';
import {
  IPSET_ID_ALL_HOSTS,
  IPSET_ID_ALL_POOLS,
  IPSET_ID_ALL_VXLAN_SOURCES,
  IPSET_ID_MASQ_POOLS,
} from '../calc/ids.js';
import type {
  DataplaneState,
  EndpointState,
  EndpointTier,
  IPSetState,
  PolicyState,
  PoolState,
  ProfileState,
} from '../calc/types.js';
import { allocateMarks, type MarkBits, type ProtoPort, type RulesConfig } from './config.js';
import { renderEndpointChain } from './endpoint-renderer.js';
import {
  ALL_INTERFACES,
  CHAIN,
  endpointChainName,
  FILTER,
  FROM_HOST_ENDPOINT_FORWARD_PREFIX,
  FROM_HOST_ENDPOINT_PREFIX,
  FROM_WORKLOAD_PREFIX,
  type IpFamily,
  ipSetName,
  MANGLE,
  NAT,
  POLICY_INBOUND_PREFIX,
  POLICY_OUTBOUND_PREFIX,
  PROFILE_INBOUND_PREFIX,
  PROFILE_OUTBOUND_PREFIX,
  policyChainName,
  profileChainName,
  RAW,
  TABLE_NAME,
  TO_HOST_ENDPOINT_FORWARD_PREFIX,
  TO_HOST_ENDPOINT_PREFIX,
  TO_WORKLOAD_PREFIX,
} from './names.js';
import { renderPolicyRules, withoutContained } from './policy-renderer.js';
import { l4protoExpr } from './protocols.js';
import type {
  NftChainDesired,
  NftDesired,
  NftMapDesired,
  NftRuleDesired,
  NftSetDesired,
  NftTableDesired,
} from './ruleset.js';

const byString = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function sortedUniqueElements(elems: readonly NftExpr[]): NftExpr[] {
  const byJson = new Map<string, NftExpr>();
  for (const e of elems) byJson.set(JSON.stringify(e), e);
  return [...byJson.keys()].sort(byString).map((k) => byJson.get(k)!);
}

/** nftables' named priorities: `raw` runs before conntrack, `mangle` before `dstnat` (-100). */
const PRIORITY_RAW = -300;
const PRIORITY_MANGLE = -150;

function familyOfAddr(a: string): IpFamily {
  return a.includes(':') ? 'ip6' : 'ip';
}

export class TableBuilder {
  readonly chains: Record<string, NftChainDesired> = {};
  readonly sets: Record<string, NftSetDesired> = {};
  readonly maps: Record<string, NftMapDesired> = {};

  constructor(readonly family: IpFamily) {}

  chain(name: string, rules: NftRuleDesired[], base?: NftChainDesired['base']): void {
    this.chains[name] = base ? { name, base, rules } : { name, rules };
  }

  netSet(name: string, cidrs: readonly string[]): void {
    const fam = this.family;
    const mine = withoutContained(cidrs.filter((c) => familyOfAddr(c) === fam));
    this.sets[name] = {
      name,
      type: fam === 'ip' ? 'ipv4_addr' : 'ipv6_addr',
      flags: ['interval'],
      elements: sortedUniqueElements(mine.map(cidrExpr)),
    };
  }

  ipPortSet(name: string, members: readonly string[]): void {
    const fam = this.family;
    const elems: NftExpr[] = [];
    for (const m of members) {
      const comma = m.lastIndexOf(',');
      const addr = m.slice(0, comma);
      if (familyOfAddr(addr) !== fam) continue;
      const [proto, port] = m.slice(comma + 1).split(':') as [string, string];
      elems.push(concat(addr, proto, Number(port)));
    }
    this.sets[name] = {
      name,
      type: [fam === 'ip' ? 'ipv4_addr' : 'ipv6_addr', 'inet_proto', 'inet_service'],
      flags: [],
      elements: sortedUniqueElements(elems),
    };
  }

  verdictMap(name: string, entries: Map<string, NftVerdict>): void {
    const elements = [...entries.keys()].sort(byString).map((k) => [k, entries.get(k)!] as const);
    this.maps[name] = { name, type: 'ifname', map: 'verdict', elements };
  }

  build(): NftTableDesired {
    return { family: this.family, name: TABLE_NAME, chains: this.chains, sets: this.sets, maps: this.maps };
  }
}

function failsafeRules(
  family: IpFamily,
  ports: readonly ProtoPort[],
  netField: 'saddr' | 'daddr',
  portField: 'dport' | 'sport' = 'dport',
): NftRuleDesired[] {
  const out: NftRuleDesired[] = [];
  for (const p of ports) {
    const expr: NftStatement[] = [
      eq(meta('l4proto'), p.protocol),
      eq(payload(p.protocol, portField), p.port),
    ];
    if (p.net) {
      if (familyOfAddr(p.net) !== family) continue;
      expr.push(eq(payload(family, netField), cidrExpr(p.net)));
    }
    out.push({ expr: [...expr, accept()] });
  }
  return out;
}

/** Endpoints with a usable interface, one per interface (the first by key wins a clash). */
function endpointsByIface(endpoints: readonly EndpointState[]): Map<string, EndpointState> {
  const out = new Map<string, EndpointState>();
  for (const ep of endpoints) {
    if (!ep.interfaceName || ep.interfaceName === '*') continue;
    if (!out.has(ep.interfaceName)) out.set(ep.interfaceName, ep);
  }
  return out;
}

/** What the rules need to know of the node's tunnels, beyond the configuration. */
export interface TunnelRules {
  /**
   * With VXLAN on: the IPv4 hosts (addresses or CIDRs) VXLAN packets are accepted from, the other
   * nodes' VTEPs and the external nodes; VXLAN packets to this host from anywhere else are
   * dropped. Absent: VXLAN is off, and no rule looks at VXLAN packets to the host.
   */
  readonly vxlanSources?: readonly string[];
  /**
   * The same for IPv6 VXLAN (vxlan-v6.calico), in the ip6 table: the other nodes' IPv6 VTEP
   * addresses and the external nodes' IPv6 CIDRs. Absent: IPv6 VXLAN is off.
   */
  readonly vxlanSourcesV6?: readonly string[];
  /**
   * With IPIP on: every Calico host's IPv4 address and the external nodes, where IPIP packets are
   * accepted from; IPIP from anywhere else is dropped. Absent: IPIP is off.
   */
  readonly ipipSources?: readonly string[];
  /**
   * With NAT outgoing exclusions `IPPoolsAndHostIPs`: every Calico host's IPv4 address and the
   * external nodes, which NAT outgoing leaves alone (the same set as `ipipSources`).
   */
  readonly natExcludedHosts?: readonly string[];
}

/**
 * What every section of one family's table is rendered from besides its own input. A table is the
 * union of independent sections, so that a change re-renders only the sections it touches (see
 * `IncrementalRenderer`); `renderRuleset` renders all of them at once.
 */
export interface TableEnv {
  readonly family: IpFamily;
  readonly config: RulesConfig;
  readonly tunnels: TunnelRules;
  readonly marks: MarkBits;
}

function policyContext(env: TableEnv) {
  return { family: env.family, marks: env.marks, logPrefix: env.config.logPrefix };
}

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
  const { family, config, tunnels, marks } = env;
  const ctx = policyContext(env);
  const hasPolicy = (id: string) => input.policy(id) !== undefined;
  const hasProfile = input.hasProfile;
  const pools = input.pools;
  t.netSet(
    ipSetName(family, IPSET_ID_ALL_POOLS),
    pools.map((p) => p.cidr),
  );
  const masqPools = pools.filter((p) => p.natOutgoing && !p.disabled && familyOfAddr(p.cidr) === family);
  t.netSet(
    ipSetName(family, IPSET_ID_MASQ_POOLS),
    masqPools.map((p) => p.cidr),
  );

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
    for (const iface of namedHeps.keys())
      if (!fromHepMangle.has(iface)) fromHepMangle.set(iface, returnVerdict());
  }
  t.verdictMap(RAW + CHAIN.toHostEndpoint, toHepRaw);
  t.verdictMap(RAW + CHAIN.fromHostEndpoint, fromHepRaw);
  t.verdictMap(MANGLE + CHAIN.fromHostEndpoint, fromHepMangle);

  // Dispatch chains: look the interface up in its map; an unknown workload interface is dropped.
  const iif = meta('iifname');
  const oif = meta('oifname');
  t.chain(FILTER + CHAIN.fromWlDispatch, [
    { expr: [vmap(iif, setRef(FILTER + CHAIN.fromWlDispatch))] },
    { expr: [drop()], comment: 'Unknown interface' },
  ]);
  t.chain(FILTER + CHAIN.toWlDispatch, [
    { expr: [vmap(oif, setRef(FILTER + CHAIN.toWlDispatch))] },
    { expr: [drop()], comment: 'Unknown interface' },
  ]);
  // Host endpoint dispatch: a miss in the map falls through; with an all-interfaces host endpoint,
  // a non-workload interface then goes to its chain.
  const wildcards = config.interfacePrefixes.map((p) => `${p}*`);
  const hepDispatch = (
    layer: string,
    chain: string,
    key: NftExpr,
    prefix: string,
    toAllIfaces: boolean,
  ): void => {
    const rules: NftRuleDesired[] = [{ expr: [vmap(key, setRef(layer + chain))] }];
    if (toAllIfaces) {
      for (const w of wildcards) {
        rules.push({
          expr: [eq(key, w), returnVerdict()],
          comment: 'Workload interfaces skip the all-interfaces host endpoint',
        });
      }
      rules.push({
        expr: [goto(layer + endpointChainName(prefix, ALL_INTERFACES))],
        comment: 'All-interfaces host endpoint',
      });
    }
    t.chain(layer + chain, rules);
  };
  const hasAll = allIfacesHep !== undefined;
  hepDispatch(FILTER, CHAIN.fromHostEndpoint, iif, FROM_HOST_ENDPOINT_PREFIX, hasAll);
  hepDispatch(FILTER, CHAIN.toHostEndpoint, oif, TO_HOST_ENDPOINT_PREFIX, hasAll);
  hepDispatch(FILTER, CHAIN.fromHepForward, iif, FROM_HOST_ENDPOINT_FORWARD_PREFIX, hasAll);
  hepDispatch(FILTER, CHAIN.toHepForward, oif, TO_HOST_ENDPOINT_FORWARD_PREFIX, hasAll);
  hepDispatch(RAW, CHAIN.fromHostEndpoint, iif, FROM_HOST_ENDPOINT_PREFIX, false);
  hepDispatch(RAW, CHAIN.toHostEndpoint, oif, TO_HOST_ENDPOINT_PREFIX, false);
  hepDispatch(MANGLE, CHAIN.fromHostEndpoint, iif, FROM_HOST_ENDPOINT_PREFIX, allIfacesPreDNAT);

  // Failsafes.
  t.chain(FILTER + CHAIN.failsafeIn, failsafeRules(family, config.failsafeInboundHostPorts, 'saddr'));
  t.chain(FILTER + CHAIN.failsafeOut, failsafeRules(family, config.failsafeOutboundHostPorts, 'daddr'));
  t.chain(MANGLE + CHAIN.failsafeIn, failsafeRules(family, config.failsafeInboundHostPorts, 'saddr'));
  // Before conntrack, the replies of failsafe connections must be let through untouched too, or
  // an untracked policy could catch one half of the connection.
  t.chain(RAW + CHAIN.failsafeIn, [
    ...failsafeRules(family, config.failsafeInboundHostPorts, 'saddr'),
    ...failsafeRules(family, config.failsafeOutboundHostPorts, 'saddr', 'sport'),
  ]);
  t.chain(RAW + CHAIN.failsafeOut, [
    ...failsafeRules(family, config.failsafeOutboundHostPorts, 'daddr'),
    ...failsafeRules(family, config.failsafeInboundHostPorts, 'daddr', 'sport'),
  ]);

  // Static filter chains.
  const policyMarks = marks.accept | marks.pass | marks.scratch0 | marks.scratch1;
  const wlToHost: NftRuleDesired[] = [];
  if (family === 'ip6') {
    // Neighbour discovery and MLD must reach the host for IPv6 to work at all.
    wlToHost.push({
      expr: [
        eq(meta('l4proto'), 'ipv6-icmp'),
        eq(payload('icmpv6', 'type'), anonSet([130, 131, 132, 133, 135, 136])),
        accept(),
      ],
    });
  }
  wlToHost.push({ expr: [jump(FILTER + CHAIN.fromWlDispatch)] });
  const toHostVerdict =
    config.defaultEndpointToHostAction === 'Accept'
      ? accept()
      : config.defaultEndpointToHostAction === 'Return'
        ? returnVerdict()
        : drop();
  wlToHost.push({ expr: [toHostVerdict], comment: 'Configured DefaultEndpointToHostAction' });
  t.chain(FILTER + CHAIN.wlToHost, wlToHost);

  const alreadyAccepted: NftRuleDesired = {
    expr: [markBitsSet(marks.accept), accept()],
    comment: 'Accepted by untracked or pre-DNAT policy',
  };
  // Tunnel packets to the host come from known hosts only (upstream's first rules of cali-INPUT),
  // and tunnel packets from the host to those hosts pass whatever host endpoint policy says
  // (upstream's cali-OUTPUT), so that no host policy can cut the pod network.
  const tunnelInput: NftRuleDesired[] = [];
  const tunnelOutput: NftRuleDesired[] = [];
  const allHosts = tunnels.ipipSources ?? tunnels.natExcludedHosts;
  if (allHosts !== undefined && family === 'ip') t.netSet(ipSetName(family, IPSET_ID_ALL_HOSTS), allHosts);
  if (tunnels.ipipSources !== undefined && family === 'ip') {
    const hosts = `@${ipSetName(family, IPSET_ID_ALL_HOSTS)}`;
    const ipip = eq(meta('l4proto'), l4protoExpr(4));
    tunnelInput.push(
      {
        expr: [ipip, eq(payload(family, 'saddr'), hosts), fibType(['daddr'], 'local'), accept()],
        comment: 'Allow IPIP packets from Calico hosts',
      },
      { expr: [ipip, drop()], comment: 'Drop IPIP packets from non-Calico hosts' },
    );
    tunnelOutput.push({
      expr: [ipip, eq(payload(family, 'daddr'), hosts), fibType(['saddr'], 'local'), accept()],
      comment: 'Allow IPIP packets to other Calico hosts',
    });
  }
  const vxlanSources = family === 'ip' ? tunnels.vxlanSources : tunnels.vxlanSourcesV6;
  if (vxlanSources !== undefined) {
    const v = family === 'ip' ? 'IPv4' : 'IPv6';
    const sources = `@${ipSetName(family, IPSET_ID_ALL_VXLAN_SOURCES)}`;
    t.netSet(ipSetName(family, IPSET_ID_ALL_VXLAN_SOURCES), vxlanSources);
    const vxlan = [eq(meta('l4proto'), 'udp'), eq(payload('udp', 'dport'), config.vxlanPort)];
    tunnelInput.push(
      {
        expr: [...vxlan, fibType(['daddr'], 'local'), eq(payload(family, 'saddr'), sources), accept()],
        comment: `Allow ${v} VXLAN packets from allowed hosts`,
      },
      {
        expr: [...vxlan, fibType(['daddr'], 'local'), drop()],
        comment: `Drop ${v} VXLAN packets from non-allowed hosts`,
      },
    );
    tunnelOutput.push({
      expr: [...vxlan, fibType(['saddr'], 'local'), eq(payload(family, 'daddr'), sources), accept()],
      comment: `Allow ${v} VXLAN packets to other allowed hosts`,
    });
  }
  t.chain(FILTER + CHAIN.input, [
    ...tunnelInput,
    ...wildcards.map((w) => ({ expr: [eq(iif, w), goto(FILTER + CHAIN.wlToHost)] })),
    alreadyAccepted,
    { expr: [clearMarkBits(policyMarks)] },
    { expr: [jump(FILTER + CHAIN.fromHostEndpoint)] },
    { expr: [markBitsSet(marks.accept), accept()], comment: 'Host endpoint policy accepted packet.' },
  ]);
  t.chain(FILTER + CHAIN.forward, [
    // The accept bit stays: it carries the verdict of untracked and pre-DNAT policy.
    { expr: [clearMarkBits(policyMarks & ~marks.accept)] },
    { expr: [markBitsClear(marks.accept), jump(FILTER + CHAIN.fromHepForward)] },
    ...wildcards.map((w) => ({ expr: [eq(iif, w), jump(FILTER + CHAIN.fromWlDispatch)] })),
    ...wildcards.map((w) => ({ expr: [eq(oif, w), jump(FILTER + CHAIN.toWlDispatch)] })),
    { expr: [jump(FILTER + CHAIN.toHepForward)] },
    { expr: [markBitsSet(marks.accept), accept()], comment: 'Policy explicitly accepted packet.' },
  ]);
  t.chain(FILTER + CHAIN.output, [
    alreadyAccepted,
    ...wildcards.map((w) => ({ expr: [eq(oif, w), returnVerdict()] })),
    ...tunnelOutput,
    { expr: [clearMarkBits(policyMarks)] },
    { expr: [jump(FILTER + CHAIN.toHostEndpoint)] },
    { expr: [markBitsSet(marks.accept), accept()], comment: 'Host endpoint policy accepted packet.' },
  ]);

  // NAT outgoing (upstream's cali-nat-outgoing): traffic from a NAT pool to anywhere outside all
  // pools (and, with exclusions IPPoolsAndHostIPs, outside every node's address) leaves with the
  // node's address, or natOutgoingAddress; with natPortRange, TCP and UDP source ports come from
  // that range (a port needs a transport protocol in nat statements, hence one rule per protocol).
  const natRules: NftRuleDesired[] = [];
  if (masqPools.length > 0) {
    const natMatch = (protocol?: 'tcp' | 'udp'): NftStatement[] => [
      eq(payload(family, 'saddr'), `@${ipSetName(family, IPSET_ID_MASQ_POOLS)}`),
      ne(payload(family, 'daddr'), `@${ipSetName(family, IPSET_ID_ALL_POOLS)}`),
      ...(config.natOutgoingExclusions === 'IPPoolsAndHostIPs' && allHosts !== undefined && family === 'ip'
        ? [ne(payload(family, 'daddr'), `@${ipSetName(family, IPSET_ID_ALL_HOSTS)}`)]
        : []),
      ...(protocol ? [eq(meta('l4proto'), protocol)] : []),
      ...(config.natOutgoingInterfaceFilter
        ? [eq(meta('oifname'), config.natOutgoingInterfaceFilter.replace(/\+$/, '*'))]
        : []),
    ];
    const snatAddr =
      config.natOutgoingAddress && familyOfAddr(config.natOutgoingAddress) === family
        ? config.natOutgoingAddress
        : undefined;
    const translate = (range?: { min: number; max: number }): NftStatement => {
      const port =
        range === undefined
          ? undefined
          : range.min === range.max
            ? range.min
            : nftRange(range.min, range.max);
      if (snatAddr) return snat(snatAddr, port === undefined ? {} : { port });
      return masquerade(port === undefined ? {} : { port });
    };
    const range = config.natPortRange;
    if (range) {
      for (const protocol of ['tcp', 'udp'] as const) {
        natRules.push(
          { expr: [...natMatch(protocol), translate(range)] },
          { expr: [...natMatch(protocol), returnVerdict()] },
        );
      }
    }
    natRules.push({ expr: [...natMatch(), translate()] });
  }
  t.chain(NAT + CHAIN.natOutgoing, natRules);
  t.chain(NAT + CHAIN.postrouting, [{ expr: [jump(NAT + CHAIN.natOutgoing)] }]);

  // Untracked and pre-DNAT stages.
  t.chain(RAW + CHAIN.prerouting, [
    { expr: [clearMarkBits(policyMarks)] },
    ...wildcards.map((w) => ({ expr: [eq(iif, w), returnVerdict()] })),
    { expr: [jump(RAW + CHAIN.fromHostEndpoint)] },
    { expr: [markBitsSet(marks.accept), accept()], comment: 'Untracked policy accepted packet.' },
  ]);
  t.chain(RAW + CHAIN.output, [
    { expr: [clearMarkBits(policyMarks)] },
    { expr: [jump(RAW + CHAIN.toHostEndpoint)] },
    { expr: [markBitsSet(marks.accept), accept()], comment: 'Untracked policy accepted packet.' },
  ]);
  t.chain(MANGLE + CHAIN.prerouting, [
    { expr: [ctState('established', 'related'), accept()] },
    { expr: [markBitsSet(marks.accept), accept()], comment: 'Accepted by untracked policy' },
    { expr: [jump(MANGLE + CHAIN.fromHostEndpoint)] },
    { expr: [markBitsSet(marks.accept), accept()], comment: 'Host endpoint policy accepted packet.' },
  ]);

  // Base chains hooked into netfilter. Every hook costs each packet that passes it, and a VXLAN
  // packet passes a node's hooks twice (inner and outer), so a stage that cannot change anything
  // is not hooked: filter output and the raw and mangle stages only when the node has a host
  // endpoint (without one their dispatch maps are empty, output accepts everything, and the marks
  // they clear matter only to host endpoint policy), the nat hook only when there is something to
  // masquerade.
  const hookChain = (layer: string, hook: NftHook, prio: number, target: string, type: NftChainType) =>
    t.chain(layer + hook.toUpperCase(), [{ expr: [jump(layer + target)] }], {
      type,
      hook,
      prio,
      policy: 'accept',
    });
  const hasHostEndpoint = heps.length > 0;
  if (hasHostEndpoint) {
    hookChain(RAW, 'prerouting', PRIORITY_RAW, CHAIN.prerouting, 'filter');
    hookChain(RAW, 'output', PRIORITY_RAW, CHAIN.output, 'filter');
    hookChain(MANGLE, 'prerouting', PRIORITY_MANGLE, CHAIN.prerouting, 'filter');
  }
  hookChain(FILTER, 'input', 0, CHAIN.input, 'filter');
  hookChain(FILTER, 'forward', 0, CHAIN.forward, 'filter');
  if (hasHostEndpoint) hookChain(FILTER, 'output', 0, CHAIN.output, 'filter');
  if (natRules.length > 0) hookChain(NAT, 'postrouting', 100, CHAIN.postrouting, 'nat');
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
