/**
 * The commands that move nftables from one desired ruleset to another, for one libnftables
 * transaction (upstream `felix/nftables/table.go` does the same for its chains and maps).
 *
 * Order, so that nothing is referenced before it exists or deleted while still referenced:
 *   1. add new tables, sets and maps (maps empty: their elements name chains)
 *   2. add new chains (empty)
 *   3. flush changed chains (rules differ, or they use a set/map being recreated)
 *   4. recreate sets/maps whose type changed; move the elements of the others (below)
 *   5. add the rules of changed and new chains
 *   6. flush removed chains, then delete removed sets/maps, then delete removed chains
 *   7. delete removed tables (with everything in them)
 * A changed chain is replaced whole (flush + re-add), unless its rules only grew at the end (a rule
 * appended to a policy): then only the new rules are added after the ones it holds, which spares
 * the kernel re-creating every rule and anonymous set of the chain (the rule hashes chain from the
 * first rule on, so equal leading rules are the same rules). Likewise when it only lost rules at
 * the end and the caller knows their handles (`RuleHandles`): those rules are deleted by handle.
 * A transaction that adds any rule makes the kernel validate every chain reachable from the
 * table's base chains at commit; one that only deletes rules does not. Unchanged chains are not
 * touched.
 * Objects that are the same object on both sides are equal without a look (the incremental
 * renderer replaces an object when it re-renders it, and the dataplane records the objects it
 * programmed).
 *
 * Elements are never moved with `add element` / `delete element`. libnftables 1.0.6 answers either
 * by fetching, before the transaction, the elements of every interval set in the table, the
 * anonymous sets of every rule included: one netlink dump per set, 3,000 of them at 300 endpoints
 * and 200 policies, 0.3–0.7 s for a one-element change. Instead:
 *   - members only added: `add set` / `add map` naming the existing set with just the new
 *     elements (libnftables needs only its table cache; the kernel adds them to the set as it is,
 *     and refuses an interval that overlaps one already there, as `add element` would);
 *   - a member removed (or a map key's verdict changed): `flush set` / `flush map` and the same
 *     `add` with every element the set keeps, in the same transaction, so traffic sees the old set
 *     or the new one. libnftables then lists the table's sets without their elements; the cost
 *     is that of the set, not of the table.
 */
import {
  add,
  chain,
  del,
  flush,
  map,
  mapByName,
  type NftCommand,
  type NftDocument,
  type NftSetElem,
  type NftSetFlag,
  type NftStatement,
  type NftTableRef,
  type NftVerdict,
  nftDocument,
  rule,
  ruleRef,
  set,
  setByName,
  table,
} from '@calico-ts/nftables';
import type { IpFamily } from './names.js';

/**
 * Handles of rules in the kernel: per `<family> <chain>`, rule comment → handle. Only the chains
 * `trailingRemovals` names need to be there.
 */
export type RuleHandles = ReadonlyMap<string, ReadonlyMap<string, number>>;

/** The key of a chain in `RuleHandles`. */
export function ruleHandlesKey(family: IpFamily, chain: string): string {
  return `${family} ${chain}`;
}

type MapElem = readonly [string, NftVerdict];

import type {
  NftChainDesired,
  NftDesired,
  NftMapDesired,
  NftSetDesired,
  NftTableDesired,
} from './ruleset.js';

const json = (v: unknown) => JSON.stringify(v);

/** A table's identity, as the builders take it (a desired table is one). */
const ref = (t: NftTableDesired): NftTableRef => t;

/** The chain with its base-chain settings, for `add`. */
function chainObj(t: NftTableDesired, c: NftChainDesired) {
  return chain(ref(t), c.name, c.base);
}

/** The chain by name, for `flush` and `delete`. */
function chainRef(t: NftTableDesired, name: string) {
  return chain(ref(t), name);
}

/** A set or map by name and type, for `delete` (as Felix has always sent it). */
function setWithType(t: NftTableDesired, name: string, type: NftSetDesired['type']) {
  return setByName(ref(t), name, type as string | string[]);
}
function mapWithType(t: NftTableDesired, name: string, type: string) {
  return mapByName(ref(t), name, type, 'verdict');
}

function setDef(s: NftSetDesired): string {
  return json([s.type, s.flags]);
}

function mapDef(m: NftMapDesired): string {
  return json([m.type, m.map]);
}

/** Set and map names an expression tree refers to (`@name`). */
function collectRefs(v: unknown, into: Set<string>): void {
  if (typeof v === 'string') {
    if (v.startsWith('@')) into.add(v.slice(1));
  } else if (Array.isArray(v)) {
    for (const x of v) collectRefs(x, into);
  } else if (v && typeof v === 'object') {
    for (const x of Object.values(v)) collectRefs(x, into);
  }
}

