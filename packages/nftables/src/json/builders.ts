/**
 * Builders for nftables JSON commands, so a batch reads like the ruleset it makes:
 *
 *   const t = tableRef('ip', 'calico');
 *   [
 *     add(table(t)),
 *     add(chain(t, 'filter-FORWARD', { type: 'filter', hook: 'forward', prio: 0, policy: 'accept' })),
 *     add(set(t, 'cali40all-hosts', 'ipv4_addr', { flags: ['interval'] })),
 *     add(rule(t, 'filter-FORWARD', [ctState('established', 'related'), accept()])),
 *     add(rule(t, 'filter-FORWARD', [oifname('cali*'), ipSaddr(setRef('cali40all-hosts')), counter(), jump('cali-fw')])),
 *   ]
 *
 * Each builder emits the form libnftables prints back in a listing (a counter starts as
 * `{ packets: 0, bytes: 0 }`, a single NAT or log flag stands alone), so a rule built here and the
 * same rule read back from the kernel compare equal apart from counter values and handles.
 *
 * The expressions and verdicts that take no argument or only a name from a small fixed vocabulary
 * (`meta(key)`, `ct(key)`, `payload(protocol, field)`, `accept()`, `drop()`, `notrack()`, …) are
 * one frozen object each, shared by every rule that uses them: a ruleset of 30,000 rules would
 * otherwise hold a copy per use (about 100,000 small objects, 3 MiB at 300 endpoints). Build a
 * new object to change one; these cannot be mutated.
 * Pure: no I/O.
 */
import type {
  NftAnonSetExpr,
  NftChain,
  NftChainPolicy,
  NftChainType,
  NftCommand,
  NftCounterStmt,
  NftCtExpr,
  NftElement,
  NftExpr,
  NftFamily,
  NftFibExpr,
  NftFibFlag,
  NftFibResult,
  NftHook,
  NftLogFlag,
  NftLogStmt,
  NftMangleStmt,
  NftMap,
  NftMasqueradeStmt,
  NftMatchOp,
  NftMatchStmt,
  NftMetaExpr,
  NftMetaKey,
  NftNatFlag,
  NftNotrackStmt,
  NftObjectRef,
  NftPayloadExpr,
  NftPrefixExpr,
  NftRule,
  NftSet,
  NftSetElem,
  NftSetFlag,
  NftSnatStmt,
  NftStatement,
  NftTable,
  NftVerdict,
  NftVmapStmt,
} from './types.js';

/** A table's identity, passed to every builder of something inside it. */
export interface NftTableRef {
  readonly family: NftFamily;
  readonly name: string;
}

export function tableRef(family: NftFamily, name: string): NftTableRef {
  return { family, name };
}

// ---------------------------------------------------------------------------------------------
// Commands

export function add(object: NftObjectRef): NftCommand {
  return { add: object };
}
/** Like `add`, but fails with `exists` when the object is already there. */
export function create(object: NftObjectRef): NftCommand {
  return { create: object };
}
/** Deletes by name (tables, chains, sets, maps), by handle (rules) or by value (elements). */
export function del(object: NftObjectRef): NftCommand {
  return { delete: object };
}
/** Empties a table (its rules), a chain (its rules) or a set or map (its elements). */
export function flush(
  object: { table: NftTable } | { chain: NftChain } | { set: NftSet } | { map: NftMap },
): NftCommand {
  return { flush: object };
}
export function flushRuleset(): NftCommand {
  return { flush: { ruleset: null } };
}
/** Inserts a rule at the top of its chain, or before the rule given by `handle` or `index`. */
export function insert(object: { rule: NftRule }): NftCommand {
  return { insert: object };
}
/** Replaces the rule with `handle` in place, keeping its handle and position. */
export function replace(object: { rule: NftRule }): NftCommand {
  return { replace: object };
}

// ---------------------------------------------------------------------------------------------
// Objects

export function table(t: NftTableRef): { table: NftTable } {
  return { table: { family: t.family, name: t.name } };
}

export interface BaseChainSpec {
  type: NftChainType;
  hook: NftHook;
  prio: number;
  policy?: NftChainPolicy;
}

/** A regular chain, or a base chain attached to a hook when `base` is given. */
export function chain(t: NftTableRef, name: string, base?: BaseChainSpec): { chain: NftChain } {
  const c: NftChain = { family: t.family, table: t.name, name };
  if (base) {
    c.type = base.type;
    c.hook = base.hook;
    c.prio = base.prio;
    c.policy = base.policy ?? 'accept';
  }
  return { chain: c };
}

export interface RuleOptions {
  comment?: string;
  /** For `replace` and `delete`: the rule's handle. For `insert`: the rule to insert before. */
  handle?: number;
  /** For `add`: the position of the rule to add after; for `insert`: the rule to insert before. */
  index?: number;
}

