/**
 * The calculation graph: datastore changes in, desired dataplane state changes out.
 *
 *                 ┌──────────────────────────┐  local endpoints × policy selectors
 *  WEP/HEP ──────►│ endpoints (+ profile      │──► policyIndex ──► endpoint ⇄ policy matches
 *                 │  labelsToApply inherited) │                     │        │
 *  NetworkSet ───►│                           │──┐                  ▼        ▼
 *                 └──────────────────────────┘  │     endpoint tiers   active policies ─┐
 *  (G)NP ──► policy selector ──► policyIndex      │     (policy sorter)  active profiles ─┤
 *  Tier ───► tier order / default action          │                                      ▼
 *  Profile ─► rules, labelsToApply                 │                             rule scanner
 *  IPPool ──► pools                                │                                      │
 *                                                  ▼                      IP set refcounts ◄┘
 *                                 all endpoints + network sets × active IP set selectors
 *                                               ──► ipSetIndex ──► IP set members
 *  Service, EndpointSlice ──► serviceIndex ──► members of active service IP sets (`services`)
 *  Staged(Global|Kubernetes)NetworkPolicy ──► nothing: a preview is never enforced
 *
 * API: `onUpdate(update)` records a change and marks what it affects dirty; `flush()` computes
 * the dirty items' desired state, compares it with what was last emitted and returns the
 * difference (add/remove pairs inside one batch cancel out). `state()` is the whole desired state.
 *
 * Design: every "who matches whom" question is answered by a `SelectorIndex`, so a label change
 * re-evaluates only the selectors that name a changed label. Policies and profiles are active
 * (rendered, and their IP sets computed) only while they apply to a local endpoint; IP sets are
 * reference-counted by the active rules that use them.
 *
 * Thread-safety: single-threaded; pure (no I/O, no clock).
 */
import {
  andSelectors,
  DEFAULT_TIER,
  type GlobalNetworkPolicy,
  type HostEndpoint,
  type IPPool,
  type K8sEndpointSlice,
  type K8sService,
  NAMESPACE_LABEL,
  type NetworkPolicy,
  ORCHESTRATOR_LABEL,
  type Profile,
  parseSelector,
  prefixSelectorLabels,
  printSelector,
  type Rule,
  type Selector,
  type Tier,
  WELL_KNOWN_TIERS,
  type WorkloadEndpoint,
} from '@calico-ts/api';
import { defaultPolicyTypes } from '@calico-ts/api/internal';
import { formatCidr, formatIP, parseCidrOrIP } from '@calico-ts/api/net';
import { addTo, removeFrom } from '../multimap.js';
import { policyId } from './ids.js';
import {
  NAMESPACE_LABEL_PREFIX,
  type ScannedRules,
  SERVICE_ACCOUNT_LABEL,
  SERVICE_ACCOUNT_LABEL_PREFIX,
  scanRules,
} from './rule-scanner.js';
import { type Labels, SelectorIndex } from './selector-index.js';
import { ServiceIndex } from './service-index.js';
import type {
  CalcUpdate,
  DataplaneDiff,
  DataplaneState,
  EndpointState,
  EndpointTier,
  IPSetDefinition,
  IPSetState,
  NamedPortProtocol,
  PolicyKind,
  PolicyState,
  PoolState,
  ProfileState,
  ResourceRef,
  TierDefaultAction,
} from './types.js';

export interface CalcGraphOptions {
  /** This node's name: endpoints whose `spec.node` equals it are local. */
  readonly hostname: string;
}

/** The read-only profile every datastore serves (upstream `libcalico-go/lib/resources/static.go`). */
export const DEFAULT_ALLOW_PROFILE = 'projectcalico-default-allow';

interface NamedPort {
  readonly name: string;
  readonly protocol: NamedPortProtocol;
  readonly port: number;
}

interface EndpointInfo {
  readonly key: string;
  readonly kind: 'wep' | 'hep';
  readonly name: string;
  readonly namespace?: string;
  readonly local: boolean;
  readonly ownLabels: Labels;
  readonly profiles: readonly string[];
  readonly interfaceName?: string;
  /** Canonical CIDRs (/32, /128). */
  readonly nets: readonly string[];
  /** The same addresses without prefix, for named-port members. */
  readonly addrs: readonly string[];
  readonly ports: readonly NamedPort[];
}

interface NetSetInfo {
  readonly key: string;
  readonly labels: Labels;
  readonly nets: readonly string[];
}

