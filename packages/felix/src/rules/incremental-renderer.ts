/**
 * IncrementalRenderer: the desired nftables ruleset, kept up to date one `DataplaneDiff` at a time,
 * re-rendering only the sections a change touches and naming the objects it re-rendered.
 *
 *   DataplaneDiff ──onUpdate──► inputs (ipSets, policies, profiles, endpoints, pools) + dirty marks
 *                                 │ indexes: interface → workload keys, policy/profile → endpoints
 *   render() ──► for each dirty section, for each family:
 *                  TableBuilder ──render*Section──► chains/sets/maps (chains annotated with hashes)
 *                  replace the section's objects in the table; note every name put or removed
 *            ◄── RulesetChange: per family, the chain, set and map names that may differ
 *
 * Sections (each renders into one table per family; see ruleset-renderer.ts):
 *   ipset:<id>    its set                    ← the IP set's members
 *   pol:<id>      filter-cali-pi/po-<id>     ← the policy's rules
 *   prof:<id>     filter-cali-pri/pro-<id>   ← the profile's rules
 *   wl:<iface>    filter-cali-tw/fw-<iface>  ← the endpoint's tiers and profiles, and whether the
 *                                              policies and profiles it names exist
 *   wlmaps        the two workload dispatch maps (interface → chain)
 *   global        pools, host endpoints and everything static; small, re-rendered whole
 * A rule added to one policy re-renders one `pol:` section; a pod added, its `wl:` section, the
 * dispatch maps and the IP sets whose members changed; nothing else.
 *
 * `desired()` is the whole ruleset, built from the same section functions `renderRuleset` uses, so
 * both always agree (state.test-style test in incremental-renderer.test.ts). Its objects are the
 * ones the dataplane then records as programmed: the ruleset is held once.
 *
 * Pure: no I/O, no clock. Single-threaded.
 */
import type {
  DataplaneDiff,
  DataplaneState,
  EndpointState,
  IPSetState,
  PolicyState,
  PoolState,
  ProfileState,
} from '../calc/types.js';
import { addTo, removeFrom } from '../multimap.js';
import { allocateMarks, type MarkBits, type RulesConfig } from './config.js';
import type { IpFamily } from './names.js';
import { TABLE_NAME } from './names.js';
import { annotateChain } from './rule-hashes.js';
import type {
  NftChainDesired,
  NftDesired,
  NftMapDesired,
  NftSetDesired,
  NftTableDesired,
} from './ruleset.js';
import {
  renderGlobalSection,
  renderIPSetSection,
  renderPolicySection,
  renderProfileSection,
  renderWorkloadDispatchMaps,
  renderWorkloadSection,
  type WorkloadDispatch,
} from './ruleset-renderer.js';
import { TableBuilder, type TableEnv, type TunnelRules } from './table-builder.js';

/** The objects of one table that may have changed (put, replaced or removed). */
export interface TableChange {
  readonly chains: ReadonlySet<string>;
  readonly sets: ReadonlySet<string>;
  readonly maps: ReadonlySet<string>;
}

/**
 * What a `render()` changed: per family, the names to compare; `undefined` means compare
 * everything (the first render, or a change of families).
 */
export type RulesetChange = ReadonlyMap<IpFamily, TableChange> | undefined;

interface MutableChange {
  chains: Set<string>;
  sets: Set<string>;
  maps: Set<string>;
}

interface Owned {
  readonly chains: readonly string[];
  readonly sets: readonly string[];
  readonly maps: readonly string[];
}

const NOTHING: Owned = { chains: [], sets: [], maps: [] };

/** One family's table: the records are the ruleset; `owned` says which section put what. */
class FamilyTable {
  readonly chains: Record<string, NftChainDesired> = {};
  readonly sets: Record<string, NftSetDesired> = {};
  readonly maps: Record<string, NftMapDesired> = {};
  readonly owned = new Map<string, Owned>();
  readonly dispatch = new Map<string, WorkloadDispatch>();
  change: MutableChange = { chains: new Set(), sets: new Set(), maps: new Set() };

  constructor(readonly env: TableEnv) {}

  get table(): NftTableDesired {
    return {
      family: this.env.family,
      name: TABLE_NAME,
      chains: this.chains,
      sets: this.sets,
      maps: this.maps,
    };
  }