export function rule(
  t: NftTableRef,
  chainName: string,
  expr: NftStatement[],
  opts: RuleOptions = {},
): { rule: NftRule } {
  const r: NftRule = { family: t.family, table: t.name, chain: chainName, expr };
  if (opts.handle !== undefined) r.handle = opts.handle;
  if (opts.index !== undefined) r.index = opts.index;
  if (opts.comment !== undefined) r.comment = opts.comment;
  return { rule: r };
}

/** A rule by handle, for `delete`. */
export function ruleRef(t: NftTableRef, chainName: string, handle: number): { rule: NftRule } {
  return { rule: { family: t.family, table: t.name, chain: chainName, handle } };
}

export interface SetOptions {
  flags?: NftSetFlag[];
  elem?: NftSetElem[];
  size?: number;
  timeout?: number;
  policy?: 'performance' | 'memory';
  comment?: string;
}

function setBody(
  t: NftTableRef,
  name: string,
  type: string | string[] | undefined,
  opts: SetOptions,
): NftSet {
  const s: NftSet = { family: t.family, table: t.name, name };
  if (type !== undefined) s.type = type;
  if (opts.flags?.length) s.flags = [...opts.flags];
  if (opts.elem?.length) s.elem = [...opts.elem];
  if (opts.size !== undefined) s.size = opts.size;
  if (opts.timeout !== undefined) s.timeout = opts.timeout;
  if (opts.policy !== undefined) s.policy = opts.policy;
  if (opts.comment !== undefined) s.comment = opts.comment;
  return s;
}

/** A named set of `type` values (`ipv4_addr`, `ipv6_addr`, `ifname`, `inet_service`, `mark`, …). */
export function set(
  t: NftTableRef,
  name: string,
  type: string | string[],
  opts: SetOptions = {},
): { set: NftSet } {
  return { set: setBody(t, name, type, opts) };
}

/** A named map from `type` keys to `valueType` values (`verdict` for a verdict map). */
export function map(
  t: NftTableRef,
  name: string,
  type: string | string[],
  valueType: string,
  opts: SetOptions = {},
): { map: NftMap } {
  const body = setBody(t, name, type, {});
  const m: NftMap = { ...body, map: valueType };
  if (opts.flags?.length) m.flags = [...opts.flags];
  if (opts.elem?.length) m.elem = [...opts.elem];
  if (opts.size !== undefined) m.size = opts.size;
  if (opts.timeout !== undefined) m.timeout = opts.timeout;
  if (opts.policy !== undefined) m.policy = opts.policy;
  if (opts.comment !== undefined) m.comment = opts.comment;
  return { map: m };
}

/** A set or map by name, for `delete` and `flush`; the type may be named too (nft ignores it). */
export function setByName(t: NftTableRef, name: string, type?: string | string[]): { set: NftSet } {
  const s: NftSet = { family: t.family, table: t.name, name };
  if (type !== undefined) s.type = type;
  return { set: s };
}
export function mapByName(
  t: NftTableRef,
  name: string,
  type?: string | string[],
  valueType?: string,
): { map: NftMap } {
  const m: NftMap = { family: t.family, table: t.name, name };
  if (type !== undefined) m.type = type;
  if (valueType !== undefined) m.map = valueType;
  return { map: m };
}

/** Elements of the set or map `setName`: values, or `[key, value]` pairs for a map. */
export function elements(t: NftTableRef, setName: string, elem: NftSetElem[]): { element: NftElement } {
  return { element: { family: t.family, table: t.name, name: setName, elem: [...elem] } };
}

// ---------------------------------------------------------------------------------------------
// Expressions

/** One frozen object per key, made on first use (the keys are the builders' callers' names). */
function shared<K, V extends object>(make: (key: K) => V): (key: K) => V {
  const made = new Map<K, V>();
  return (key) => {
    let v = made.get(key);
    if (v === undefined) {
      v = deepFreeze(make(key));
      made.set(key, v);
    }
    return v;
  };
}

function deepFreeze<V extends object>(v: V): V {
  for (const x of Object.values(v)) if (typeof x === 'object' && x !== null) deepFreeze(x);
  return Object.freeze(v);
}

const payloadOf = shared((protocol: string) =>
  shared((field: string): NftPayloadExpr => ({ payload: { protocol, field } })),
);
const metaOf = shared((key: NftMetaKey): NftMetaExpr => ({ meta: { key } }));
const ctOf = shared((key: string): NftCtExpr => ({ ct: { key } }));