interface PolicyInfo {
  readonly id: string;
  readonly kind: PolicyKind;
  readonly name: string;
  readonly namespace?: string;
  readonly tier: string;
  /** +Infinity when unset. */
  readonly order: number;
  readonly ingress: boolean;
  readonly egress: boolean;
  readonly doNotTrack: boolean;
  readonly preDNAT: boolean;
  readonly applyOnForward: boolean;
  readonly selector: Selector;
  readonly ingressRules: readonly Rule[];
  readonly egressRules: readonly Rule[];
  /** JSON of the rules, to tell a rule change from a metadata change. */
  readonly rulesKey: string;
}

interface TierInfo {
  readonly order?: number;
  readonly defaultAction: TierDefaultAction;
}

type Emitted<T> = Map<string, { readonly json: string; readonly value: T }>;

const byString = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

const KIND_NAMES: Readonly<Record<PolicyKind, string>> = { np: 'NetworkPolicy', gnp: 'GlobalNetworkPolicy' };

function tieBreakKey(p: { name: string; namespace?: string; kind: PolicyKind }): string {
  return `${p.name}/${p.namespace ?? ''}/${KIND_NAMES[p.kind]}`;
}

function canonicalAddrs(texts: readonly string[] | undefined): { nets: string[]; addrs: string[] } {
  const nets: string[] = [];
  const addrs: string[] = [];
  for (const t of texts ?? []) {
    const c = parseCidrOrIP(t);
    if (!c) continue;
    nets.push(formatCidr(c));
    addrs.push(formatIP({ family: c.family, value: c.network }));
  }
  return { nets, addrs };
}

function namedPorts(
  ports: readonly { name?: string; protocol: unknown; port: number }[] | undefined,
): NamedPort[] {
  const out: NamedPort[] = [];
  for (const p of ports ?? []) {
    if (!p.name) continue;
    const proto = String(p.protocol).toLowerCase();
    const protocol: NamedPortProtocol | undefined =
      proto === 'tcp' || proto === '6'
        ? 'tcp'
        : proto === 'udp' || proto === '17'
          ? 'udp'
          : proto === 'sctp' || proto === '132'
            ? 'sctp'
            : undefined;
    if (protocol) out.push({ name: p.name, protocol, port: p.port });
  }
  return out;
}

/** Label-prefixed selector text with `all()` replaced, as upstream's policy update processors do. */
function prefixedPolicySelector(text: string | undefined, prefix: string, allLabel: string): string {
  if (!text || text.trim() === '') return '';
  return printSelector(prefixSelectorLabels(parseSelector(text).root, prefix)).replaceAll(
    'all()',
    `has(${allLabel})`,
  );
}

export class CalcGraph {
  private readonly hostname: string;
  private inSync = false;
  private inSyncEmitted = false;

  private readonly endpoints = new Map<string, EndpointInfo>();
  private readonly netSets = new Map<string, NetSetInfo>();
  private readonly policies = new Map<string, PolicyInfo>();
  private readonly policiesByTier = new Map<string, Set<string>>();
  private readonly profiles = new Map<string, Profile>();
  private readonly tiers = new Map<string, TierInfo>();
  private readonly pools = new Map<string, PoolState>();

  /** profile → endpoints (local and remote) listing it: for labelsToApply. */
  private readonly profileUsers = new Map<string, Set<string>>();
  /** profile → local endpoints listing it: for activation. */
  private readonly localProfileUsers = new Map<string, Set<string>>();

  private readonly policyIndex: SelectorIndex;
  private readonly endpointPolicies = new Map<string, Set<string>>();
  private readonly policyEndpoints = new Map<string, Set<string>>();

  /** Active rules by owner (`pol:<id>` / `prof:<name>`). */
  private readonly activeRules = new Map<string, ScannedRules>();
  private readonly ownerIPSets = new Map<string, Set<string>>();
  private readonly ipSetOwners = new Map<string, Set<string>>();
  private readonly ipSetDefs = new Map<string, IPSetDefinition>();
  private readonly selectorSets = new Map<string, Set<string>>();
  private readonly ipSetMembers = new Map<string, Map<string, number>>();
  private readonly ipSetIndex: SelectorIndex;
  private suppressMembers = false;
  private readonly serviceIndex = new ServiceIndex();
  /** `namespace/name` → active service IP sets naming it. */
  private readonly serviceSets = new Map<string, Set<string>>();

  private readonly dirtyIPSets = new Set<string>();
  private readonly dirtyPolicies = new Set<string>();
  private readonly dirtyProfiles = new Set<string>();
  private readonly dirtyEndpoints = new Set<string>();
  private readonly dirtyPools = new Set<string>();