  /** Replaces a section's objects by what `fill` renders (nothing: the section goes). */
  section(key: string, fill: ((t: TableBuilder) => void) | undefined): void {
    const before = this.owned.get(key) ?? NOTHING;
    const t = new TableBuilder(this.env.family);
    fill?.(t);
    const now: Owned = {
      chains: Object.keys(t.chains),
      sets: Object.keys(t.sets),
      maps: Object.keys(t.maps),
    };
    for (const n of before.chains) if (!(n in t.chains)) this.#drop(this.chains, this.change.chains, n);
    for (const n of before.sets) if (!(n in t.sets)) this.#drop(this.sets, this.change.sets, n);
    for (const n of before.maps) if (!(n in t.maps)) this.#drop(this.maps, this.change.maps, n);
    for (const [n, c] of Object.entries(t.chains)) {
      this.chains[n] = annotateChain(c);
      this.change.chains.add(n);
    }
    for (const [n, s] of Object.entries(t.sets)) {
      this.sets[n] = s;
      this.change.sets.add(n);
    }
    for (const [n, m] of Object.entries(t.maps)) {
      this.maps[n] = m;
      this.change.maps.add(n);
    }
    if (now.chains.length + now.sets.length + now.maps.length === 0) this.owned.delete(key);
    else this.owned.set(key, now);
  }

  #drop<T>(rec: Record<string, T>, changed: Set<string>, name: string): void {
    delete rec[name];
    changed.add(name);
  }

  takeChange(): TableChange {
    const c = this.change;
    this.change = { chains: new Set(), sets: new Set(), maps: new Set() };
    return c;
  }
}

const byString = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Policy IDs an endpoint's chains name, in any stage. */
function policiesOf(ep: EndpointState): Set<string> {
  const out = new Set<string>();
  for (const tiers of [ep.tiers, ep.forwardTiers, ep.untrackedTiers, ep.preDNATTiers]) {
    for (const t of tiers) {
      for (const id of t.ingressPolicies) out.add(id);
      for (const id of t.egressPolicies) out.add(id);
    }
  }
  return out;
}

/** A workload interface the dispatch maps can name. */
function workloadIface(ep: EndpointState): string | undefined {
  return ep.kind === 'wep' && ep.interfaceName && ep.interfaceName !== '*' ? ep.interfaceName : undefined;
}

export class IncrementalRenderer {
  #config: RulesConfig;
  #tunnels: TunnelRules;
  #marks: MarkBits;
  #tables = new Map<IpFamily, FamilyTable>();
  /** True until the first render after construction or a change of families: compare everything. */
  #compareAll = true;

  readonly #ipSets = new Map<string, IPSetState>();
  readonly #policies = new Map<string, PolicyState>();
  readonly #profiles = new Map<string, ProfileState>();
  readonly #endpoints = new Map<string, EndpointState>();
  readonly #pools = new Map<string, PoolState>();

  /** Workload interface → keys of the endpoints claiming it (the first by key wins). */
  readonly #ifaceKeys = new Map<string, Set<string>>();
  /** Policy / profile → endpoints naming it. */
  readonly #policyUsers = new Map<string, Set<string>>();
  readonly #profileUsers = new Map<string, Set<string>>();

  readonly #dirtyIPSets = new Set<string>();
  readonly #dirtyPolicies = new Set<string>();
  readonly #dirtyProfiles = new Set<string>();
  readonly #dirtyIfaces = new Set<string>();
  #dirtyGlobal = true;

  constructor(config: RulesConfig, tunnels: TunnelRules = {}) {
    this.#config = config;
    this.#tunnels = tunnels;
    this.#marks = allocateMarks(config.markMask);
    this.#tables = this.#newTables();
  }

  /** How many of each the ruleset is rendered from (for metrics). */
  get counts(): { endpoints: number; policies: number; profiles: number; ipSets: number } {
    return {
      endpoints: this.#endpoints.size,
      policies: this.#policies.size,
      profiles: this.#profiles.size,
      ipSets: this.#ipSets.size,
    };
  }

