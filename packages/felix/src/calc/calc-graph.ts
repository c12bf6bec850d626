/**
 * The calculation graph: datastore changes in, desired dataplane state changes out. This file is
 * the wiring (upstream `felix/calc/calc_graph.go`); each node lives in its own file.
 *
 *   CalcUpdate ──► Dispatcher (dispatcher.ts)
 *     │
 *     ├─ WorkloadEndpoint, HostEndpoint ──► EndpointIndex (endpoint-index.ts) ──────────┐
 *     │    profiles' labelsToApply inherited; local endpoints' labels ──┐             │ all items
 *     ├─ NetworkPolicy, GlobalNetworkPolicy ──► ActiveRules (active-rules.ts) ◄─┘        │
 *     ├─ Profile ──► ActiveRules (rules, existence), then EndpointIndex (labels)          │
 *     ├─ Tier ──► PolicySorter (policy-sorter.ts), then ActiveRules (re-sort endpoints)  │
 *     │             active rules' IP sets (refcounted) ──► IPSetMembers (ip-set-members.ts) ◄┘
 *     ├─ NetworkSet, GlobalNetworkSet, Service, EndpointSlice ──► IPSetMembers
 *     ├─ IPPool ──► PoolIndex (pool-index.ts) ──► pool states; pools for the tunnels ─┐
 *     ├─ Node, IPAMBlock; setEncapConfig ──► EncapResolver (encap-resolver.ts) ◄──────┘
 *     ├─ Staged(Global|Kubernetes)NetworkPolicy ──► nothing: a preview is never enforced
 *     └─ in-sync ──► emitted with the next flush; the tunnels wait for it
 *
 *   every node ──mark(id)──► Emitter (emitter.ts) ──flush()──► DataplaneDiff (rules and tunnels)
 *
 * API: `onUpdate(update)` records a change and marks what it affects dirty; `setEncapConfig(cfg)`
 * gives the tunnels their parameters; `flush()` computes the dirty items' desired state, compares
 * it with what was last emitted and returns the difference (add/remove pairs inside one batch
 * cancel out). `state()` is the whole desired state.
 *
 * Design: every "who matches whom" question is answered by a `SelectorIndex`, so a label change
 * re-evaluates only the selectors that name a changed label. Policies and profiles are active
 * (rendered, and their IP sets computed) only while they apply to a local endpoint; IP sets are
 * reference-counted by the active rules that use them.
 *
 * Thread-safety: single-threaded; pure (no I/O, no clock).
 */
import { ActiveRules } from './active-rules.js';
import { Dispatcher } from './dispatcher.js';
import { Emitter } from './emitter.js';
import { type EncapConfig, EncapResolver } from './encap-resolver.js';
import { EndpointIndex } from './endpoint-index.js';
import { IPSetMembers } from './ip-set-members.js';
import { PolicySorter } from './policy-sorter.js';
import { PoolIndex } from './pool-index.js';
import type { CalcUpdate, DataplaneDiff, DataplaneState, ResourceRef } from './types.js';

export { DEFAULT_ALLOW_PROFILE } from './active-rules.js';

/** What the graph is built for: the node it calculates. */
export interface CalcGraphOptions {
  /** This node's name: endpoints whose `spec.node` equals it are local. */
  readonly hostname: string;
}

/**
 * The calculation graph: datastore updates in (`onUpdate`), one `DataplaneDiff` out per `flush()`,
 * wired from the nodes drawn at the top of this file. Pure: no I/O, no clock.
 */
export class CalcGraph {
  readonly #dispatcher = new Dispatcher();
  readonly #emitter = new Emitter();
  readonly #ipSets: IPSetMembers;
  readonly #rules: ActiveRules;
  readonly #endpoints: EndpointIndex;
  readonly #pools: PoolIndex;
  readonly #encap: EncapResolver;
  #inSync = false;
  #inSyncEmitted = false;