  private readonly emittedIPSets: Emitted<IPSetState> = new Map();
  private readonly emittedPolicies: Emitted<PolicyState> = new Map();
  private readonly emittedProfiles: Emitted<ProfileState> = new Map();
  private readonly emittedEndpoints: Emitted<EndpointState> = new Map();
  private readonly emittedPools: Emitted<PoolState> = new Map();

  constructor(opts: CalcGraphOptions) {
    this.hostname = opts.hostname;
    this.policyIndex = new SelectorIndex({
      onMatchStarted: (pol, ep) => this.onPolicyMatch(pol, ep, true),
      onMatchStopped: (pol, ep) => this.onPolicyMatch(pol, ep, false),
    });
    this.ipSetIndex = new SelectorIndex({
      onMatchStarted: (sel, item) => this.onIPSetMatch(sel, item, 1),
      onMatchStopped: (sel, item) => this.onIPSetMatch(sel, item, -1),
    });
  }

  /** Calls to `Selector.matches` made so far by both indexes. */
  get selectorEvaluations(): number {
    return this.policyIndex.evaluations + this.ipSetIndex.evaluations;
  }

  // ---- input ---------------------------------------------------------------------------------

  onUpdate(update: CalcUpdate): void {
    if (update.kind === 'in-sync') {
      this.inSync = true;
      return;
    }
    const r = update.resource;
    const del = update.kind === 'delete';
    const { name, namespace } = r.metadata;
    switch (r.kind) {
      case 'WorkloadEndpoint':
        if (del) this.removeEndpoint(`wep/${namespace ?? ''}/${name}`);
        else this.upsertEndpoint(this.workloadInfo(r as WorkloadEndpoint));
        return;
      case 'HostEndpoint':
        if (del) this.removeEndpoint(`hep/${name}`);
        else this.upsertEndpoint(this.hostEndpointInfo(r as HostEndpoint));
        return;
      case 'NetworkSet':
      case 'GlobalNetworkSet': {
        const key = r.kind === 'NetworkSet' ? `ns/${namespace ?? ''}/${name}` : `gns/${name}`;
        if (del) this.removeNetSet(key);
        else {
          const spec = (r as { spec?: { nets?: string[] } }).spec;
          const labels: Record<string, string> = { ...(r.metadata as { labels?: Labels }).labels };
          if (r.kind === 'NetworkSet' && namespace) labels[NAMESPACE_LABEL] = namespace;
          this.upsertNetSet({ key, labels, nets: canonicalAddrs(spec?.nets).nets });
        }
        return;
      }
      case 'NetworkPolicy':
      case 'GlobalNetworkPolicy': {
        const kind: PolicyKind = r.kind === 'NetworkPolicy' ? 'np' : 'gnp';
        const id = policyId(kind, name, kind === 'np' ? namespace : undefined);
        if (del) this.removePolicy(id);
        else this.upsertPolicy(this.policyInfo(r as NetworkPolicy | GlobalNetworkPolicy, id));
        return;
      }
      case 'StagedNetworkPolicy':
      case 'StagedGlobalNetworkPolicy':
      case 'StagedKubernetesNetworkPolicy':
        // Staged policies preview a change and never decide a packet (fail closed: they neither
        // allow nor deny). Kept out of every index, they select no endpoint, so a tier holding
        // only staged policies is not applied and ends in no drop, as upstream's dataplane does.
        return;
      case 'Tier':
        this.updateTier(name, del ? undefined : (r as Tier));
        return;
      case 'Profile':
        this.updateProfile(name, del ? undefined : (r as Profile));
        return;
      case 'IPPool':
        this.updatePool(name, del ? undefined : (r as IPPool));
        return;
      case 'Service':
        this.refreshServiceSets([
          this.serviceIndex.onService(namespace ?? '', name, del ? undefined : (r as K8sService)),
        ]);
        return;
      case 'EndpointSlice':
        this.refreshServiceSets(
          this.serviceIndex.onEndpointSlice(namespace ?? '', name, del ? undefined : (r as K8sEndpointSlice)),
        );
        return;
      default:
        throw new TypeError(`CalcGraph: unsupported kind ${String((r as { kind: unknown }).kind)}`);
    }
  }

