/**
 * A tiny in-memory nftables that applies JSON commands with the kernel's referential rules, so
 * diff tests fail when a command names something that does not exist yet or deletes something
 * still in use: a rule may only jump to existing chains and use existing sets/maps; a map element
 * may only name existing chains; a chain may only be deleted when empty and unreferenced; a set
 * or map only when no rule uses it; an element only deleted when present.
 */
import type { NftCommand, NftExpression, NftVerdict } from '../nft-json.js';
import type {
  NftChainDesired,
  NftDesired,
  NftMapDesired,
  NftSetDesired,
  NftTableDesired,
} from '../ruleset.js';

interface Table {
  family: 'ip' | 'ip6';
  name: string;
  chains: Map<string, NftChainDesired & { rules: NftChainDesired['rules'][number][] }>;
  sets: Map<string, { def: NftSetDesired; elems: Map<string, NftExpression> }>;
  maps: Map<string, { def: NftMapDesired; elems: Map<string, NftVerdict> }>;
}

const j = (v: unknown) => JSON.stringify(v);

function refs(v: unknown, chains: Set<string>, sets: Set<string>): void {
  if (typeof v === 'string') {
    if (v.startsWith('@')) sets.add(v.slice(1));
  } else if (Array.isArray(v)) {
    for (const x of v) refs(x, chains, sets);
  } else if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    for (const verb of ['jump', 'goto']) {
      const t = o[verb] as { target?: string } | undefined;
      if (t && typeof t.target === 'string') chains.add(t.target);
    }
    for (const x of Object.values(o)) refs(x, chains, sets);
  }
}

export class FakeNft {
  private readonly tables = new Map<string, Table>();

  constructor(initial?: NftDesired) {
    if (initial) {
      for (const t of initial.tables) {
        const table: Table = {
          family: t.family,
          name: t.name,
          chains: new Map(),
          sets: new Map(),
          maps: new Map(),
        };
        for (const c of Object.values(t.chains)) table.chains.set(c.name, { ...c, rules: [...c.rules] });
        for (const s of Object.values(t.sets)) {
          table.sets.set(s.name, { def: s, elems: new Map(s.elements.map((e) => [j(e), e])) });
        }
        for (const m of Object.values(t.maps)) {
          table.maps.set(m.name, { def: m, elems: new Map(m.elements.map(([k, v]) => [k, v])) });
        }
        this.tables.set(`${t.family} ${t.name}`, table);
      }
    }
  }

  private table(family: string, name: string): Table {
    const t = this.tables.get(`${family} ${name}`);
    if (!t) throw new Error(`no table ${family} ${name}`);
    return t;
  }

  private checkRefs(t: Table, v: unknown, what: string): void {
    const chains = new Set<string>();
    const sets = new Set<string>();
    refs(v, chains, sets);
    for (const c of chains) if (!t.chains.has(c)) throw new Error(`${what}: jump to missing chain ${c}`);
    for (const s of sets)
      if (!t.sets.has(s) && !t.maps.has(s)) throw new Error(`${what}: missing set/map ${s}`);
  }

  private referenced(t: Table, name: string, kind: 'chain' | 'set'): boolean {
    const chains = new Set<string>();
    const sets = new Set<string>();
    for (const c of t.chains.values()) refs(c.rules, chains, sets);
    for (const m of t.maps.values()) refs([...m.elems.values()], chains, sets);
    return kind === 'chain' ? chains.has(name) : sets.has(name);
  }

