/**
 * The in-memory ruleset behind FakeNft: one network namespace's nftables state and the rules by
 * which libnftables 1.0.6 on a Linux 6.x kernel changes it, as observed on the real thing:
 *
 * - handles: tables are numbered per namespace; chains, sets, maps, rules and the anonymous sets
 *   inside rules (`{ "set": … }`, also an inline verdict map) share one counter per table, so a
 *   rule with one anonymous set takes the handle after the set's.
 * - `add` of an existing table, chain, set or element changes nothing (a base chain takes the new
 *   policy); `create` fails with EEXIST; a map element whose key is taken with another value fails
 *   with EEXIST either way.
 * - `add rule` appends (a `handle` given with `add` is ignored, as libnftables 1.0.6 does) or goes
 *   after the rule at `index`; `insert` goes first, or before the rule with `handle` / at `index`;
 *   `replace` keeps the handle and position.
 * - deleting a chain also deletes its rules but fails with EBUSY while a rule or a verdict-map
 *   element jumps to it; deleting a set or map fails with EBUSY while a rule refers to `@name`.
 * - `flush table` removes every rule of the table (chains, sets and elements stay).
 * - jumps to a missing chain fail with ENOENT, to a base chain with EOPNOTSUPP; a loop fails with
 *   ELOOP once a base chain reaches it; a rule naming a missing `@set` fails with ENOENT.
 *
 * - a batch the kernel rejects still uses up the handles it numbered (tables, chains, sets,
 *   rules, also those after the failing command); one that nft's own evaluation rejects uses none.
 *
 * - deleting an element that is not there: nft itself says "element does not exist" for an
 *   interval set; for other sets the kernel answers ENOENT.
 *
 * - nft itself, from the cache a long-lived context keeps, refuses a rule that jumps to a missing
 *   chain or names a missing `@set`, and a delete of a missing rule handle; those batches use up
 *   no handles. An insert before a missing handle is left to the kernel.
 *
 * Not modelled: nft's spelling suggestions in error texts ("did you mean …"); that a fresh context
 * (a cold cache, as the `nft` CLI has) leaves some of those lookups to the kernel, which then
 * answers ENOENT and uses up handles; nft's rewriting of expressions
 * beyond a few print forms (it drops a protocol match that a later header match implies, and
 * orders hash-set elements its own way); interval overlap; the kernel's limit on jump depth;
 * named counters/quotas/limits; flowtables.
 */
import type {
  NftChainPolicy,
  NftChainType,
  NftCommand,
  NftFamily,
  NftHook,
  NftMetainfo,
  NftRule,
  NftSetElem,
  NftStatement,
} from '../json/types.js';
import { checkCommandShape } from './fake-shape.js';
import {
  checkValue,
  EBUSY,
  EEXIST,
  ELOOP,
  ENOENT,
  EOPNOTSUPP,
  elemKey,
  FakeNftFailure,
  isRecord,
  KNOWN_TYPES,
  kernelError,
  normalizeElem,
  userError,
} from './fake-values.js';

export const FAKE_METAINFO: NftMetainfo = {
  version: '1.0.6',
  release_name: 'Lester Gooch #5',
  json_schema_version: 1,
};

export interface FakeRule {
  handle: number;
  expr: NftStatement[];
  comment?: string;
}

export interface FakeChain {
  name: string;
  handle: number;
  base?: { type: NftChainType; hook: NftHook; prio: number; policy: NftChainPolicy; dev?: string };
  rules: FakeRule[];
}

export interface FakeSet {
  kind: 'set' | 'map';
  name: string;
  handle: number;
  type: string | string[];
  map?: string;
  flags: string[];
  /** Elements by key, in the order they were added. */
  elems: Map<string, NftSetElem>;
  extra: Record<string, unknown>;
}

export interface FakeTable {
  family: NftFamily;
  name: string;
  handle: number;
  nextHandle: number;
  chains: Map<string, FakeChain>;
  /** Sets and maps share one namespace of names, as in the kernel. */
  sets: Map<string, FakeSet>;
}