  /** This node's workload endpoints (what routes are made from). */
  workloadEndpoints(): EndpointState[] {
    return [...this.#endpoints.values()].filter((e) => e.kind === 'wep');
  }

  // ---- input ---------------------------------------------------------------------------------

  /** Records one diff of the calculation graph; the next `render()` re-renders what it touched. */
  onUpdate(diff: DataplaneDiff): void {
    for (const id of diff.ipSetsRemoved) this.#setIPSet(id, undefined);
    for (const s of diff.ipSetsUpdated) this.#setIPSet(s.id, s);
    for (const id of diff.policiesRemoved) this.#setPolicy(id, undefined);
    for (const p of diff.policiesUpdated) this.#setPolicy(p.id, p);
    for (const id of diff.profilesRemoved) this.#setProfile(id, undefined);
    for (const p of diff.profilesUpdated) this.#setProfile(p.id, p);
    for (const key of diff.endpointsRemoved) this.#setEndpoint(key, undefined);
    for (const e of diff.endpointsUpdated) this.#setEndpoint(e.key, e);
    for (const name of diff.poolsRemoved) this.#setPool(name, undefined);
    for (const p of diff.poolsUpdated) this.#setPool(p.name, p);
  }

  /** Replaces every input by `state` (what a full `renderRuleset(state)` would render). */
  reset(state: DataplaneState): void {
    this.onUpdate(this.diffTo(state));
  }

  /** The diff that replaces every input by `state`: all of it updated, what it lacks removed. */
  diffTo(state: DataplaneState): DataplaneDiff {
    return {
      inSync: state.inSync,
      ipSetsUpdated: Object.values(state.ipSets),
      ipSetsRemoved: [...this.#ipSets.keys()].filter((k) => !(k in state.ipSets)),
      policiesUpdated: Object.values(state.policies),
      policiesRemoved: [...this.#policies.keys()].filter((k) => !(k in state.policies)),
      profilesUpdated: Object.values(state.profiles),
      profilesRemoved: [...this.#profiles.keys()].filter((k) => !(k in state.profiles)),
      endpointsUpdated: Object.values(state.endpoints),
      endpointsRemoved: [...this.#endpoints.keys()].filter((k) => !(k in state.endpoints)),
      poolsUpdated: Object.values(state.pools),
      poolsRemoved: [...this.#pools.keys()].filter((k) => !(k in state.pools)),
    };
  }

  /** New rules configuration: everything is re-rendered (it is rare). */
  setConfig(config: RulesConfig): void {
    const families = (c: RulesConfig) => (c.ipv6Support ? 'ip,ip6' : 'ip');
    if (families(config) !== families(this.#config)) this.#compareAll = true;
    this.#config = config;
    this.#marks = allocateMarks(config.markMask);
    this.#markAllDirty();
  }

  /** New tunnel hosts: only the node-wide section uses them. */
  setTunnelRules(tunnels: TunnelRules): void {
    this.#tunnels = tunnels;
    this.#dirtyGlobal = true;
    this.#tables = this.#withEnv(this.#tables);
  }

  #setIPSet(id: string, s: IPSetState | undefined): void {
    if (s) this.#ipSets.set(id, s);
    else this.#ipSets.delete(id);
    this.#dirtyIPSets.add(id);
  }

  #setPolicy(id: string, p: PolicyState | undefined): void {
    const presenceChanged = this.#policies.has(id) !== (p !== undefined);
    if (p) this.#policies.set(id, p);
    else this.#policies.delete(id);
    this.#dirtyPolicies.add(id);
    this.#touchUsers(this.#policyUsers.get(id), presenceChanged);
  }

  #setProfile(id: string, p: ProfileState | undefined): void {
    const presenceChanged = this.#profiles.has(id) !== (p !== undefined);
    if (p) this.#profiles.set(id, p);
    else this.#profiles.delete(id);
    this.#dirtyProfiles.add(id);
    this.#touchUsers(this.#profileUsers.get(id), presenceChanged);
  }

  /**
   * A policy or profile changed. A workload chain names it only if it exists, so it is
   * re-rendered when it comes or goes; host endpoints live in the node-wide section, which also
   * holds the raw and mangle copies of their policies, so any change re-renders that.
   */
  #touchUsers(users: ReadonlySet<string> | undefined, presenceChanged: boolean): void {
    for (const key of users ?? []) {
      const ep = this.#endpoints.get(key);
      if (!ep) continue;
      if (ep.kind === 'hep') this.#dirtyGlobal = true;
      else if (presenceChanged) {
        const iface = workloadIface(ep);
        if (iface) this.#dirtyIfaces.add(iface);
      }
    }
  }

  #setEndpoint(key: string, ep: EndpointState | undefined): void {
    const old = this.#endpoints.get(key);
    if (old) this.#unindex(old);
    if (ep) {
      this.#endpoints.set(key, ep);
      this.#index(ep);
    } else {
      this.#endpoints.delete(key);
    }
    for (const e of [old, ep]) {
      if (!e) continue;
      if (e.kind === 'hep') this.#dirtyGlobal = true;
      const iface = workloadIface(e);
      if (iface) this.#dirtyIfaces.add(iface);
    }
  }

  #index(ep: EndpointState): void {
    const iface = workloadIface(ep);
    if (iface) addTo(this.#ifaceKeys, iface, ep.key);
    for (const id of policiesOf(ep)) addTo(this.#policyUsers, id, ep.key);
    for (const id of ep.profileIds) addTo(this.#profileUsers, id, ep.key);
  }

  #unindex(ep: EndpointState): void {
    const iface = workloadIface(ep);
    if (iface) removeFrom(this.#ifaceKeys, iface, ep.key);
    for (const id of policiesOf(ep)) removeFrom(this.#policyUsers, id, ep.key);
    for (const id of ep.profileIds) removeFrom(this.#profileUsers, id, ep.key);
  }

  #setPool(name: string, p: PoolState | undefined): void {
    if (p) this.#pools.set(name, p);
    else this.#pools.delete(name);
    this.#dirtyGlobal = true;
  }

  #markAllDirty(): void {
    for (const id of this.#ipSets.keys()) this.#dirtyIPSets.add(id);
    for (const id of this.#policies.keys()) this.#dirtyPolicies.add(id);
    for (const id of this.#profiles.keys()) this.#dirtyProfiles.add(id);
    for (const iface of this.#ifaceKeys.keys()) this.#dirtyIfaces.add(iface);
    this.#dirtyGlobal = true;
    this.#tables = this.#compareAll ? this.#newTables() : this.#withEnv(this.#tables);
  }

  #envFor(family: IpFamily): TableEnv {
    return { family, config: this.#config, tunnels: this.#tunnels, marks: this.#marks };
  }

  #newTables(): Map<IpFamily, FamilyTable> {
    const families: IpFamily[] = this.#config.ipv6Support ? ['ip', 'ip6'] : ['ip'];
    return new Map(families.map((f) => [f, new FamilyTable(this.#envFor(f))]));
  }

  /** The same tables (same objects, same ownership) with the current configuration. */
  #withEnv(tables: Map<IpFamily, FamilyTable>): Map<IpFamily, FamilyTable> {
    for (const t of tables.values()) (t as { env: TableEnv }).env = this.#envFor(t.env.family);
    return tables;
  }

  // ---- output --------------------------------------------------------------------------------

  /** Re-renders the dirty sections; returns what may differ since the previous render. */
  render(): RulesetChange {
    const hasPolicy = (id: string) => this.#policies.has(id);
    const hasProfile = (id: string) => this.#profiles.has(id);
    const dirtyIfaces = [...this.#dirtyIfaces];
    for (const t of this.#tables.values()) {
      const env = t.env;
      for (const id of this.#dirtyIPSets) {
        const s = this.#ipSets.get(id);
        t.section(`ipset:${id}`, s && ((b) => renderIPSetSection(b, env, s)));
      }
      for (const id of this.#dirtyPolicies) {
        const p = this.#policies.get(id);
        t.section(`pol:${id}`, p && ((b) => renderPolicySection(b, env, p)));
      }
      for (const id of this.#dirtyProfiles) {
        const p = this.#profiles.get(id);
        t.section(`prof:${id}`, p && ((b) => renderProfileSection(b, env, p)));
      }
      for (const iface of dirtyIfaces) {
        const keys = this.#ifaceKeys.get(iface);
        const winner = keys && [...keys].sort(byString)[0];
        const ep = winner === undefined ? undefined : this.#endpoints.get(winner);
        if (ep) {
          t.section(`wl:${iface}`, (b) =>
            t.dispatch.set(iface, renderWorkloadSection(b, env, iface, ep, hasPolicy, hasProfile)),
          );
        } else {
          t.section(`wl:${iface}`, undefined);
          t.dispatch.delete(iface);
        }
      }
      if (dirtyIfaces.length > 0 || !t.owned.has('wlmaps')) {
        const sorted = new Map([...t.dispatch].sort(([a], [b]) => byString(a, b)));
        t.section('wlmaps', (b) => renderWorkloadDispatchMaps(b, sorted));
      }
      if (this.#dirtyGlobal) {
        const heps = [...this.#endpoints.values()]
          .filter((e) => e.kind === 'hep')
          .sort((a, b) => byString(a.key, b.key));
        t.section('global', (b) =>
          renderGlobalSection(b, env, {
            pools: [...this.#pools.values()],
            heps,
            policy: (id) => this.#policies.get(id),
            hasProfile,
          }),
        );
      }
    }
    this.#dirtyIPSets.clear();
    this.#dirtyPolicies.clear();
    this.#dirtyProfiles.clear();
    this.#dirtyIfaces.clear();
    this.#dirtyGlobal = false;
    const change = new Map<IpFamily, TableChange>();
    for (const [f, t] of this.#tables) change.set(f, t.takeChange());
    if (this.#compareAll) {
      this.#compareAll = false;
      return undefined;
    }
    return change;
  }

  /** The whole desired ruleset as of the last `render()` (its records are live: read, don't keep). */
  desired(): NftDesired {
    return { tables: [...this.#tables.values()].map((t) => t.table) };
  }
}