  apply(commands: readonly NftCommand[]): void {
    for (const cmd of commands) {
      if ('add' in cmd) {
        const o = cmd.add;
        if ('table' in o) {
          const key = `${o.table.family} ${o.table.name}`;
          if (!this.tables.has(key)) {
            this.tables.set(key, { ...o.table, chains: new Map(), sets: new Map(), maps: new Map() });
          }
        } else if ('chain' in o) {
          const t = this.table(o.chain.family, o.chain.table);
          if (!t.chains.has(o.chain.name)) {
            const c = o.chain;
            const base = c.type
              ? { base: { type: c.type, hook: c.hook!, prio: c.prio!, policy: c.policy ?? 'accept' } }
              : {};
            t.chains.set(c.name, { name: c.name, ...base, rules: [] });
          }
        } else if ('rule' in o) {
          const t = this.table(o.rule.family, o.rule.table);
          const c = t.chains.get(o.rule.chain);
          if (!c) throw new Error(`add rule: no chain ${o.rule.chain}`);
          this.checkRefs(t, o.rule.expr, `rule in ${o.rule.chain}`);
          c.rules.push(
            o.rule.comment !== undefined
              ? { expr: o.rule.expr, comment: o.rule.comment }
              : { expr: o.rule.expr },
          );
        } else if ('set' in o) {
          const t = this.table(o.set.family, o.set.table);
          const elems = o.set.elem ?? [];
          const existing = t.sets.get(o.set.name);
          if (existing) {
            // As the kernel: `add` of an existing set with the same type adds its elements.
            if (j([existing.def.type, existing.def.flags]) !== j([o.set.type, o.set.flags ?? []]))
              throw new Error(`add set: ${o.set.name} exists with another type`);
            for (const e of elems) existing.elems.set(j(e), e);
            continue;
          }
          t.sets.set(o.set.name, {
            def: { name: o.set.name, type: o.set.type, flags: o.set.flags ?? [], elements: [] },
            elems: new Map(elems.map((e) => [j(e), e])),
          });
        } else if ('map' in o) {
          const t = this.table(o.map.family, o.map.table);
          this.checkRefs(t, o.map.elem ?? [], `map ${o.map.name}`);
          const existing = t.maps.get(o.map.name);
          if (existing) {
            if (existing.def.type !== String(o.map.type))
              throw new Error(`add map: ${o.map.name} exists with another type`);
            for (const [k, v] of o.map.elem ?? []) {
              if (existing.elems.has(String(k)) && j(existing.elems.get(String(k))) !== j(v))
                throw new Error(`add map: key ${String(k)} exists`);
              existing.elems.set(String(k), v);
            }
            continue;
          }
          t.maps.set(o.map.name, {
            def: { name: o.map.name, type: String(o.map.type), map: 'verdict', elements: [] },
            elems: new Map((o.map.elem ?? []).map(([k, v]) => [String(k), v])),
          });
        } else if ('element' in o) {
          const t = this.table(o.element.family, o.element.table);
          const s = t.sets.get(o.element.name);
          const m = t.maps.get(o.element.name);
          if (s) for (const e of o.element.elem) s.elems.set(j(e), e as NftExpression);
          else if (m) {
            this.checkRefs(t, o.element.elem, `element of ${o.element.name}`);
            for (const e of o.element.elem) {
              const [k, v] = e as readonly [string, NftVerdict];
              if (m.elems.has(k) && j(m.elems.get(k)) !== j(v))
                throw new Error(`add element: key ${k} exists`);
              m.elems.set(k, v);
            }
          } else throw new Error(`add element: no set/map ${o.element.name}`);
        }
      } else if ('flush' in cmd) {
        const f = cmd.flush;
        if ('chain' in f) {
          const c = this.table(f.chain.family, f.chain.table).chains.get(f.chain.name);
          if (!c) throw new Error(`flush: no chain ${f.chain.name}`);
          c.rules = [];
        } else {
          const x = 'set' in f ? f.set : f.map;
          const t = this.table(x.family, x.table);
          const target = 'set' in f ? t.sets.get(x.name) : t.maps.get(x.name);
          if (!target) throw new Error(`flush: no ${'set' in f ? 'set' : 'map'} ${x.name}`);
          target.elems.clear();
        }
      } else {
        const o = cmd.delete;
        if ('table' in o) {
          if (!this.tables.delete(`${o.table.family} ${o.table.name}`)) throw new Error('delete: no table');
        } else if ('chain' in o) {
          const t = this.table(o.chain.family, o.chain.table);
          const c = t.chains.get(o.chain.name);
          if (!c) throw new Error(`delete chain: no chain ${o.chain.name}`);
          if (c.rules.length > 0) throw new Error(`delete chain: ${o.chain.name} is not empty`);
          if (this.referenced(t, o.chain.name, 'chain'))
            throw new Error(`delete chain: ${o.chain.name} in use`);
          t.chains.delete(o.chain.name);
        } else if ('set' in o || 'map' in o) {
          const x = 'set' in o ? o.set : o.map;
          const t = this.table(x.family, x.table);
          if (this.referenced(t, x.name, 'set')) throw new Error(`delete: set/map ${x.name} in use`);
          if (!t.sets.delete(x.name) && !t.maps.delete(x.name))
            throw new Error(`delete: no set/map ${x.name}`);
        } else if ('element' in o) {
          const t = this.table(o.element.family, o.element.table);
          const s = t.sets.get(o.element.name);
          const m = t.maps.get(o.element.name);
          for (const e of o.element.elem) {
            if (s) {
              if (!s.elems.delete(j(e))) throw new Error(`delete element: ${j(e)} not in ${o.element.name}`);
            } else if (m) {
              const k = String((e as readonly [string, NftVerdict])[0]);
              if (!m.elems.delete(k)) throw new Error(`delete element: ${k} not in ${o.element.name}`);
            } else throw new Error(`delete element: no set/map ${o.element.name}`);
          }
        } else {
          throw new Error(`unsupported delete ${j(o)}`);
        }
      }
    }
  }

  /** The state in the renderer's shape, for comparison with a desired ruleset. */
  dump(): NftDesired {
    const tables: NftTableDesired[] = [];
    for (const t of this.tables.values()) {
      const chains: Record<string, NftChainDesired> = {};
      for (const c of [...t.chains.values()].sort((a, b) => (a.name < b.name ? -1 : 1))) chains[c.name] = c;
      const sets: Record<string, NftSetDesired> = {};
      for (const [name, s] of [...t.sets].sort(([a], [b]) => (a < b ? -1 : 1))) {
        sets[name] = { ...s.def, elements: [...s.elems.keys()].sort().map((k) => s.elems.get(k)!) };
      }
      const maps: Record<string, NftMapDesired> = {};
      for (const [name, m] of [...t.maps].sort(([a], [b]) => (a < b ? -1 : 1))) {
        maps[name] = {
          ...m.def,
          elements: [...m.elems.keys()].sort().map((k) => [k, m.elems.get(k)!] as const),
        };
      }
      tables.push({ family: t.family, name: t.name, chains, sets, maps });
    }
    return { tables };
  }
}

/** A desired ruleset with keys sorted, so two equal rulesets compare equal. */
export function normalizeRuleset(d: NftDesired): NftDesired {
  return new FakeNft(d).dump();
}