export interface FakeState {
  nextTableHandle: number;
  tables: Map<string, FakeTable>;
}

export function emptyState(): FakeState {
  return { nextTableHandle: 1, tables: new Map() };
}

export function cloneState(s: FakeState): FakeState {
  return structuredClone(s);
}

const tableKey = (family: string, name: string) => `${family} ${name}`;

const CHAIN_TYPES = new Set(['filter', 'nat', 'route']);
const HOOKS = new Set(['prerouting', 'input', 'forward', 'output', 'postrouting', 'ingress', 'egress']);

/** What one batch produced: objects for `list` commands, echoed commands with handles. */
export interface BatchOutput {
  listed: Record<string, unknown>[];
  echoed: NftCommand[];
  listedAnything: boolean;
}

/**
 * Applies `commands` to `state` in place, in order, and throws the FakeNftFailure nft would
 * report. The caller applies to a copy and keeps it only on success; after a failure of stage
 * `kernel` it keeps the copy's handle counters (see {@link keepHandleCounters}).
 *
 * As with the real thing, a parse error stops everything; otherwise every command is tried, and an
 * evaluation (`user`) error anywhere wins over kernel errors, because nft sends nothing to the
 * kernel when its own evaluation failed.
 */
export function applyBatch(state: FakeState, commands: readonly unknown[]): BatchOutput {
  // nft parses the whole document before evaluating any of it.
  commands.forEach((c, i) => {
    checkCommandShape(c, i);
  });
  const out: BatchOutput = { listed: [], echoed: [], listedAnything: false };
  const failures: FakeNftFailure[] = [];
  for (const c of commands as Record<string, Record<string, Record<string, unknown> | null>>[]) {
    try {
      applyCommand(state, c, out);
    } catch (e) {
      if (!(e instanceof FakeNftFailure)) throw e;
      failures.push(e);
    }
  }
  if (failures.length === 0) {
    try {
      for (const t of state.tables.values()) checkLoops(t);
    } catch (e) {
      if (!(e instanceof FakeNftFailure)) throw e;
      failures.push(e);
    }
  }
  const first = failures.find((f) => f.stage === 'user') ?? failures[0];
  if (first) throw first;
  return out;
}

/**
 * After a batch the kernel rejected: the handles it numbered stay used, in `committed` as in the
 * kernel (tables made and dropped in the batch still used up their table handle).
 */
export function keepHandleCounters(committed: FakeState, attempted: FakeState): void {
  committed.nextTableHandle = attempted.nextTableHandle;
  for (const [key, t] of committed.tables) {
    const a = attempted.tables.get(key);
    if (a && a.handle === t.handle) t.nextHandle = a.nextHandle;
  }
}

function applyCommand(
  state: FakeState,
  c: Record<string, Record<string, Record<string, unknown> | null>>,
  out: BatchOutput,
): void {
  const verb = Object.keys(c)[0]!;
  const body = c[verb]!;
  const kind = Object.keys(body)[0]!;
  const obj = body[kind] ?? {};
  const echoed = structuredClone(obj);
  switch (verb) {
    case 'add':
    case 'create':
      addObject(state, kind, obj, echoed, verb === 'create');
      break;
    case 'insert':
      addRule(state, obj, echoed, 'insert');
      break;
    case 'replace':
      addRule(state, obj, echoed, 'replace');
      break;
    case 'delete':
      deleteObject(state, kind, obj);
      break;
    case 'flush':
      flushObject(state, kind, obj);
      break;
    case 'list':
      out.listedAnything = true;
      out.listed.push(...listObject(state, kind, obj));
      return;
  }
  if (verb === 'replace') {
    // libnftables 1.0.6 echoes a replaced rule's handle beside the rule, not in it.
    const { handle, ...ruleBody } = echoed;
    out.echoed.push({ replace: { rule: ruleBody, handle } } as unknown as NftCommand);
    return;
  }
  out.echoed.push({ [verb]: { [kind]: kind === 'ruleset' ? null : echoed } } as unknown as NftCommand);
}