export function payload(protocol: string, field: string): NftPayloadExpr {
  return payloadOf(protocol)(field);
}
export function meta(key: NftMetaKey): NftMetaExpr {
  return metaOf(key);
}
export function ct(key: string): NftCtExpr {
  return ctOf(key);
}
/** A FIB lookup: `fib(['daddr'], 'type')` is `fib daddr type`. */
export function fib(flags: NftFibFlag[], result: NftFibResult): NftFibExpr {
  return { fib: { result, flags: [...flags] } };
}
export function prefix(addr: string, len: number): NftPrefixExpr {
  return { prefix: { addr, len } };
}
/**
 * A CIDR as nftables takes it: the bare address for a host route (/32, /128), else a prefix.
 * The address must be the network address (nft rejects host bits set under the mask).
 */
export function cidr(text: string): string | NftPrefixExpr {
  const slash = text.indexOf('/');
  if (slash < 0) return text;
  const addr = text.slice(0, slash);
  const len = Number(text.slice(slash + 1));
  const full = addr.includes(':') ? 128 : 32;
  return len === full ? addr : prefix(addr, len);
}
export function range(low: NftExpr, high: NftExpr): NftExpr {
  return { range: [low, high] };
}
/** An anonymous set `{ a, b, … }`, or an anonymous map when given `[key, value]` pairs. */
export function anonSet(values: (NftExpr | [NftExpr, NftExpr])[]): NftAnonSetExpr {
  return { set: [...values] };
}
export function concat(...exprs: NftExpr[]): NftExpr {
  return { concat: exprs };
}
/** One value as itself, several as an anonymous set: `80` or `{ 80, 443 }`. */
export function oneOrSet(values: readonly NftExpr[]): NftExpr {
  return values.length === 1 ? values[0]! : anonSet([...values]);
}
/** A reference to the named set or map: `@name`. */
export function setRef(name: string): string {
  return `@${name}`;
}
export function bitAnd(left: NftExpr, right: NftExpr): NftExpr {
  return { '&': [left, right] };
}
export function bitOr(left: NftExpr, right: NftExpr): NftExpr {
  return { '|': [left, right] };
}

// ---------------------------------------------------------------------------------------------
// Matches

export function match(left: NftExpr, op: NftMatchOp, right: NftExpr): NftMatchStmt {
  return { match: { op, left, right } };
}
export function eq(left: NftExpr, right: NftExpr): NftMatchStmt {
  return match(left, '==', right);
}
export function ne(left: NftExpr, right: NftExpr): NftMatchStmt {
  return match(left, '!=', right);
}
/** `iifname "cali*"`: a trailing `*` matches a name prefix. */
export function iifname(name: string): NftMatchStmt {
  return eq(meta('iifname'), name);
}
export function oifname(name: string): NftMatchStmt {
  return eq(meta('oifname'), name);
}
/** `meta l4proto tcp` (a name or a protocol number). */
export function l4proto(proto: string | number): NftMatchStmt {
  return eq(meta('l4proto'), proto);
}
/** `meta mark & mask == value`, or `meta mark == value` without a mask. */
export function markMatch(value: number, mask?: number): NftMatchStmt {
  return mask === undefined ? eq(meta('mark'), value) : eq(bitAnd(meta('mark'), mask), value);
}
/** `meta mark & bits == 0`: none of the bits is set. */
export function markBitsClear(bits: number): NftMatchStmt {
  return eq(bitAnd(meta('mark'), bits >>> 0), 0);
}
/** `meta mark & bits == bits`: every one of the bits is set. */
export function markBitsSet(bits: number): NftMatchStmt {
  return eq(bitAnd(meta('mark'), bits >>> 0), bits >>> 0);
}
/** `ct state established,related`: true when the connection is in any of the states. */
export function ctState(...states: string[]): NftMatchStmt {
  return match(ct('state'), 'in', states.length === 1 ? states[0]! : states);
}
/** `fib daddr type local` and the like. */
export function fibType(flags: NftFibFlag[], type: string): NftMatchStmt {
  return eq(fib(flags, 'type'), type);
}
/** `ip saddr <addr | prefix | @set>`. */
export function ipSaddr(value: NftExpr): NftMatchStmt {
  return eq(payload('ip', 'saddr'), value);
}
export function ipDaddr(value: NftExpr): NftMatchStmt {
  return eq(payload('ip', 'daddr'), value);
}
export function ip6Saddr(value: NftExpr): NftMatchStmt {
  return eq(payload('ip6', 'saddr'), value);
}
export function ip6Daddr(value: NftExpr): NftMatchStmt {
  return eq(payload('ip6', 'daddr'), value);
}
/** `tcp dport <port | range | anonymous set | @set>` (implies `meta l4proto tcp`). */
export function tcpDport(value: NftExpr): NftMatchStmt {
  return eq(payload('tcp', 'dport'), value);
}
export function udpDport(value: NftExpr): NftMatchStmt {
  return eq(payload('udp', 'dport'), value);
}