function chainUses(c: NftChainDesired, names: Set<string>): boolean {
  if (names.size === 0) return false;
  const refs = new Set<string>();
  collectRefs(
    c.rules.map((r) => r.expr),
    refs,
  );
  for (const r of refs) if (names.has(r)) return true;
  return false;
}

function addRules(t: NftTableDesired, c: NftChainDesired, out: NftCommand[], from = 0): void {
  for (const r of c.rules.slice(from)) {
    const opts = r.comment !== undefined ? { comment: r.comment } : {};
    out.push(add(rule(ref(t), c.name, r.expr as NftStatement[], opts)));
  }
}

function addSet(t: NftTableDesired, s: NftSetDesired, out: NftCommand[]): void {
  const opts = { flags: s.flags as NftSetFlag[], elem: s.elements as NftSetElem[] };
  out.push(add(set(ref(t), s.name, s.type as string | string[], opts)));
}

function addMap(
  t: NftTableDesired,
  m: NftMapDesired,
  out: NftCommand[],
  elem: readonly MapElem[] = [],
): void {
  out.push(add(map(ref(t), m.name, m.type, m.map, { elem: elem as NftSetElem[] })));
}

/**
 * Moves an existing set's elements from `cur` to `des` (see the header for why not `add element`
 * / `delete element`): only additions are an `add set` of the new elements; any removal is a
 * flush and an `add set` of all elements left.
 */
function moveSetElements(
  t: NftTableDesired,
  cur: NftSetDesired,
  des: NftSetDesired,
  out: NftCommand[],
): void {
  const { added, removed } = setElementDelta(cur, des);
  if (removed.length > 0) {
    out.push(flush(setByName(ref(t), des.name)));
    if (des.elements.length > 0) addSet(t, des, out);
  } else if (added.length > 0) {
    addSet(t, { ...des, elements: added }, out);
  }
}

/** The same for a verdict map; a key whose verdict changed counts as a removal. */
function moveMapElements(
  t: NftTableDesired,
  cur: NftMapDesired | undefined,
  des: NftMapDesired,
  out: NftCommand[],
): void {
  const { added, removed } = mapElementDelta(cur, des);
  if (removed.length > 0) {
    out.push(flush(mapByName(ref(t), des.name)));
    if (des.elements.length > 0) addMap(t, des, out, des.elements);
  } else if (added.length > 0) {
    addMap(t, des, out, added);
  }
}

/** An element's identity: itself when a string (addresses, names), else its JSON. */
function elementKey(e: unknown): string {
  return typeof e === 'string' ? e : json(e);
}

/** A verdict's identity without JSON: maps have one per interface, thousands on a large node. */
function verdictKey(v: NftVerdict): string {
  if ('goto' in v) return `goto ${v.goto.target}`;
  if ('jump' in v) return `jump ${v.jump.target}`;
  return Object.keys(v)[0]!;
}

function setElementDelta(cur: NftSetDesired | undefined, des: NftSetDesired) {
  const before = new Map((cur?.elements ?? []).map((e) => [elementKey(e), e]));
  const after = new Map(des.elements.map((e) => [elementKey(e), e]));
  return {
    added: [...after].filter(([k]) => !before.has(k)).map(([, e]) => e),
    removed: [...before].filter(([k]) => !after.has(k)).map(([, e]) => e),
  };
}

function mapElementDelta(cur: NftMapDesired | undefined, des: NftMapDesired) {
  const before = new Map((cur?.elements ?? []).map((e) => [e[0], e]));
  const added: MapElem[] = [];
  const removed: MapElem[] = [];
  const seen = new Set<string>();
  for (const e of des.elements) {
    seen.add(e[0]);
    const old = before.get(e[0]);
    if (!old) added.push(e);
    else if (old !== e && old[1] !== e[1] && verdictKey(old[1]) !== verdictKey(e[1])) {
      removed.push(old);
      added.push(e);
    }
  }
  for (const [k, e] of before) if (!seen.has(k)) removed.push(e);
  return { added, removed };
}

function tableKey(t: { family: IpFamily; name: string }): string {
  return `${t.family} ${t.name}`;
}

const EMPTY_TABLE = (t: NftTableDesired): NftTableDesired => ({ ...t, chains: {}, sets: {}, maps: {} });

/** The names of one table to compare (see `IncrementalRenderer`'s `RulesetChange`). */
export interface TableNames {
  readonly chains: ReadonlySet<string>;
  readonly sets: ReadonlySet<string>;
  readonly maps: ReadonlySet<string>;
}