// ---------------------------------------------------------------------------------------------
// Lookups

function getTable(
  state: FakeState,
  obj: Record<string, unknown>,
  tableField: 'name' | 'table',
): FakeTable | undefined {
  const family = obj.family as string;
  if (tableField === 'name' && obj.name === undefined && typeof obj.handle === 'number') {
    return [...state.tables.values()].find((t) => t.family === family && t.handle === obj.handle);
  }
  return state.tables.get(tableKey(family, obj[tableField] as string));
}

function needTable(
  state: FakeState,
  obj: Record<string, unknown>,
  tableField: 'name' | 'table',
  kernel: boolean,
): FakeTable {
  const t = getTable(state, obj, tableField);
  if (!t) throw kernel ? kernelError(ENOENT) : userError(ENOENT);
  return t;
}

function findChain(t: FakeTable, obj: Record<string, unknown>): FakeChain | undefined {
  if (obj.name === undefined && typeof obj.handle === 'number') {
    return [...t.chains.values()].find((c) => c.handle === obj.handle);
  }
  return t.chains.get(obj.name as string);
}

function findSet(t: FakeTable, obj: Record<string, unknown>): FakeSet | undefined {
  if (obj.name === undefined && typeof obj.handle === 'number') {
    return [...t.sets.values()].find((s) => s.handle === obj.handle);
  }
  return t.sets.get(obj.name as string);
}

/**
 * Walks a JSON tree, calling `visit` on every object and string, except free text (a log prefix,
 * a comment), which may start with `@` without naming a set.
 */
function walk(v: unknown, visit: (node: unknown) => void): void {
  visit(v);
  if (Array.isArray(v)) for (const x of v) walk(x, visit);
  else if (isRecord(v)) {
    for (const [k, x] of Object.entries(v)) {
      if (typeof x === 'string' && (k === 'prefix' || k === 'comment')) continue;
      walk(x, visit);
    }
  }
}

interface Refs {
  sets: Set<string>;
  chains: Set<string>;
  anonSets: number;
}

function refsOf(expr: unknown): Refs {
  const refs: Refs = { sets: new Set(), chains: new Set(), anonSets: 0 };
  walk(expr, (n) => {
    if (typeof n === 'string' && n.startsWith('@')) refs.sets.add(n.slice(1));
    if (isRecord(n)) {
      for (const verdict of ['jump', 'goto'] as const) {
        const body = n[verdict];
        if (isRecord(body) && typeof body.target === 'string') refs.chains.add(body.target);
      }
      if ('set' in n && Object.keys(n).length === 1) refs.anonSets++;
    }
  });
  return refs;
}

function setReferencedBy(t: FakeTable, name: string): boolean {
  for (const c of t.chains.values()) {
    for (const r of c.rules) if (refsOf(r.expr).sets.has(name)) return true;
  }
  return false;
}

function chainTargets(t: FakeTable, c: FakeChain): Set<string> {
  const targets = new Set<string>();
  for (const r of c.rules) {
    const refs = refsOf(r.expr);
    for (const x of refs.chains) targets.add(x);
    // A named verdict map's elements are jumps of every rule that looks it up.
    for (const s of refs.sets) {
      const m = t.sets.get(s);
      if (m?.kind === 'map') for (const x of refsOf([...m.elems.values()]).chains) targets.add(x);
    }
  }
  return targets;
}

function chainReferenced(t: FakeTable, name: string): boolean {
  for (const c of t.chains.values()) {
    if (c.name !== name && refsOf(c.rules.map((r) => r.expr)).chains.has(name)) return true;
  }
  for (const s of t.sets.values()) {
    if (s.kind === 'map' && refsOf([...s.elems.values()]).chains.has(name)) return true;
  }
  return false;
}