  private workloadInfo(w: WorkloadEndpoint): EndpointInfo {
    const ns = w.metadata.namespace ?? '';
    const labels: Record<string, string> = { ...w.metadata.labels };
    if (ns && labels[NAMESPACE_LABEL] === undefined) labels[NAMESPACE_LABEL] = ns;
    if (w.spec.orchestrator && labels[ORCHESTRATOR_LABEL] === undefined) {
      labels[ORCHESTRATOR_LABEL] = w.spec.orchestrator;
    }
    const { nets, addrs } = canonicalAddrs(w.spec.ipNetworks);
    const info: EndpointInfo = {
      key: `wep/${ns}/${w.metadata.name}`,
      kind: 'wep',
      name: w.metadata.name,
      namespace: ns,
      local: w.spec.node === this.hostname,
      ownLabels: labels,
      profiles: w.spec.profiles ?? [],
      nets,
      addrs,
      ports: namedPorts(w.spec.ports),
    };
    return w.spec.interfaceName ? { ...info, interfaceName: w.spec.interfaceName } : info;
  }

  private hostEndpointInfo(h: HostEndpoint): EndpointInfo {
    const { nets, addrs } = canonicalAddrs(h.spec.expectedIPs);
    const info: EndpointInfo = {
      key: `hep/${h.metadata.name}`,
      kind: 'hep',
      name: h.metadata.name,
      local: h.spec.node === this.hostname,
      ownLabels: { ...h.metadata.labels },
      profiles: h.spec.profiles ?? [],
      nets,
      addrs,
      ports: namedPorts(h.spec.ports),
    };
    return h.spec.interfaceName ? { ...info, interfaceName: h.spec.interfaceName } : info;
  }

  private policyInfo(p: NetworkPolicy | GlobalNetworkPolicy, id: string): PolicyInfo {
    const kind: PolicyKind = p.kind === 'NetworkPolicy' ? 'np' : 'gnp';
    const spec = p.spec;
    const parts: string[] = [spec.selector ?? ''];
    if (kind === 'np') {
      parts.push(`${NAMESPACE_LABEL} == '${p.metadata.namespace ?? ''}'`);
    } else {
      const nsSel = (spec as GlobalNetworkPolicy['spec']).namespaceSelector;
      parts.push(prefixedPolicySelector(nsSel, NAMESPACE_LABEL_PREFIX, NAMESPACE_LABEL));
    }
    parts.push(
      prefixedPolicySelector(
        spec.serviceAccountSelector,
        SERVICE_ACCOUNT_LABEL_PREFIX,
        SERVICE_ACCOUNT_LABEL,
      ),
    );
    const types =
      spec.types && spec.types.length > 0 ? spec.types : defaultPolicyTypes(spec.ingress, spec.egress);
    const g = spec as GlobalNetworkPolicy['spec'];
    const ingressRules = spec.ingress ?? [];
    const egressRules = spec.egress ?? [];
    const info: PolicyInfo = {
      id,
      kind,
      name: p.metadata.name,
      tier: spec.tier || DEFAULT_TIER,
      order: spec.order ?? Number.POSITIVE_INFINITY,
      ingress: types.includes('Ingress'),
      egress: types.includes('Egress'),
      doNotTrack: g.doNotTrack === true,
      preDNAT: g.preDNAT === true,
      applyOnForward: g.applyOnForward === true || g.doNotTrack === true || g.preDNAT === true,
      selector: parseSelector(andSelectors(...parts)),
      ingressRules,
      egressRules,
      rulesKey: JSON.stringify([ingressRules, egressRules]),
    };
    return kind === 'np' ? { ...info, namespace: p.metadata.namespace ?? '' } : info;
  }

  // ---- endpoints and network sets --------------------------------------------------------------

  /** Own labels win; then each profile's labelsToApply in the endpoint's order, first one wins. */
  private effectiveLabels(info: EndpointInfo): Labels {
    if (info.profiles.length === 0) return info.ownLabels;
    const out: Record<string, string> = { ...info.ownLabels };
    for (const prof of info.profiles) {
      const toApply = this.profiles.get(prof)?.spec.labelsToApply;
      if (!toApply) continue;
      for (const [k, v] of Object.entries(toApply)) if (!Object.hasOwn(out, k)) out[k] = v;
    }
    return out;
  }

  private upsertEndpoint(info: EndpointInfo): void {
    const old = this.endpoints.get(info.key);
    // Profile users.
    const oldProfiles = new Set(old?.profiles ?? []);
    const newProfiles = new Set(info.profiles);
    const touched = new Set<string>();
    for (const p of oldProfiles) {
      if (!newProfiles.has(p)) removeFrom(this.profileUsers, p, info.key);
      if (old?.local && (!newProfiles.has(p) || !info.local)) {
        if (removeFrom(this.localProfileUsers, p, info.key)) touched.add(p);
      }
    }
    for (const p of newProfiles) {
      addTo(this.profileUsers, p, info.key);
      if (info.local && addTo(this.localProfileUsers, p, info.key)) touched.add(p);
    }

    this.reindexItem(info.key, old, info, this.effectiveLabels(info));

    if (info.local) {
      this.policyIndex.updateItem(info.key, this.effectiveLabels(info));
      this.dirtyEndpoints.add(info.key);
    } else if (old?.local) {
      this.policyIndex.deleteItem(info.key);
      this.dirtyEndpoints.add(info.key);
    }
    for (const p of touched) this.refreshProfile(p, false);
  }