/**
 * The minimal commands turning `current` into `desired`. With `only`, just the named objects of
 * each family's table are compared (the others are known to be equal): the cost of a change is
 * then the size of the change, not of the ruleset.
 */
export function diffRuleset(
  current: NftDesired,
  desired: NftDesired,
  only?: ReadonlyMap<IpFamily, TableNames>,
  handles?: RuleHandles,
): NftCommand[] {
  const out: NftCommand[] = [];
  const curTables = new Map(current.tables.map((t) => [tableKey(t), t]));
  const desTables = new Map(desired.tables.map((t) => [tableKey(t), t]));

  // Phases run table by table; tables are independent of each other.
  for (const des of desired.tables) {
    const existing = curTables.get(tableKey(des));
    if (!existing) out.push(add(table(des)));
    const names = existing ? only?.get(des.family) : undefined;
    if (only && existing && !names) continue;
    diffTable(existing ?? EMPTY_TABLE(des), des, out, names, handles);
  }
  for (const cur of current.tables) {
    if (!desTables.has(tableKey(cur))) out.push(del(table(cur)));
  }
  return out;
}

/** The values of `rec` named in `names` (all of them without `names`). */
function pick<T>(rec: Readonly<Record<string, T>>, names: ReadonlySet<string> | undefined): T[] {
  if (!names) return Object.values(rec);
  const out: T[] = [];
  for (const n of names) {
    const v = rec[n];
    if (v !== undefined) out.push(v);
  }
  return out;
}

/** Whether `prefix`'s rules are the first rules of `rules` (same objects or the same JSON). */
function startsWith(rules: NftChainDesired['rules'], prefix: NftChainDesired['rules']): boolean {
  return prefix.every((r, i) => r === rules[i] || json(r) === json(rules[i]));
}

/**
 * The chains, among the named ones (`only`), that lost rules at their end and nothing else: those
 * whose removed rules could be deleted by handle (see `RuleHandles`).
 */
export function trailingRemovals(
  current: NftDesired,
  desired: NftDesired,
  only: ReadonlyMap<IpFamily, TableNames>,
): { family: IpFamily; table: string; chain: string }[] {
  const out: { family: IpFamily; table: string; chain: string }[] = [];
  for (const des of desired.tables) {
    const cur = current.tables.find((t) => t.family === des.family && t.name === des.name);
    const names = only.get(des.family);
    if (!cur || !names) continue;
    for (const n of names.chains) {
      const old = cur.chains[n];
      const now = des.chains[n];
      if (!old || !now || old === now || now.rules.length >= old.rules.length) continue;
      if (json(old.base ?? null) !== json(now.base ?? null)) continue;
      if (startsWith(old.rules, now.rules)) out.push({ family: des.family, table: des.name, chain: n });
    }
  }
  return out;
}