/**
 * A rule's jump targets are looked up by nft in its cache (a long-lived context has it warm); a
 * verdict map element's by the kernel. A jump to a base chain is always the kernel's refusal.
 */
function checkJumpTargets(t: FakeTable, targets: Iterable<string>, by: 'nft' | 'kernel'): void {
  for (const target of targets) {
    const c = t.chains.get(target);
    if (!c) throw by === 'nft' ? userError(ENOENT) : kernelError(ENOENT);
    if (c.base) throw kernelError(EOPNOTSUPP);
  }
}

/**
 * The kernel validates the chains a base chain can reach, at the end of the batch: a loop among
 * them fails with ELOOP. A loop among chains no base chain reaches is accepted.
 */
function checkLoops(t: FakeTable): void {
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (name: string) => {
    const s = state.get(name);
    if (s === 'done') return;
    if (s === 'visiting') throw kernelError(ELOOP);
    state.set(name, 'visiting');
    const c = t.chains.get(name);
    if (c) for (const next of chainTargets(t, c)) visit(next);
    state.set(name, 'done');
  };
  for (const c of t.chains.values()) if (c.base) visit(c.name);
}

// ---------------------------------------------------------------------------------------------
// Commands

function addObject(
  state: FakeState,
  kind: string,
  obj: Record<string, unknown>,
  echoed: Record<string, unknown>,
  exclusive: boolean,
): void {
  switch (kind) {
    case 'table': {
      const key = tableKey(obj.family as string, obj.name as string);
      const existing = state.tables.get(key);
      if (existing) {
        // Nothing is created, and nft echoes the command without a handle.
        if (exclusive) throw kernelError(EEXIST);
        return;
      }
      const t: FakeTable = {
        family: obj.family as NftFamily,
        name: obj.name as string,
        handle: state.nextTableHandle++,
        nextHandle: 1,
        chains: new Map(),
        sets: new Map(),
      };
      state.tables.set(key, t);
      echoed.handle = t.handle;
      return;
    }
    case 'chain': {
      const t = needTable(state, obj, 'table', false);
      const base = baseOf(obj);
      const existing = t.chains.get(obj.name as string);
      if (existing) {
        if (exclusive) throw kernelError(EEXIST);
        if (base && existing.base) existing.base.policy = base.policy;
        else if (base || existing.base) throw kernelError(EOPNOTSUPP);
        echoed.handle = existing.handle;
        return;
      }
      const c: FakeChain = { name: obj.name as string, handle: t.nextHandle++, rules: [] };
      if (base) c.base = base;
      t.chains.set(c.name, c);
      echoed.handle = c.handle;
      return;
    }
    case 'set':
    case 'map': {
      const t = needTable(state, obj, 'table', false);
      const existing = t.sets.get(obj.name as string);
      if (existing) {
        if (exclusive) throw kernelError(EEXIST);
        if (Array.isArray(obj.elem)) addElements(t, existing, obj.elem as NftSetElem[], false);
        echoed.handle = existing.handle;
        return;
      }
      const s = newSet(t, kind, obj);
      if (Array.isArray(obj.elem)) addElements(t, s, obj.elem as NftSetElem[], false);
      t.sets.set(s.name, s);
      echoed.handle = s.handle;
      return;
    }
    case 'element': {
      const t = needTable(state, obj, 'table', false);
      const s = t.sets.get(obj.name as string);
      if (!s) throw userError(ENOENT);
      addElements(t, s, elemList(obj.elem), exclusive);
      return;
    }
    case 'rule':
      addRule(state, obj, echoed, 'add');
      return;
  }
}

function elemList(elem: unknown): NftSetElem[] {
  return (Array.isArray(elem) ? elem : [elem]) as NftSetElem[];
}

