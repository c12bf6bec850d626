/**
 * IP set members (upstream `felix/calc/ipset_member_calculator.go` with the reference counting of
 * `rule_scanner.go` and the service part of `service_index.go`): which addresses each active IP set
 * holds.
 *
 *   active rules ──setOwnerSets(owner, defs)──► refcount per IP set ──first owner──► activate
 *                                                                  └─last owner───► deactivate
 *   endpoints (EndpointIndex.updateItem) ─┐
 *   (Global)NetworkSet (onNetSet) ────────┴► items × active selectors ──► ipSetIndex (SelectorIndex)
 *                                             ──match started / stopped──► member refcounts
 *   Service, EndpointSlice ──► ServiceIndex ──► members of the active service sets
 *                                                       │
 *                                                       ▼ emitter.ipSets.mark(id)
 *
 * Design: a member is counted once per item that contributes it (two endpoints with one address
 * keep it until both are gone). An item's contributions are taken out and put back around each
 * re-index, so a label change that keeps it in a set leaves the set's members as they were and
 * the set is not re-emitted (the emitter compares JSON).
 *
 * Thread-safety: single-threaded; pure.
 */
import type { K8sEndpointSlice, K8sService } from '@calico-ts/api';
import { parseSelector } from '@calico-ts/api';
import { addTo, removeFrom } from '../multimap.js';
import type { KindUpdate } from './dispatcher.js';
import { byString, type Emitter } from './emitter.js';
import { type EndpointInfo, type NetSetInfo, netSetInfo, netSetKey } from './endpoint-info.js';
import { type Labels, SelectorIndex } from './selector-index.js';
import { ServiceIndex } from './service-index.js';
import type { IPSetDefinition, IPSetState } from './types.js';

/** What an item contributes to IP sets: an endpoint (nets and named ports) or a network set. */
export type MemberItem = EndpointInfo | NetSetInfo;

export class IPSetMembers {
  private readonly ownerIPSets = new Map<string, Set<string>>();
  private readonly ipSetOwners = new Map<string, Set<string>>();
  private readonly ipSetDefs = new Map<string, IPSetDefinition>();
  private readonly selectorSets = new Map<string, Set<string>>();
  private readonly ipSetMembers = new Map<string, Map<string, number>>();
  private readonly ipSetIndex: SelectorIndex;
  private readonly items = new Map<string, MemberItem>();
  private suppressMembers = false;
  private readonly serviceIndex = new ServiceIndex();
  /** `namespace/name` → active service IP sets naming it. */
  private readonly serviceSets = new Map<string, Set<string>>();

  constructor(private readonly emitter: Emitter) {
    this.ipSetIndex = new SelectorIndex({
      onMatchStarted: (sel, item) => this.onIPSetMatch(sel, item, 1),
      onMatchStopped: (sel, item) => this.onIPSetMatch(sel, item, -1),
    });
  }

  /** Calls to `Selector.matches` made so far. */
  get evaluations(): number {
    return this.ipSetIndex.evaluations;
  }

  onNetSet(u: KindUpdate): void {
    if (u.kind === 'delete') this.deleteItem(netSetKey(u.resource));
    else {
      const info = netSetInfo(u.resource);
      this.updateItem(info.key, info, info.labels);
    }
  }

  onService(u: KindUpdate): void {
    const { name, namespace } = u.resource.metadata;
    const svc = u.kind === 'delete' ? undefined : (u.resource as K8sService);
    this.refreshServiceSets([this.serviceIndex.onService(namespace ?? '', name, svc)]);
  }

  onEndpointSlice(u: KindUpdate): void {
    const { name, namespace } = u.resource.metadata;
    const slice = u.kind === 'delete' ? undefined : (u.resource as K8sEndpointSlice);
    this.refreshServiceSets(this.serviceIndex.onEndpointSlice(namespace ?? '', name, slice));
  }

  /**
   * Replaces an item in the IP set index: its old members leave every set it was in, the index
   * re-matches it (evaluating only what its label change can affect), and its new members join
   * the sets it matches now.
   */
  updateItem(key: string, info: MemberItem, labels: Labels): void {
    const old = this.items.get(key);
    if (old) this.removeContributions(key, old);
    this.suppressMembers = true;
    this.ipSetIndex.updateItem(key, labels);
    this.suppressMembers = false;
    this.items.set(key, info);
    this.addContributions(key, info);
  }

  deleteItem(key: string): void {
    const old = this.items.get(key);
    if (!old) return;
    this.removeContributions(key, old);
    this.suppressMembers = true;
    this.ipSetIndex.deleteItem(key);
    this.suppressMembers = false;
    this.items.delete(key);
  }

  private membersOf(item: MemberItem, def: IPSetDefinition): string[] {
    if (!def.namedPort) return [...item.nets];
    if (!('kind' in item)) return [];
    const np = def.namedPort;
    const out: string[] = [];
    for (const p of item.ports) {
      if (p.name !== np.name || p.protocol !== np.protocol) continue;
      for (const a of item.addrs) out.push(`${a},${p.protocol}:${p.port}`);
    }
    return out;
  }

