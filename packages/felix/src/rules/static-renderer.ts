/**
 * Static chains (upstream `felix/rules/static.go`): failsafes; the filter stage's
 * `filter-cali-INPUT`, `-FORWARD`, `-OUTPUT` and `-wl-to-host`, with the tunnel rules that let
 * IPIP and VXLAN through from known hosts only; the untracked and pre-DNAT stages' entry chains;
 * and the base chains hooked into netfilter.
 */
import {
  accept,
  anonSet,
  cidr as cidrExpr,
  clearMarkBits,
  ctState,
  drop,
  eq,
  fibType,
  goto,
  jump,
  markBitsClear,
  markBitsSet,
  meta,
  type NftChainType,
  type NftHook,
  type NftStatement,
  payload,
  returnVerdict,
} from '@calico-ts/nftables';
import { IPSET_ID_ALL_HOSTS, IPSET_ID_ALL_VXLAN_SOURCES } from '../calc/ids.js';
import type { ProtoPort } from './config.js';
import { CHAIN, FILTER, type IpFamily, ipSetName, MANGLE, NAT, RAW } from './names.js';
import { l4protoExpr } from './protocols.js';
import type { NftRuleDesired } from './ruleset.js';
import {
  allHostsOf,
  familyOfAddr,
  PRIORITY_MANGLE,
  PRIORITY_RAW,
  policyMarkBits,
  type TableBuilder,
  type TableEnv,
  workloadWildcards,
} from './table-builder.js';

export function failsafeRules(
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

/** The failsafe chains of every stage. */
export function renderFailsafeChains(t: TableBuilder, env: TableEnv): void {
  const { family, config } = env;
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
}

/** The filter stage's entry chains, and the tunnel host sets they match. */
export function renderFilterChains(t: TableBuilder, env: TableEnv): void {
  const { family, config, tunnels, marks } = env;
  // Static filter chains.
  const policyMarks = policyMarkBits(marks);
  const wildcards = workloadWildcards(config);
  const iif = meta('iifname');
  const oif = meta('oifname');
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
  const allHosts = allHostsOf(tunnels);
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
}

/** The untracked (raw) and pre-DNAT (mangle) stages' entry chains. */
export function renderStageChains(t: TableBuilder, env: TableEnv): void {
  const { marks } = env;
  const policyMarks = policyMarkBits(marks);
  const wildcards = workloadWildcards(env.config);
  const iif = meta('iifname');
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
}

/** Which base chains are needed beyond filter input and forward. */
export interface BaseChainHooks {
  /** The node has a host endpoint: hook filter output and the raw and mangle stages. */
  readonly hostEndpoints: boolean;
  /** Something is masqueraded: hook nat postrouting. */
  readonly nat: boolean;
}

export function renderBaseChains(t: TableBuilder, hooks: BaseChainHooks): void {
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
  const hasHostEndpoint = hooks.hostEndpoints;
  if (hasHostEndpoint) {
    hookChain(RAW, 'prerouting', PRIORITY_RAW, CHAIN.prerouting, 'filter');
    hookChain(RAW, 'output', PRIORITY_RAW, CHAIN.output, 'filter');
    hookChain(MANGLE, 'prerouting', PRIORITY_MANGLE, CHAIN.prerouting, 'filter');
  }
  hookChain(FILTER, 'input', 0, CHAIN.input, 'filter');
  hookChain(FILTER, 'forward', 0, CHAIN.forward, 'filter');
  if (hasHostEndpoint) hookChain(FILTER, 'output', 0, CHAIN.output, 'filter');
  if (hooks.nat) hookChain(NAT, 'postrouting', 100, CHAIN.postrouting, 'nat');
}