function diffTable(
  cur: NftTableDesired,
  des: NftTableDesired,
  out: NftCommand[],
  only: TableNames | undefined,
  handles: RuleHandles | undefined,
): void {
  const desSets = pick(des.sets, only?.sets);
  const curSets = pick(cur.sets, only?.sets);
  const desMaps = pick(des.maps, only?.maps);
  const curMaps = pick(cur.maps, only?.maps);
  const desChains = pick(des.chains, only?.chains);
  const curChains = pick(cur.chains, only?.chains);
  const newSets = desSets.filter((s) => !cur.sets[s.name]);
  const newMaps = desMaps.filter((m) => !cur.maps[m.name]);
  const recreatedSets = desSets.filter(
    (s) => cur.sets[s.name] && cur.sets[s.name] !== s && setDef(cur.sets[s.name]!) !== setDef(s),
  );
  const recreatedMaps = desMaps.filter(
    (m) => cur.maps[m.name] && cur.maps[m.name] !== m && mapDef(cur.maps[m.name]!) !== mapDef(m),
  );
  const recreated = new Set([...recreatedSets.map((s) => s.name), ...recreatedMaps.map((m) => m.name)]);
  // A set or map is recreated only when its type changes (never in steady state); the chains
  // using it must then be rewritten too, and finding them means looking at every chain.
  if (only && recreated.size > 0) {
    diffTable(cur, des, out, undefined, handles);
    return;
  }
  const removedChains = curChains.filter((c) => !des.chains[c.name]);
  const newChains = desChains.filter((c) => !cur.chains[c.name]);
  const recreatedChains = desChains.filter(
    (c) =>
      cur.chains[c.name] &&
      cur.chains[c.name] !== c &&
      json(cur.chains[c.name]!.base ?? null) !== json(c.base ?? null),
  );
  const recreatedChainNames = new Set(recreatedChains.map((c) => c.name));
  const changedChains = desChains.filter((c) => {
    const old = cur.chains[c.name];
    if (!old || recreatedChainNames.has(c.name)) return false;
    return (old !== c && json(old.rules) !== json(c.rules)) || chainUses(old, recreated);
  });
  // Chains whose old rules are the start of the new ones: append the rest, no flush.
  const appendedFrom = new Map<string, number>();
  for (const c of changedChains) {
    const old = cur.chains[c.name]!;
    if (chainUses(old, recreated) || old.rules.length >= c.rules.length) continue;
    if (old.rules.every((r, i) => r === c.rules[i] || json(r) === json(c.rules[i]))) {
      appendedFrom.set(c.name, old.rules.length);
    }
  }

  // Chains that only lost rules at their end, each of them with a known handle: delete those.
  const deletedFrom = new Map<string, number[]>();
  for (const c of changedChains) {
    const old = cur.chains[c.name]!;
    const known = handles?.get(ruleHandlesKey(des.family, c.name));
    if (!known || chainUses(old, recreated) || c.rules.length >= old.rules.length) continue;
    if (!startsWith(old.rules, c.rules)) continue;
    const gone = old.rules
      .slice(c.rules.length)
      .map((r) => (r.comment === undefined ? undefined : known.get(r.comment)));
    if (gone.every((h) => h !== undefined)) deletedFrom.set(c.name, gone as number[]);
  }

  // 1. New sets (with their elements) and maps (empty for now).
  for (const s of newSets) addSet(des, s, out);
  for (const m of newMaps) addMap(des, m, out);
  // 2. New chains, empty, so every jump target exists before any rule names it.
  for (const c of newChains) out.push(add(chainObj(des, c)));
  // 3. Flush changed chains.
  for (const c of changedChains) {
    const gone = deletedFrom.get(c.name);
    if (gone) {
      for (const handle of gone) out.push(del(ruleRef(des, c.name, handle)));
    } else if (!appendedFrom.has(c.name)) out.push(flush(chainRef(des, c.name)));
  }
  // 4. Sets and maps: recreate on a type change, else move elements.
  for (const s of recreatedSets) {
    out.push(del(setWithType(des, s.name, cur.sets[s.name]!.type)));
    addSet(des, s, out);
  }
  for (const m of recreatedMaps) {
    out.push(del(mapWithType(des, m.name, cur.maps[m.name]!.type)));
    addMap(des, m, out);
  }
  for (const s of desSets) {
    const old = cur.sets[s.name];
    if (!old || recreated.has(s.name) || old === s) continue;
    moveSetElements(des, old, s, out);
  }
  for (const m of desMaps) {
    if (cur.maps[m.name] === m) continue;
    const fresh = !cur.maps[m.name] || recreated.has(m.name);
    moveMapElements(des, fresh ? undefined : cur.maps[m.name], m, out);
  }
  // 5. Rules of changed and new chains.
  for (const c of changedChains) {
    if (!deletedFrom.has(c.name)) addRules(des, c, out, appendedFrom.get(c.name) ?? 0);
  }
  for (const c of newChains) addRules(des, c, out);
  // Base chains whose hook or priority changed are replaced outright (nothing jumps to them).
  for (const c of recreatedChains) {
    out.push(flush(chainRef(des, c.name)));
    out.push(del(chainRef(des, c.name)));
    out.push(add(chainObj(des, c)));
    addRules(des, c, out);
  }
  // 6. Removals: empty the chains first so none is still jumped to, then sets/maps, then chains.
  for (const c of removedChains) if (c.rules.length > 0) out.push(flush(chainRef(cur, c.name)));
  for (const s of curSets) {
    if (!des.sets[s.name]) {
      out.push(del(setWithType(cur, s.name, s.type)));
    }
  }
  for (const m of curMaps) {
    if (!des.maps[m.name]) {
      out.push(del(mapWithType(cur, m.name, m.type)));
    }
  }
  for (const c of removedChains) out.push(del(chainRef(cur, c.name)));
}

/** The libnftables JSON document for a command list. */
export function toNftDocument(commands: readonly NftCommand[]): NftDocument {
  return nftDocument(commands);
}

/** The family a command acts in (`{ add: { rule: { family, … } } }`); undefined for none. */
export function commandFamily(c: NftCommand): IpFamily | undefined {
  const op = Object.values(c)[0] as Record<string, { family?: IpFamily } | null> | undefined;
  const obj = op === undefined ? undefined : Object.values(op)[0];
  return obj?.family;
}