function baseOf(obj: Record<string, unknown>): FakeChain['base'] | undefined {
  const has = ['type', 'hook', 'prio'].filter((k) => obj[k] !== undefined);
  if (has.length === 0) return undefined;
  if (has.length !== 3) throw userError('Invalid chain: a base chain needs "type", "hook" and "prio".');
  if (!CHAIN_TYPES.has(obj.type as string)) throw userError(`Invalid chain type '${String(obj.type)}'`);
  if (!HOOKS.has(obj.hook as string)) throw userError(`Invalid chain hook '${String(obj.hook)}'`);
  if (typeof obj.prio !== 'number') throw userError('Invalid chain priority');
  const policy = (obj.policy ?? 'accept') as NftChainPolicy;
  if (policy !== 'accept' && policy !== 'drop') throw userError(`Unknown policy '${String(policy)}'`);
  const base: NonNullable<FakeChain['base']> = {
    type: obj.type as NftChainType,
    hook: obj.hook as NftHook,
    prio: obj.prio,
    policy,
  };
  if (typeof obj.dev === 'string') base.dev = obj.dev;
  return base;
}

function newSet(t: FakeTable, kind: 'set' | 'map', obj: Record<string, unknown>): FakeSet {
  const type = obj.type;
  const types = Array.isArray(type) ? type : [type];
  if (
    type === undefined ||
    types.some((x) => typeof x !== 'string' || !KNOWN_TYPES.has(x) || x === 'verdict')
  ) {
    throw userError(`Invalid set type ${JSON.stringify(type)}`);
  }
  if (kind === 'map' && (typeof obj.map !== 'string' || !KNOWN_TYPES.has(obj.map))) {
    throw userError(`Invalid map type ${JSON.stringify(obj.map)}`);
  }
  const flags = obj.flags === undefined ? [] : Array.isArray(obj.flags) ? obj.flags : [obj.flags];
  const s: FakeSet = {
    kind,
    name: obj.name as string,
    handle: t.nextHandle++,
    type: type as string | string[],
    flags: flags as string[],
    elems: new Map(),
    extra: {},
  };
  if (kind === 'map') s.map = obj.map as string;
  for (const k of ['policy', 'timeout', 'gc-interval', 'size', 'comment']) {
    if (obj[k] !== undefined) s.extra[k] = obj[k];
  }
  return s;
}

function addElements(t: FakeTable, s: FakeSet, elems: NftSetElem[], exclusive: boolean): void {
  const interval = s.flags.includes('interval');
  const isMap = s.kind === 'map';
  for (const raw of elems) {
    if (isMap) {
      if (!Array.isArray(raw) || raw.length !== 2) throw userError('map elements must be [key, value] pairs');
      checkValue(s.type, raw[0], interval);
      checkValue(s.map!, raw[1], false);
      if (s.map === 'verdict') checkJumpTargets(t, refsOf(raw[1]).chains, 'kernel');
    } else {
      checkValue(s.type, raw, interval);
    }
    const e = normalizeElem(raw, isMap);
    const key = elemKey(e, isMap);
    const existing = s.elems.get(key);
    if (existing !== undefined) {
      if (exclusive) throw kernelError(EEXIST);
      if (
        isMap &&
        elemKey((existing as [unknown, unknown])[1] as NftSetElem, false) !==
          elemKey((e as [unknown, unknown])[1] as NftSetElem, false)
      ) {
        throw kernelError(EEXIST);
      }
      continue;
    }
    s.elems.set(key, e);
  }
}

function normalizeStatement(s: NftStatement): NftStatement {
  const k = Object.keys(s)[0]!;
  const v = (s as Record<string, unknown>)[k];
  const scalarFlags = (body: Record<string, unknown>) => {
    if (Array.isArray(body.flags) && body.flags.length === 1) body.flags = body.flags[0];
  };
  switch (k) {
    case 'counter':
      return v === null ? { counter: { packets: 0, bytes: 0 } } : s;
    case 'log':
    case 'masquerade':
    case 'snat':
    case 'dnat': {
      if (!isRecord(v)) return s;
      const body = structuredClone(v);
      scalarFlags(body);
      if ((k === 'log' || k === 'masquerade') && Object.keys(body).length === 0) {
        return { [k]: null } as unknown as NftStatement;
      }
      return { [k]: body } as unknown as NftStatement;
    }
    case 'match': {
      const m = structuredClone(v) as { right: unknown };
      m.right = normalizeRight(m.right);
      return { match: m } as NftStatement;
    }
    default:
      return s;
  }
}

