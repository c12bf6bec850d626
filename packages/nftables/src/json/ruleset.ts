/**
 * Reading `nft -j list ruleset` / `list table` output into typed objects, grouped the way they
 * live in the kernel: tables hold chains (which hold their rules, in order), sets and maps.
 * Pure: no I/O.
 */
import { NftablesError } from '../errors.js';
import {
  NFT_FAMILIES,
  type NftChain,
  type NftFamily,
  type NftMap,
  type NftMetainfo,
  type NftRule,
  type NftSet,
} from './types.js';

export interface NftChainState extends NftChain {
  handle: number;
  /** The chain's rules in evaluation order. */
  rules: NftRuleState[];
}

export interface NftRuleState extends NftRule {
  handle: number;
  expr: NonNullable<NftRule['expr']>;
}

export interface NftSetState extends NftSet {
  handle: number;
}

export interface NftMapState extends NftMap {
  handle: number;
  map: string;
}

export interface NftTableState {
  family: NftFamily;
  name: string;
  /** Absent when the listing showed only the table's contents (`list chain`, `list set`). */
  handle?: number;
  chains: NftChainState[];
  sets: NftSetState[];
  maps: NftMapState[];
}

export interface NftRuleset {
  metainfo?: NftMetainfo;
  tables: NftTableState[];
  /** Listed objects this package does not model (flowtables, named counters, …), as printed. */
  others: Record<string, unknown>[];
}

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function bad(index: number, what: string): NftablesError {
  return new NftablesError('invalid', `not nftables JSON: item ${index} ${what}`);
}

function str(o: Json, key: string, index: number, kind: string): string {
  const v = o[key];
  if (typeof v !== 'string') throw bad(index, `(${kind}) has no string "${key}"`);
  return v;
}

function num(o: Json, key: string, index: number, kind: string): number {
  const v = o[key];
  if (typeof v !== 'number') throw bad(index, `(${kind}) has no numeric "${key}"`);
  return v;
}

function family(o: Json, index: number, kind: string): NftFamily {
  const f = str(o, 'family', index, kind);
  if (!(NFT_FAMILIES as readonly string[]).includes(f))
    throw bad(index, `(${kind}) has unknown family "${f}"`);
  return f as NftFamily;
}

/**
 * The `nftables` array of one or more output documents. nft prints one document per `list`
 * command, each on its own line.
 */
export function nftablesItems(json: unknown): unknown[] {
  if (typeof json === 'string') {
    const text = json.trim();
    if (text === '') return [];
    try {
      return nftablesItems(JSON.parse(text));
    } catch (e) {
      if (e instanceof NftablesError) throw e;
      // Several documents, one per line.
      const items: unknown[] = [];
      for (const line of text.split('\n')) {
        if (line.trim() === '') continue;
        let doc: unknown;
        try {
          doc = JSON.parse(line);
        } catch (cause) {
          throw new NftablesError('invalid', 'not nftables JSON: output is not JSON', {
            cause,
            detail: text,
          });
        }
        items.push(...nftablesItems(doc));
      }
      return items;
    }
  }
  if (!isObject(json) || !Array.isArray(json.nftables)) {
    throw new NftablesError('invalid', 'not nftables JSON: expected an object with an "nftables" array');
  }
  return json.nftables;
}

/** Parses a listing (`list ruleset`, `list table`, …) given as text or as parsed JSON. */
export function parseRuleset(json: unknown): NftRuleset {
  const items = nftablesItems(json);
  const out: NftRuleset = { tables: [], others: [] };
  const tables = new Map<string, NftTableState>();
  const key = (f: string, n: string) => `${f} ${n}`;
  const tableOf = (f: NftFamily, name: string): NftTableState => {
    let t = tables.get(key(f, name));
    if (!t) {
      t = { family: f, name, chains: [], sets: [], maps: [] };
      tables.set(key(f, name), t);
      out.tables.push(t);
    }
    return t;
  };

  items.forEach((item, index) => {
    if (!isObject(item)) throw bad(index, 'is not an object');
    const kinds = Object.keys(item);
    if (kinds.length !== 1) throw bad(index, 'must have exactly one key');
    const kind = kinds[0]!;
    const body = item[kind];
    if (!isObject(body)) throw bad(index, `(${kind}) is not an object`);
    switch (kind) {
      case 'metainfo':
        out.metainfo = body as unknown as NftMetainfo;
        return;
      case 'table': {
        const f = family(body, index, kind);
        const name = str(body, 'name', index, kind);
        const handle = num(body, 'handle', index, kind);
        const seen = tables.get(key(f, name));
        if (seen) seen.handle = handle;
        else {
          const t: NftTableState = { family: f, name, handle, chains: [], sets: [], maps: [] };
          tables.set(key(f, name), t);
          out.tables.push(t);
        }
        return;
      }
      case 'chain': {
        const f = family(body, index, kind);
        const t = tableOf(f, str(body, 'table', index, kind));
        str(body, 'name', index, kind);
        num(body, 'handle', index, kind);
        t.chains.push({ ...(body as unknown as NftChain), handle: body.handle as number, rules: [] });
        return;
      }
      case 'rule': {
        const f = family(body, index, kind);
        const t = tableOf(f, str(body, 'table', index, kind));
        const chainName = str(body, 'chain', index, kind);
        num(body, 'handle', index, kind);
        if (!Array.isArray(body.expr)) throw bad(index, '(rule) has no "expr" array');
        const c = t.chains.find((x) => x.name === chainName);
        if (!c) throw bad(index, `(rule) refers to chain ${chainName} before it is listed`);
        c.rules.push(body as unknown as NftRuleState);
        return;
      }
      case 'set':
      case 'map': {
        const f = family(body, index, kind);
        const t = tableOf(f, str(body, 'table', index, kind));
        str(body, 'name', index, kind);
        num(body, 'handle', index, kind);
        if (kind === 'set') t.sets.push(body as unknown as NftSetState);
        else {
          str(body, 'map', index, kind);
          t.maps.push(body as unknown as NftMapState);
        }
        return;
      }
      default:
        out.others.push(item);
    }
  });
  return out;
}

export function findTable(ruleset: NftRuleset, family: NftFamily, name: string): NftTableState | undefined {
  return ruleset.tables.find((t) => t.family === family && t.name === name);
}

export function findChain(t: NftTableState, name: string): NftChainState | undefined {
  return t.chains.find((c) => c.name === name);
}

/** Every element of a set or map, whichever it is, by name. */
export function findSetOrMap(t: NftTableState, name: string): NftSetState | NftMapState | undefined {
  return t.sets.find((s) => s.name === name) ?? t.maps.find((m) => m.name === name);
}
