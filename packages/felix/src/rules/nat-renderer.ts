/**
 * NAT outgoing (upstream `felix/rules/nat.go`): the pool sets and `nat-cali-nat-outgoing`, which
 * masquerades (or SNATs to natOutgoingAddress) traffic from a NAT pool to anywhere outside all
 * pools, and `nat-cali-POSTROUTING`, which jumps to it.
 */
import {
  eq,
  jump,
  masquerade,
  meta,
  type NftStatement,
  ne,
  range as nftRange,
  payload,
  returnVerdict,
  snat,
} from '@calico-ts/nftables';
import { IPSET_ID_ALL_HOSTS, IPSET_ID_ALL_POOLS, IPSET_ID_MASQ_POOLS } from '../calc/ids.js';
import type { PoolState } from '../calc/types.js';
import { CHAIN, ipSetName, NAT } from './names.js';
import type { NftRuleDesired } from './ruleset.js';
import { allHostsOf, familyOfAddr, type TableBuilder, type TableEnv } from './table-builder.js';

/** The all-pools and masquerade-pools sets; returns the pools of this family to masquerade from. */
export function renderPoolSets(t: TableBuilder, env: TableEnv, pools: readonly PoolState[]): PoolState[] {
  const { family } = env;
  t.netSet(
    ipSetName(family, IPSET_ID_ALL_POOLS),
    pools.map((p) => p.cidr),
  );
  const masqPools = pools.filter((p) => p.natOutgoing && !p.disabled && familyOfAddr(p.cidr) === family);
  t.netSet(
    ipSetName(family, IPSET_ID_MASQ_POOLS),
    masqPools.map((p) => p.cidr),
  );

  return masqPools;
}

/** The NAT chains; returns whether there is anything to masquerade (the hook is needed). */
export function renderNatChains(t: TableBuilder, env: TableEnv, masqPools: readonly PoolState[]): boolean {
  const { family, config, tunnels } = env;
  const allHosts = allHostsOf(tunnels);
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

  return natRules.length > 0;
}