function normalizeRight(v: unknown): unknown {
  if (isRecord(v) && Array.isArray(v.set))
    return { set: v.set.map((x) => normalizeElem(x as NftSetElem, Array.isArray(x))) };
  return normalizeElem(v as NftSetElem, false);
}

function addRule(
  state: FakeState,
  obj: Record<string, unknown>,
  echoed: Record<string, unknown>,
  mode: 'add' | 'insert' | 'replace',
): void {
  const t = needTable(state, obj, 'table', true);
  const c = t.chains.get(obj.chain as string);
  if (!c) throw kernelError(ENOENT);
  const expr = (obj.expr as NftStatement[]).map(normalizeStatement);
  const refs = refsOf(expr);
  for (const name of refs.sets) {
    if (!t.sets.has(name)) throw userError(ENOENT);
  }
  // The kernel numbers the anonymous sets (sent first) and the new rule before it looks at the
  // rule's position and expressions, so a rule it then rejects has used up its handles.
  t.nextHandle += refs.anonSets;
  const newHandle = mode === 'replace' ? undefined : t.nextHandle++;
  checkJumpTargets(t, refs.chains, 'nft');

  let at: number;
  let replaced: FakeRule | undefined;
  const byHandle = () => {
    const i = c.rules.findIndex((r) => r.handle === obj.handle);
    if (i < 0) throw kernelError(ENOENT);
    return i;
  };
  const byIndex = () => {
    const i = obj.index as number;
    if (!Number.isInteger(i) || i < 0 || i >= c.rules.length) throw kernelError(ENOENT);
    return i;
  };
  if (mode === 'replace') {
    at = byHandle();
    replaced = c.rules[at];
  } else if (mode === 'insert') {
    at = obj.handle !== undefined ? byHandle() : obj.index !== undefined ? byIndex() : 0;
  } else {
    at = obj.index !== undefined ? byIndex() + 1 : c.rules.length;
  }
  const r: FakeRule = { handle: replaced ? replaced.handle : newHandle!, expr };
  if (typeof obj.comment === 'string') r.comment = obj.comment;
  if (replaced) c.rules[at] = r;
  else c.rules.splice(at, 0, r);
  echoed.handle = r.handle;
}

function deleteObject(state: FakeState, kind: string, obj: Record<string, unknown>): void {
  if (kind === 'table') {
    const t = getTable(state, obj, 'name');
    if (!t) throw kernelError(ENOENT);
    state.tables.delete(tableKey(t.family, t.name));
    return;
  }
  const t = needTable(state, obj, 'table', true);
  switch (kind) {
    case 'chain': {
      const c = findChain(t, obj);
      if (!c) throw kernelError(ENOENT);
      if (chainReferenced(t, c.name)) throw kernelError(EBUSY);
      t.chains.delete(c.name);
      return;
    }
    case 'rule': {
      const c = t.chains.get(obj.chain as string);
      if (!c) throw kernelError(ENOENT);
      const i = c.rules.findIndex((r) => r.handle === obj.handle);
      if (i < 0) throw userError(ENOENT);
      c.rules.splice(i, 1);
      return;
    }
    case 'set':
    case 'map': {
      const s = findSet(t, obj);
      if (!s) throw kernelError(ENOENT);
      if (setReferencedBy(t, s.name)) throw kernelError(EBUSY);
      t.sets.delete(s.name);
      return;
    }
    case 'element': {
      const s = t.sets.get(obj.name as string);
      if (!s) throw userError(ENOENT);
      const isMap = s.kind === 'map';
      for (const raw of elemList(obj.elem)) {
        const key = elemKey(normalizeElem(raw, isMap && Array.isArray(raw)), isMap && Array.isArray(raw));
        if (!s.elems.delete(key)) {
          throw s.flags.includes('interval') ? userError('element does not exist') : kernelError(ENOENT);
        }
      }
      return;
    }
  }
}

