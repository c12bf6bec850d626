/**
 * What the kernel holds, in the shape `diffRuleset` compares: the `calico` tables read back with
 * `nft -j list ruleset`, expressed relative to the desired (annotated) ruleset so that diffing the
 * two yields exactly the repairs.
 *
 * - A chain whose base-chain settings and rule hashes match the desired chain is reported as the
 *   desired chain itself (nothing to do). Otherwise it is reported with the kernel's rules, so the
 *   diff flushes and rewrites it (or deletes it, when it should not exist).
 * - A set or map whose type and flags match takes the desired definition; elements the kernel has
 *   and the desired state has too are reported in the desired form, the others in the kernel's
 *   form (so they can be deleted as the kernel printed them).
 * - A `calico` table of a family Felix does not program (IPv6 turned off) is reported, so it goes.
 *
 * Pure: takes the parsed listing, returns data.
 */
import type {
  NftExpr,
  NftMapState,
  NftRuleset,
  NftSetState,
  NftStatement,
  NftTableState,
  NftVerdict,
} from '@calico-ts/nftables';
import { type IpFamily, TABLE_NAME } from '../rules/names.js';
import { chainHashes } from '../rules/rule-hashes.js';
import type {
  NftBaseChain,
  NftChainDesired,
  NftDesired,
  NftMapDesired,
  NftSetDesired,
  NftTableDesired,
} from '../rules/ruleset.js';

const MANAGED_FAMILIES: readonly IpFamily[] = ['ip', 'ip6'];
const json = (v: unknown) => JSON.stringify(v);

function flagList(flags: unknown): string[] {
  if (flags === undefined) return [];
  return (Array.isArray(flags) ? flags.map(String) : [String(flags)]).sort();
}

function sameBase(a: NftBaseChain | undefined, b: NftBaseChain | undefined): boolean {
  return json(a ?? null) === json(b ?? null);
}

function kernelBase(c: NftTableState['chains'][number]): NftBaseChain | undefined {
  if (c.type === undefined || c.hook === undefined) return undefined;
  return {
    type: c.type as NftBaseChain['type'],
    hook: c.hook as NftBaseChain['hook'],
    prio: c.prio ?? 0,
    policy: c.policy ?? 'accept',
  };
}

/** A canonical key for a set element, so the kernel's and the desired form of one element meet. */
function elementKey(e: unknown): string {
  if (e && typeof e === 'object' && !Array.isArray(e) && 'elem' in e) {
    return elementKey((e as { elem: { val: unknown } }).elem.val);
  }
  return json(e);
}

function observeSet(ks: NftSetState, ds: NftSetDesired | undefined): NftSetDesired {
  const kType = ks.type ?? 'ipv4_addr';
  const kFlags = flagList(ks.flags);
  const sameDef =
    ds !== undefined && json(kType) === json(ds.type) && json(kFlags) === json([...ds.flags].sort());
  const wanted = new Map((ds?.elements ?? []).map((e) => [elementKey(e), e]));
  const elements = (ks.elem ?? []).map((e) => wanted.get(elementKey(e)) ?? (e as NftExpr));
  return sameDef
    ? { name: ks.name, type: ds.type, flags: ds.flags, elements }
    : { name: ks.name, type: kType, flags: kFlags, elements };
}

function observeMap(km: NftMapState, dm: NftMapDesired | undefined): NftMapDesired {
  const kType = String(km.type ?? 'ifname');
  const sameDef = dm !== undefined && kType === dm.type && km.map === dm.map;
  const wanted = new Map((dm?.elements ?? []).map((e) => [json(e), e]));
  const elements: (readonly [string, NftVerdict])[] = [];
  for (const raw of km.elem ?? []) {
    if (!Array.isArray(raw) || raw.length !== 2) continue;
    const pair = [String(raw[0]), raw[1] as unknown as NftVerdict] as const;
    elements.push(wanted.get(json(pair)) ?? pair);
  }
  return { name: km.name, type: sameDef ? dm.type : kType, map: 'verdict', elements };
}

function observeTable(kt: NftTableState, dt: NftTableDesired | undefined): NftTableDesired {
  const chains: Record<string, NftChainDesired> = {};
  for (const kc of kt.chains) {
    const dc = dt?.chains[kc.name];
    const base = kernelBase(kc);
    const kernelRules = kc.rules.map((r) =>
      r.comment === undefined
        ? { expr: r.expr as unknown as NftStatement[] }
        : { expr: r.expr as unknown as NftStatement[], comment: r.comment },
    );
    const hashesMatch = dc !== undefined && json(chainHashes(kernelRules)) === json(chainHashes(dc.rules));
    const rules = hashesMatch ? dc.rules : kernelRules;
    if (hashesMatch && sameBase(base, dc.base)) chains[kc.name] = dc;
    else chains[kc.name] = base ? { name: kc.name, base, rules } : { name: kc.name, rules };
  }
  const sets: Record<string, NftSetDesired> = {};
  for (const ks of kt.sets) sets[ks.name] = observeSet(ks, dt?.sets[ks.name]);
  const maps: Record<string, NftMapDesired> = {};
  for (const km of kt.maps) maps[km.name] = observeMap(km, dt?.maps[km.name]);
  return { family: kt.family as IpFamily, name: kt.name, chains, sets, maps };
}

/** The kernel's `calico` tables as a ruleset `diffRuleset(observed, desired)` can repair. */
export function observeRuleset(kernel: NftRuleset, desired: NftDesired): NftDesired {
  const tables: NftTableDesired[] = [];
  for (const kt of kernel.tables) {
    if (kt.name !== TABLE_NAME || !MANAGED_FAMILIES.includes(kt.family as IpFamily)) continue;
    const dt = desired.tables.find((t) => t.family === kt.family && t.name === kt.name);
    tables.push(observeTable(kt, dt));
  }
  return { tables };
}