  private removeEndpoint(key: string): void {
    const old = this.endpoints.get(key);
    if (!old) return;
    this.removeContributions(key, old);
    this.suppressMembers = true;
    this.ipSetIndex.deleteItem(key);
    this.suppressMembers = false;
    this.endpoints.delete(key);
    if (old.local) this.policyIndex.deleteItem(key);
    this.dirtyEndpoints.add(key);
    for (const p of old.profiles) {
      removeFrom(this.profileUsers, p, key);
      if (old.local && removeFrom(this.localProfileUsers, p, key)) this.refreshProfile(p, false);
    }
  }

  private upsertNetSet(info: NetSetInfo): void {
    this.reindexItem(info.key, this.netSets.get(info.key), info, info.labels);
  }

  private removeNetSet(key: string): void {
    const old = this.netSets.get(key);
    if (!old) return;
    this.removeContributions(key, old);
    this.suppressMembers = true;
    this.ipSetIndex.deleteItem(key);
    this.suppressMembers = false;
    this.netSets.delete(key);
  }

  /**
   * Replaces an item in the IP set index: its old members leave every set it was in, the index
   * re-matches it (evaluating only what its label change can affect), and its new members join
   * the sets it matches now.
   */
  private reindexItem(
    key: string,
    old: EndpointInfo | NetSetInfo | undefined,
    info: EndpointInfo | NetSetInfo,
    labels: Labels,
  ): void {
    if (old) this.removeContributions(key, old);
    this.suppressMembers = true;
    this.ipSetIndex.updateItem(key, labels);
    this.suppressMembers = false;
    if ('kind' in info) this.endpoints.set(key, info);
    else this.netSets.set(key, info);
    this.addContributions(key, info);
  }

  // ---- IP set members --------------------------------------------------------------------------

  private membersOf(item: EndpointInfo | NetSetInfo, def: IPSetDefinition): string[] {
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
    this.dirtyIPSets.add(setId);
  }

  private itemInfo(key: string): EndpointInfo | NetSetInfo | undefined {
    return this.endpoints.get(key) ?? this.netSets.get(key);
  }

  private onIPSetMatch(selector: string, itemKey: string, delta: 1 | -1): void {
    if (this.suppressMembers) return;
    const info = this.itemInfo(itemKey);
    if (!info) return;
    for (const setId of this.selectorSets.get(selector) ?? []) {
      this.changeMembers(setId, this.membersOf(info, this.ipSetDefs.get(setId)!), delta);
    }
  }

  private addContributions(key: string, info: EndpointInfo | NetSetInfo): void {
    for (const sel of this.ipSetIndex.selectorsMatching(key)) {
      for (const setId of this.selectorSets.get(sel) ?? []) {
        this.changeMembers(setId, this.membersOf(info, this.ipSetDefs.get(setId)!), 1);
      }
    }
  }

