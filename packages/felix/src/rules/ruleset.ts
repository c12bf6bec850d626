/**
 * The desired nftables ruleset as typed objects: what `renderRuleset` produces and `diffRuleset`
 * compares. One table per family; chains, sets and verdict maps keyed by name.
 */
import type { NftChainType, NftExpr, NftHook, NftStatement, NftVerdict } from '@calico-ts/nftables';
import type { IpFamily } from './names.js';

export interface NftBaseChain {
  readonly type: NftChainType;
  readonly hook: NftHook;
  readonly prio: number;
  readonly policy: 'accept' | 'drop';
}

export interface NftRuleDesired {
  readonly expr: readonly NftStatement[];
  readonly comment?: string;
}

export interface NftChainDesired {
  readonly name: string;
  readonly base?: NftBaseChain;
  readonly rules: readonly NftRuleDesired[];
}

export interface NftSetDesired {
  readonly name: string;
  readonly type: string | readonly string[];
  readonly flags: readonly string[];
  /** Sorted by their JSON text, without duplicates. */
  readonly elements: readonly NftExpr[];
}

export interface NftMapDesired {
  readonly name: string;
  readonly type: string;
  readonly map: 'verdict';
  /** Sorted by key. */
  readonly elements: readonly (readonly [string, NftVerdict])[];
}

export interface NftTableDesired {
  readonly family: IpFamily;
  readonly name: string;
  readonly chains: Readonly<Record<string, NftChainDesired>>;
  readonly sets: Readonly<Record<string, NftSetDesired>>;
  readonly maps: Readonly<Record<string, NftMapDesired>>;
}

/** The whole desired state: one table per family, IPv4 first. */
export interface NftDesired {
  readonly tables: readonly NftTableDesired[];
}

export function emptyRuleset(): NftDesired {
  return { tables: [] };
}

/**
 * Tables of their own that point at the same chain, set and map objects (no deep copy): a record
 * that later changes to `d` (which replace objects, never edit them) leave as it was.
 */
export function tablesCopy(d: NftDesired): NftDesired {
  return {
    tables: d.tables.map((t) => ({
      ...t,
      chains: { ...t.chains },
      sets: { ...t.sets },
      maps: { ...t.maps },
    })),
  };
}
