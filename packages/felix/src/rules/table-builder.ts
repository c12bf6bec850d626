/**
 * The table under construction and what every section of it is rendered from: `TableBuilder`
 * (chains, sets and verdict maps by name, in the order they are made, which is the order the
 * diff programs them), `TableEnv`, `TunnelRules`, and the small helpers the section renderers
 * share.
 */
import { cidr as cidrExpr, concat, type NftExpr, type NftVerdict } from '@calico-ts/nftables';
import type { EndpointState } from '../calc/types.js';
import type { MarkBits, RulesConfig } from './config.js';
import { type IpFamily, TABLE_NAME } from './names.js';
import { withoutContained } from './policy-renderer.js';
import type {
  NftChainDesired,
  NftMapDesired,
  NftRuleDesired,
  NftSetDesired,
  NftTableDesired,
} from './ruleset.js';

export const byString = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function sortedUniqueElements(elems: readonly NftExpr[]): NftExpr[] {
  const byJson = new Map<string, NftExpr>();
  for (const e of elems) byJson.set(JSON.stringify(e), e);
  return [...byJson.keys()].sort(byString).map((k) => byJson.get(k)!);
}

/** nftables' named priorities: `raw` runs before conntrack, `mangle` before `dstnat` (-100). */
export const PRIORITY_RAW = -300;
export const PRIORITY_MANGLE = -150;

export function familyOfAddr(a: string): IpFamily {
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

/** Endpoints with a usable interface, one per interface (the first by key wins a clash). */
export function endpointsByIface(endpoints: readonly EndpointState[]): Map<string, EndpointState> {
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

export function policyContext(env: TableEnv) {
  return { family: env.family, marks: env.marks, logPrefix: env.config.logPrefix };
}

/** The mark bits policy uses, cleared where a packet enters a stage. */
export function policyMarkBits(marks: MarkBits): number {
  return marks.accept | marks.pass | marks.scratch0 | marks.scratch1;
}

/** Workload interface names as nft wildcards: `cali*`. */
export function workloadWildcards(config: RulesConfig): string[] {
  return config.interfacePrefixes.map((p) => `${p}*`);
}

/** Every Calico host's address, for IPIP and the NAT exclusions; undefined when neither is on. */
export function allHostsOf(tunnels: TunnelRules): readonly string[] | undefined {
  return tunnels.ipipSources ?? tunnels.natExcludedHosts;
}