  constructor(opts: CalcGraphOptions) {
    const emitter = this.#emitter;
    const sorter = new PolicySorter();
    const ipSets = new IPSetMembers(emitter);
    const rules: ActiveRules = new ActiveRules(emitter, ipSets, {
      hasLocalUsers: (p: string): boolean => endpoints.hasLocalUsers(p),
      localUsers: (p: string): Iterable<string> => endpoints.localUsers(p),
    });
    const endpoints: EndpointIndex = new EndpointIndex({
      hostname: opts.hostname,
      emitter,
      ipSets,
      rules,
      sorter,
    });
    const pools = new PoolIndex(emitter);
    const encap = new EncapResolver(opts.hostname, pools);
    this.#ipSets = ipSets;
    this.#rules = rules;
    this.#endpoints = endpoints;
    this.#pools = pools;
    this.#encap = encap;

    const d = this.#dispatcher;
    d.register(['WorkloadEndpoint', 'HostEndpoint'], (u) => endpoints.onEndpoint(u));
    d.register(['NetworkSet', 'GlobalNetworkSet'], (u) => ipSets.onNetSet(u));
    d.register(['NetworkPolicy', 'GlobalNetworkPolicy'], (u) => rules.onPolicy(u));
    // Staged policies preview a change and never decide a packet (fail closed: they neither
    // allow nor deny). Kept out of every index, they select no endpoint, so a tier holding only
    // staged policies is not applied and ends in no drop, as upstream's dataplane does.
    d.register(
      ['StagedNetworkPolicy', 'StagedGlobalNetworkPolicy', 'StagedKubernetesNetworkPolicy'],
      () => {},
    );
    d.register(['Tier'], (u) => sorter.onTier(u));
    d.register(['Tier'], (u) => rules.onTier(u));
    d.register(['Profile'], (u) => rules.onProfile(u));
    d.register(['Profile'], (u) => endpoints.onProfile(u));
    d.register(['IPPool'], (u) => pools.onPool(u));
    d.register(['Service'], (u) => ipSets.onService(u));
    d.register(['EndpointSlice'], (u) => ipSets.onEndpointSlice(u));
    d.register(['Node'], (u) => encap.onNode(u));
    d.register(['IPAMBlock'], (u) => encap.onBlock(u));
    d.onInSync(() => {
      this.#inSync = true;
    });
    d.onInSync(() => encap.onInSync());
  }

  /** Calls to `Selector.matches` made so far by both indexes. */
  get selectorEvaluations(): number {
    return this.#rules.evaluations + this.#ipSets.evaluations;
  }

  /** True when the next flush will derive the tunnel states again (their inputs changed). */
  get encapPending(): boolean {
    return this.#encap.pending;
  }

  onUpdate(update: CalcUpdate): void {
    this.#dispatcher.dispatch(update);
  }

  /** The tunnels' parameters (and the host MTU); the tunnel states are emitted once it is given. */
  setEncapConfig(config: EncapConfig): void {
    this.#encap.setConfig(config);
  }

  /** The changes since the previous flush. */
  flush(): DataplaneDiff {
    const e = this.#emitter;
    const ipSets = e.ipSets.collect((id) => this.#ipSets.state(id));
    const policies = e.policies.collect((id) => this.#rules.policyState(id));
    const profiles = e.profiles.collect((id) => this.#rules.profileState(id));
    const endpoints = e.endpoints.collect((id) => this.#endpoints.state(id));
    const pools = e.pools.collect((id) => this.#pools.state(id));
    this.#inSyncEmitted = this.#inSyncEmitted || this.#inSync;
    return {
      inSync: this.#inSyncEmitted,
      ipSetsUpdated: ipSets.updated,
      ipSetsRemoved: ipSets.removed,
      policiesUpdated: policies.updated,
      policiesRemoved: policies.removed,
      profilesUpdated: profiles.updated,
      profilesRemoved: profiles.removed,
      endpointsUpdated: endpoints.updated,
      endpointsRemoved: endpoints.removed,
      poolsUpdated: pools.updated,
      poolsRemoved: pools.removed,
      ...this.#encap.flush(),
    };
  }

  /** The whole desired state as of the last flush. */
  state(): DataplaneState {
    const e = this.#emitter;
    return {
      inSync: this.#inSyncEmitted,
      ipSets: e.ipSets.values(),
      policies: e.policies.values(),
      profiles: e.profiles.values(),
      endpoints: e.endpoints.values(),
      pools: e.pools.values(),
      ...this.#encap.state(),
    };
  }
}

export type { EncapConfig, ResourceRef };