  private changeMembers(setId: string, members: readonly string[], delta: 1 | -1): void {
    if (members.length === 0) return;
    let m = this.ipSetMembers.get(setId);
    if (!m) {
      m = new Map();
      this.ipSetMembers.set(setId, m);
    }
    for (const member of members) {
      const n = (m.get(member) ?? 0) + delta;
      if (n <= 0) m.delete(member);
      else m.set(member, n);
    }
    this.emitter.ipSets.mark(setId);
  }

  private onIPSetMatch(selector: string, itemKey: string, delta: 1 | -1): void {
    if (this.suppressMembers) return;
    const info = this.items.get(itemKey);
    if (!info) return;
    for (const setId of this.selectorSets.get(selector) ?? []) {
      this.changeMembers(setId, this.membersOf(info, this.ipSetDefs.get(setId)!), delta);
    }
  }

  private addContributions(key: string, info: MemberItem): void {
    for (const sel of this.ipSetIndex.selectorsMatching(key)) {
      for (const setId of this.selectorSets.get(sel) ?? []) {
        this.changeMembers(setId, this.membersOf(info, this.ipSetDefs.get(setId)!), 1);
      }
    }
  }

  private removeContributions(key: string, info: MemberItem): void {
    for (const sel of this.ipSetIndex.selectorsMatching(key)) {
      for (const setId of this.selectorSets.get(sel) ?? []) {
        this.changeMembers(setId, this.membersOf(info, this.ipSetDefs.get(setId)!), -1);
      }
    }
  }

  /** Recomputes the members of every active IP set of the named Services. */
  private refreshServiceSets(serviceKeys: readonly string[]): void {
    for (const key of serviceKeys) {
      for (const id of this.serviceSets.get(key) ?? []) {
        const def = this.ipSetDefs.get(id)!;
        this.ipSetMembers.set(id, new Map(this.serviceIndex.members(def.service!).map((m) => [m, 1])));
        this.emitter.ipSets.mark(id);
      }
    }
  }

  private activateIPSet(def: IPSetDefinition): void {
    this.ipSetDefs.set(def.id, def);
    this.ipSetMembers.set(def.id, new Map());
    this.emitter.ipSets.mark(def.id);
    if (def.service) {
      const key = `${def.service.namespace}/${def.service.name}`;
      addTo(this.serviceSets, key, def.id);
      this.refreshServiceSets([key]);
      return;
    }
    const first =
      addTo(this.selectorSets, def.selector, def.id) && this.selectorSets.get(def.selector)!.size === 1;
    if (first && !this.ipSetIndex.hasSelector(def.selector)) {
      this.ipSetIndex.updateSelector(def.selector, parseSelector(def.selector));
    } else {
      for (const item of this.ipSetIndex.itemsMatching(def.selector)) {
        const info = this.items.get(item);
        if (info) this.changeMembers(def.id, this.membersOf(info, def), 1);
      }
    }
  }

  private deactivateIPSet(id: string): void {
    const def = this.ipSetDefs.get(id);
    if (!def) return;
    this.ipSetDefs.delete(id);
    this.ipSetMembers.delete(id);
    this.emitter.ipSets.mark(id);
    if (def.service) {
      removeFrom(this.serviceSets, `${def.service.namespace}/${def.service.name}`, id);
      return;
    }
    removeFrom(this.selectorSets, def.selector, id);
    if (!this.selectorSets.has(def.selector)) this.ipSetIndex.deleteSelector(def.selector);
  }

  /**
   * Replaces the IP sets an owner's active rules use (`pol:<id>` / `prof:<name>`; undefined: the
   * owner is inactive), activating a set at its first owner and deactivating it after its last.
   */
  setOwnerSets(owner: string, defs: readonly IPSetDefinition[] | undefined): void {
    const before = this.ownerIPSets.get(owner) ?? new Set<string>();
    const after = new Set<string>();
    for (const def of defs ?? []) {
      after.add(def.id);
      if (!before.has(def.id)) {
        const firstOwner = !this.ipSetOwners.has(def.id);
        addTo(this.ipSetOwners, def.id, owner);
        if (firstOwner) this.activateIPSet(def);
      }
    }
    for (const id of before) {
      if (after.has(id)) continue;
      removeFrom(this.ipSetOwners, id, owner);
      if (!this.ipSetOwners.has(id)) this.deactivateIPSet(id);
    }
    if (after.size > 0) this.ownerIPSets.set(owner, after);
    else this.ownerIPSets.delete(owner);
  }

  /** The desired state of an active IP set; undefined once inactive. */
  state(id: string): IPSetState | undefined {
    const def = this.ipSetDefs.get(id);
    if (!def) return undefined;
    const members = [...(this.ipSetMembers.get(id)?.keys() ?? [])].sort(byString);
    return { ...def, type: def.namedPort || def.service?.includePorts ? 'ip-port' : 'net', members };
  }
}