function flushObject(state: FakeState, kind: string, obj: Record<string, unknown> | null): void {
  if (kind === 'ruleset') {
    state.tables.clear();
    return;
  }
  const o = obj as Record<string, unknown>;
  if (kind === 'table') {
    const t = getTable(state, o, 'name');
    if (!t) throw kernelError(ENOENT);
    for (const c of t.chains.values()) c.rules = [];
    return;
  }
  const t = needTable(state, o, 'table', true);
  if (kind === 'chain') {
    const c = findChain(t, o);
    if (!c) throw kernelError(ENOENT);
    c.rules = [];
    return;
  }
  const s = findSet(t, o);
  if (!s) throw kernelError(ENOENT);
  s.elems.clear();
}

// ---------------------------------------------------------------------------------------------
// Listing, in the order and form `nft -j list` prints

function tableJson(t: FakeTable): Record<string, unknown> {
  return { table: { family: t.family, name: t.name, handle: t.handle } };
}

function setJson(t: FakeTable, s: FakeSet): Record<string, unknown> {
  const body: Record<string, unknown> = {
    family: t.family,
    name: s.name,
    table: t.name,
    type: s.type,
    handle: s.handle,
  };
  if (s.map !== undefined) body.map = s.map;
  Object.assign(body, s.extra);
  if (s.flags.length) body.flags = [...s.flags];
  if (s.elems.size) body.elem = structuredClone([...s.elems.values()]);
  return { [s.kind]: body };
}

function chainJson(t: FakeTable, c: FakeChain): Record<string, unknown> {
  const body: Record<string, unknown> = { family: t.family, table: t.name, name: c.name, handle: c.handle };
  if (c.base) Object.assign(body, structuredClone(c.base));
  return { chain: body };
}

function ruleJson(t: FakeTable, c: FakeChain, r: FakeRule): Record<string, unknown> {
  const body: NftRule = { family: t.family, table: t.name, chain: c.name, handle: r.handle };
  if (r.comment !== undefined) body.comment = r.comment;
  body.expr = structuredClone(r.expr);
  return { rule: body };
}

function tableListing(t: FakeTable): Record<string, unknown>[] {
  const out = [tableJson(t)];
  for (const s of t.sets.values()) out.push(setJson(t, s));
  for (const c of t.chains.values()) out.push(chainJson(t, c));
  for (const c of t.chains.values()) for (const r of c.rules) out.push(ruleJson(t, c, r));
  return out;
}

export function rulesetListing(state: FakeState): Record<string, unknown>[] {
  return [...state.tables.values()].flatMap(tableListing);
}

function listObject(
  state: FakeState,
  kind: string,
  obj: Record<string, unknown> | null,
): Record<string, unknown>[] {
  if (kind === 'ruleset') return rulesetListing(state);
  if (kind === 'tables') {
    const family = isRecord(obj) ? obj.family : undefined;
    return [...state.tables.values()]
      .filter((t) => family === undefined || t.family === family)
      .map(tableJson);
  }
  const o = obj as Record<string, unknown>;
  if (kind === 'table') {
    const t = getTable(state, o, 'name');
    if (!t) throw userError(ENOENT);
    return tableListing(t);
  }
  const t = needTable(state, o, 'table', false);
  if (kind === 'chain') {
    const c = findChain(t, o);
    if (!c) throw userError(ENOENT);
    return [chainJson(t, c), ...c.rules.map((r) => ruleJson(t, c, r))];
  }
  const s = findSet(t, o);
  if (!s || s.kind !== kind) throw userError(ENOENT);
  return [setJson(t, s)];
}