  private removeContributions(key: string, info: EndpointInfo | NetSetInfo): void {
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
        this.dirtyIPSets.add(id);
      }
    }
  }

  private activateIPSet(def: IPSetDefinition): void {
    this.ipSetDefs.set(def.id, def);
    this.ipSetMembers.set(def.id, new Map());
    this.dirtyIPSets.add(def.id);
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
        const info = this.itemInfo(item);
        if (info) this.changeMembers(def.id, this.membersOf(info, def), 1);
      }
    }
  }

  private deactivateIPSet(id: string): void {
    const def = this.ipSetDefs.get(id);
    if (!def) return;
    this.ipSetDefs.delete(id);
    this.ipSetMembers.delete(id);
    this.dirtyIPSets.add(id);
    if (def.service) {
      removeFrom(this.serviceSets, `${def.service.namespace}/${def.service.name}`, id);
      return;
    }
    removeFrom(this.selectorSets, def.selector, id);
    if (!this.selectorSets.has(def.selector)) this.ipSetIndex.deleteSelector(def.selector);
  }

  /** Replaces the active rules of an owner, activating and deactivating IP sets by refcount. */
  private setOwnerRules(owner: string, scanned: ScannedRules | undefined): void {
    const before = this.ownerIPSets.get(owner) ?? new Set<string>();
    const after = new Set<string>();
    if (scanned) {
      this.activeRules.set(owner, scanned);
      for (const def of scanned.ipSets) {
        after.add(def.id);
        if (!before.has(def.id)) {
          const firstOwner = !this.ipSetOwners.has(def.id);
          addTo(this.ipSetOwners, def.id, owner);
          if (firstOwner) this.activateIPSet(def);
        }
      }
    } else {
      this.activeRules.delete(owner);
    }
    for (const id of before) {
      if (after.has(id)) continue;
      removeFrom(this.ipSetOwners, id, owner);
      if (!this.ipSetOwners.has(id)) this.deactivateIPSet(id);
    }
    if (after.size > 0) this.ownerIPSets.set(owner, after);
    else this.ownerIPSets.delete(owner);
  }

  // ---- policies --------------------------------------------------------------------------------

  private onPolicyMatch(pol: string, ep: string, started: boolean): void {
    this.dirtyEndpoints.add(ep);
    if (started) {
      addTo(this.endpointPolicies, ep, pol);
      if (addTo(this.policyEndpoints, pol, ep) && this.policyEndpoints.get(pol)!.size === 1) {
        this.activatePolicy(pol);
      }
    } else {
      removeFrom(this.endpointPolicies, ep, pol);
      if (removeFrom(this.policyEndpoints, pol, ep) && !this.policyEndpoints.has(pol)) {
        this.setOwnerRules(`pol:${pol}`, undefined);
        this.dirtyPolicies.add(pol);
      }
    }
  }

  private activatePolicy(id: string): void {
    const p = this.policies.get(id);
    if (!p) return;
    this.setOwnerRules(`pol:${id}`, scanRules(p.ingressRules, p.egressRules, p.namespace));
    this.dirtyPolicies.add(id);
  }

  private upsertPolicy(info: PolicyInfo): void {
    const old = this.policies.get(info.id);
    this.policies.set(info.id, info);
    if (old && old.tier !== info.tier) removeFrom(this.policiesByTier, old.tier, info.id);
    addTo(this.policiesByTier, info.tier, info.id);
    // Metadata that orders or filters the policy on its endpoints.
    if (
      old &&
      (old.tier !== info.tier ||
        old.order !== info.order ||
        old.ingress !== info.ingress ||
        old.egress !== info.egress ||
        old.doNotTrack !== info.doNotTrack ||
        old.preDNAT !== info.preDNAT ||
        old.applyOnForward !== info.applyOnForward)
    ) {
      for (const ep of this.policyEndpoints.get(info.id) ?? []) this.dirtyEndpoints.add(ep);
    }
    const wasActive = this.policyEndpoints.has(info.id);
    this.policyIndex.updateSelector(info.id, info.selector);
    // A policy that stayed active with new rules is rescanned; one that just became active was
    // scanned by the match callback.
    if (wasActive && this.policyEndpoints.has(info.id) && old && old.rulesKey !== info.rulesKey) {
      this.activatePolicy(info.id);
    }
    if (old && (old.tier !== info.tier || old.rulesKey !== info.rulesKey)) this.dirtyPolicies.add(info.id);
  }

  private removePolicy(id: string): void {
    const old = this.policies.get(id);
    if (!old) return;
    this.policyIndex.deleteSelector(id);
    this.policies.delete(id);
    removeFrom(this.policiesByTier, old.tier, id);
    this.dirtyPolicies.add(id);
  }

  private updateTier(name: string, tier: Tier | undefined): void {
    if (tier) {
      const info: TierInfo =
        tier.spec.order === undefined
          ? { defaultAction: tier.spec.defaultAction ?? WELL_KNOWN_TIERS[name]?.defaultAction ?? 'Deny' }
          : {
              order: tier.spec.order,
              defaultAction: tier.spec.defaultAction ?? WELL_KNOWN_TIERS[name]?.defaultAction ?? 'Deny',
            };
      this.tiers.set(name, info);
    } else {
      this.tiers.delete(name);
    }
    for (const pol of this.policiesByTier.get(name) ?? []) {
      for (const ep of this.policyEndpoints.get(pol) ?? []) this.dirtyEndpoints.add(ep);
    }
  }

  // ---- profiles --------------------------------------------------------------------------------

  private profileExists(name: string): boolean {
    return this.profiles.has(name) || name === DEFAULT_ALLOW_PROFILE;
  }

  private profileRules(name: string): ScannedRules {
    const p = this.profiles.get(name);
    if (p) return scanRules(p.spec.ingress, p.spec.egress, undefined);
    // projectcalico-default-allow
    return scanRules([{ action: 'Allow' }], [{ action: 'Allow' }], undefined);
  }

  /** Activates or deactivates a profile's rules; `rulesChanged` rescans an active one. */
  private refreshProfile(name: string, rulesChanged: boolean): void {
    const owner = `prof:${name}`;
    const shouldBeActive = this.localProfileUsers.has(name) && this.profileExists(name);
    const isActive = this.activeRules.has(owner);
    if (shouldBeActive && (!isActive || rulesChanged)) {
      this.setOwnerRules(owner, this.profileRules(name));
      this.dirtyProfiles.add(name);
    } else if (!shouldBeActive && isActive) {
      this.setOwnerRules(owner, undefined);
      this.dirtyProfiles.add(name);
    }
  }

  private updateProfile(name: string, profile: Profile | undefined): void {
    const old = this.profiles.get(name);
    const existedBefore = this.profileExists(name);
    if (profile) this.profiles.set(name, profile);
    else this.profiles.delete(name);
    const rulesChanged =
      JSON.stringify([old?.spec.ingress, old?.spec.egress]) !==
      JSON.stringify([profile?.spec.ingress, profile?.spec.egress]);
    const labelsChanged =
      JSON.stringify(old?.spec.labelsToApply ?? {}) !== JSON.stringify(profile?.spec.labelsToApply ?? {});
    this.refreshProfile(name, rulesChanged);
    if (existedBefore !== this.profileExists(name)) {
      for (const ep of this.localProfileUsers.get(name) ?? []) this.dirtyEndpoints.add(ep);
    }
    if (labelsChanged) {
      for (const key of [...(this.profileUsers.get(name) ?? [])]) {
        const info = this.endpoints.get(key);
        if (!info) continue;
        const labels = this.effectiveLabels(info);
        this.reindexItem(key, info, info, labels);
        if (info.local) this.policyIndex.updateItem(key, labels);
      }
    }
  }

  // ---- pools -----------------------------------------------------------------------------------

  private updatePool(name: string, pool: IPPool | undefined): void {
    if (pool) {
      const c = parseCidrOrIP(pool.spec.cidr);
      if (!c) return;
      this.pools.set(name, {
        name,
        cidr: formatCidr(c),
        natOutgoing: pool.spec.natOutgoing === true,
        disabled: pool.spec.disabled === true,
      });
    } else {
      this.pools.delete(name);
    }
    this.dirtyPools.add(name);
  }

  // ---- output ----------------------------------------------------------------------------------

  private tierInfo(name: string): { valid: boolean; order?: number; defaultAction: TierDefaultAction } {
    const t = this.tiers.get(name);
    if (t) return { valid: true, ...t };
    const known = WELL_KNOWN_TIERS[name];
    if (known) return { valid: true, order: known.order, defaultAction: known.defaultAction };
    return { valid: false, defaultAction: 'Deny' };
  }

  private buildTiers(pols: readonly PolicyInfo[]): EndpointTier[] {
    const byTier = new Map<string, PolicyInfo[]>();
    for (const p of pols) {
      const list = byTier.get(p.tier);
      if (list) list.push(p);
      else byTier.set(p.tier, [p]);
    }
    const names = [...byTier.keys()].map((n) => ({ name: n, ...this.tierInfo(n) }));
    // Valid tiers first; then by order, unset last; then by name (upstream TierLess).
    names.sort((a, b) => {
      if (a.valid !== b.valid) return a.valid ? -1 : 1;
      if (a.order !== b.order) {
        if (a.order === undefined) return 1;
        if (b.order === undefined) return -1;
        return a.order - b.order;
      }
      return byString(a.name, b.name);
    });
    const out: EndpointTier[] = [];
    for (const t of names) {
      const list = byTier.get(t.name)!;
      // By order (unset = +Inf), then the text `name/namespace/kind` (upstream PolKVLess).
      list.sort((a, b) => {
        if (a.order !== b.order) return a.order < b.order ? -1 : 1;
        return byString(tieBreakKey(a), tieBreakKey(b));
      });
      const ingressPolicies = list.filter((p) => p.ingress).map((p) => p.id);
      const egressPolicies = list.filter((p) => p.egress).map((p) => p.id);
      if (ingressPolicies.length === 0 && egressPolicies.length === 0) continue;
      out.push({ name: t.name, defaultAction: t.defaultAction, ingressPolicies, egressPolicies });
    }
    return out;
  }

  private endpointState(key: string): EndpointState | undefined {
    const info = this.endpoints.get(key);
    if (!info?.local) return undefined;
    const pols = [...(this.endpointPolicies.get(key) ?? [])]
      .map((id) => this.policies.get(id))
      .filter((p): p is PolicyInfo => p !== undefined);
    // Untracked and pre-DNAT policies apply to host endpoints only, in their own stages; a
    // workload endpoint ignores them. Pre-DNAT policy has no egress side.
    const normal = pols.filter((p) => !p.doNotTrack && !p.preDNAT);
    const isHep = info.kind === 'hep';
    const forward = isHep ? normal.filter((p) => p.applyOnForward) : [];
    const untracked = isHep ? pols.filter((p) => p.doNotTrack) : [];
    const preDNAT = isHep
      ? pols.filter((p) => p.preDNAT && !p.doNotTrack).map((p) => ({ ...p, egress: false }))
      : [];
    const v4: string[] = [];
    const v6: string[] = [];
    for (const n of info.nets) (n.includes(':') ? v6 : v4).push(n);
    const state: EndpointState = {
      key,
      kind: info.kind,
      name: info.name,
      ...(info.namespace !== undefined ? { namespace: info.namespace } : {}),
      ...(info.interfaceName !== undefined ? { interfaceName: info.interfaceName } : {}),
      ipv4Nets: v4,
      ipv6Nets: v6,
      tiers: this.buildTiers(normal),
      forwardTiers: this.buildTiers(forward),
      untrackedTiers: this.buildTiers(untracked),
      preDNATTiers: this.buildTiers(preDNAT),
      profileIds: info.profiles.filter((p) => this.profileExists(p)),
    };
    return state;
  }

  private ipSetState(id: string): IPSetState | undefined {
    const def = this.ipSetDefs.get(id);
    if (!def) return undefined;
    const members = [...(this.ipSetMembers.get(id)?.keys() ?? [])].sort(byString);
    return { ...def, type: def.namedPort || def.service?.includePorts ? 'ip-port' : 'net', members };
  }

  private policyState(id: string): PolicyState | undefined {
    const p = this.policies.get(id);
    const rules = this.activeRules.get(`pol:${id}`);
    if (!p || !rules) return undefined;
    return {
      id,
      kind: p.kind,
      ...(p.namespace !== undefined ? { namespace: p.namespace } : {}),
      name: p.name,
      tier: p.tier,
      inbound: rules.inbound,
      outbound: rules.outbound,
    };
  }

  private profileState(name: string): ProfileState | undefined {
    const rules = this.activeRules.get(`prof:${name}`);
    if (!rules) return undefined;
    return { id: name, inbound: rules.inbound, outbound: rules.outbound };
  }

  private static collect<T>(
    dirty: Set<string>,
    emitted: Emitted<T>,
    compute: (id: string) => T | undefined,
  ): { updated: T[]; removed: string[] } {
    const updated: T[] = [];
    const removed: string[] = [];
    for (const id of [...dirty].sort(byString)) {
      const value = compute(id);
      const prev = emitted.get(id);
      if (value === undefined) {
        if (prev) {
          emitted.delete(id);
          removed.push(id);
        }
        continue;
      }
      const json = JSON.stringify(value);
      if (prev?.json === json) continue;
      emitted.set(id, { json, value });
      updated.push(value);
    }
    dirty.clear();
    return { updated, removed };
  }

  /** The changes since the previous flush. */
  flush(): DataplaneDiff {
    const ipSets = CalcGraph.collect(this.dirtyIPSets, this.emittedIPSets, (id) => this.ipSetState(id));
    const policies = CalcGraph.collect(this.dirtyPolicies, this.emittedPolicies, (id) =>
      this.policyState(id),
    );
    const profiles = CalcGraph.collect(this.dirtyProfiles, this.emittedProfiles, (id) =>
      this.profileState(id),
    );
    const endpoints = CalcGraph.collect(this.dirtyEndpoints, this.emittedEndpoints, (id) =>
      this.endpointState(id),
    );
    const pools = CalcGraph.collect(this.dirtyPools, this.emittedPools, (id) => this.pools.get(id));
    this.inSyncEmitted = this.inSyncEmitted || this.inSync;
    return {
      inSync: this.inSyncEmitted,
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
    };
  }

  /** The whole desired state as of the last flush. */
  state(): DataplaneState {
    const values = <T>(m: Emitted<T>): Record<string, T> => {
      const out: Record<string, T> = {};
      for (const k of [...m.keys()].sort(byString)) out[k] = m.get(k)!.value;
      return out;
    };
    return {
      inSync: this.inSyncEmitted,
      ipSets: values(this.emittedIPSets),
      policies: values(this.emittedPolicies),
      profiles: values(this.emittedProfiles),
      endpoints: values(this.emittedEndpoints),
      pools: values(this.emittedPools),
    };
  }
}

export type { ResourceRef };