// ---------------------------------------------------------------------------------------------
// Verdicts and other statements

const ACCEPT: NftVerdict = Object.freeze({ accept: null });
const DROP: NftVerdict = Object.freeze({ drop: null });
const RETURN: NftVerdict = Object.freeze({ return: null });
const CONTINUE: NftVerdict = Object.freeze({ continue: null });
const NOTRACK: NftNotrackStmt = Object.freeze({ notrack: null });

export function accept(): NftVerdict {
  return ACCEPT;
}
export function drop(): NftVerdict {
  return DROP;
}
/** `return`: back to the chain that jumped here (a base chain applies its policy). */
export function returnVerdict(): NftVerdict {
  return RETURN;
}
export function continueVerdict(): NftVerdict {
  return CONTINUE;
}
export function jump(target: string): NftVerdict {
  return { jump: { target } };
}
export function goto(target: string): NftVerdict {
  return { goto: { target } };
}

/** An anonymous counter, or a reference to the named counter `name`. */
export function counter(name?: string): NftCounterStmt {
  return { counter: name ?? { packets: 0, bytes: 0 } };
}
export function mangle(key: NftExpr, value: NftExpr): NftMangleStmt {
  return { mangle: { key, value } };
}
/**
 * `meta mark set value`, or with a mask only the bits under it:
 * `meta mark set meta mark & ~mask | value`. Written in the shortest form, which is how nft
 * prints it back: `meta mark | value` when the value fills the mask, `meta mark & ~mask` when it
 * is zero.
 */
export function setMark(value: number, mask?: number): NftMangleStmt {
  if (mask === undefined) return mangle(meta('mark'), value >>> 0);
  const v = (value & mask) >>> 0;
  const keep = ~mask >>> 0;
  if (keep === 0) return mangle(meta('mark'), v);
  if (v === 0) return mangle(meta('mark'), bitAnd(meta('mark'), keep));
  if ((keep | v) >>> 0 === 0xffffffff) return mangle(meta('mark'), bitOr(meta('mark'), v));
  return mangle(meta('mark'), bitOr(bitAnd(meta('mark'), keep), v));
}

/** `meta mark set meta mark | bits`: sets the bits, keeps the others. */
export function setMarkBits(bits: number): NftMangleStmt {
  return mangle(meta('mark'), bitOr(meta('mark'), bits >>> 0));
}
/** `meta mark set meta mark & ~bits`: clears the bits, keeps the others. */
export function clearMarkBits(bits: number): NftMangleStmt {
  return mangle(meta('mark'), bitAnd(meta('mark'), ~bits >>> 0));
}

/** `notrack`: the packet bypasses conntrack (valid before conntrack runs: raw priority). */
export function notrack(): NftNotrackStmt {
  return NOTRACK;
}

function flagValue<F extends string>(flags: F[] | undefined): F | F[] | undefined {
  if (!flags || flags.length === 0) return undefined;
  return flags.length === 1 ? flags[0] : [...flags];
}

export function masquerade(opts: { flags?: NftNatFlag[]; port?: NftExpr } = {}): NftMasqueradeStmt {
  const flags = flagValue(opts.flags);
  if (flags === undefined && opts.port === undefined) return { masquerade: null };
  return {
    masquerade: {
      ...(opts.port === undefined ? {} : { port: opts.port }),
      ...(flags === undefined ? {} : { flags }),
    },
  };
}

/** `snat to addr[:port]`: the source address (and ports) to translate to. */
export function snat(addr: NftExpr, opts: { port?: NftExpr; flags?: NftNatFlag[] } = {}): NftSnatStmt {
  const flags = flagValue(opts.flags);
  return {
    snat: {
      addr,
      ...(opts.port === undefined ? {} : { port: opts.port }),
      ...(flags === undefined ? {} : { flags }),
    },
  };
}

export interface LogOptions {
  prefix?: string;
  level?: NonNullable<NftLogStmt['log']>['level'];
  group?: number;
  flags?: NftLogFlag[];
}
export function log(opts: LogOptions = {}): NftLogStmt {
  const body: NonNullable<NftLogStmt['log']> = {};
  if (opts.prefix !== undefined) body.prefix = opts.prefix;
  if (opts.group !== undefined) body.group = opts.group;
  if (opts.level !== undefined) body.level = opts.level;
  const flags = flagValue(opts.flags);
  if (flags !== undefined) body.flags = flags;
  return { log: Object.keys(body).length === 0 ? null : body };
}

/**
 * A verdict map: `key vmap @name`, or an inline one from `[value, verdict]` pairs.
 */
export function vmap(key: NftExpr, data: string | [NftExpr, NftVerdict][]): NftVmapStmt {
  return { vmap: { key, data: typeof data === 'string' ? data : anonSet(data) } };
}
