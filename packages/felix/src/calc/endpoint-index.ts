/**
 * The endpoint index (upstream `felix/calc/calc_graph.go`'s local endpoint dispatcher with the
 * label inheritance index): every endpoint in the cluster, the profiles they list, and the
 * labels they carry once their profiles' `labelsToApply` are inherited.
 *
 *   WorkloadEndpoint, HostEndpoint ──► onEndpoint ──► EndpointInfo ──┬─► IPSetMembers.updateItem (all)
 *   Profile.labelsToApply ──► onProfile ──► effective labels ────────┤
 *                                                                    └─► ActiveRules.updateEndpoint
 *                                                                        (local endpoints only)
 *   a profile gains or loses its last local user ──► ActiveRules.refreshProfile
 *   state(key) ◄── the endpoint's policies (ActiveRules) in tiers (PolicySorter), its profiles
 *
 * Labels: the endpoint's own win; then each profile's labelsToApply in the endpoint's order, the
 * first profile naming a label wins (as upstream's label inheritance).
 *
 * Thread-safety: single-threaded; pure.
 */
import type { HostEndpoint, Profile, WorkloadEndpoint } from '@calico-ts/api';
import { addTo, removeFrom } from '../multimap.js';
import type { ActiveRules } from './active-rules.js';
import type { KindUpdate } from './dispatcher.js';
import type { Emitter } from './emitter.js';
import { type EndpointInfo, endpointKey, hostEndpointInfo, workloadInfo } from './endpoint-info.js';
import type { IPSetMembers } from './ip-set-members.js';
import type { PolicySorter } from './policy-sorter.js';
import type { Labels } from './selector-index.js';
import type { EndpointState } from './types.js';

export interface EndpointIndexOptions {
  /** This node's name: endpoints whose `spec.node` equals it are local. */
  readonly hostname: string;
  readonly emitter: Emitter;
  readonly ipSets: IPSetMembers;
  readonly rules: ActiveRules;
  readonly sorter: PolicySorter;
}

export class EndpointIndex {
  private readonly hostname: string;
  private readonly emitter: Emitter;
  private readonly ipSets: IPSetMembers;
  private readonly rules: ActiveRules;
  private readonly sorter: PolicySorter;
  private readonly endpoints = new Map<string, EndpointInfo>();
  /** Profile → its labelsToApply. */
  private readonly labelsToApply = new Map<string, Labels>();
  /** profile → endpoints (local and remote) listing it: for labelsToApply. */
  private readonly profileUsers = new Map<string, Set<string>>();
  /** profile → local endpoints listing it: for activation. */
  private readonly localProfileUsers = new Map<string, Set<string>>();

  constructor(o: EndpointIndexOptions) {
    this.hostname = o.hostname;
    this.emitter = o.emitter;
    this.ipSets = o.ipSets;
    this.rules = o.rules;
    this.sorter = o.sorter;
  }

  hasLocalUsers(profile: string): boolean {
    return this.localProfileUsers.has(profile);
  }

  localUsers(profile: string): Iterable<string> {
    return this.localProfileUsers.get(profile) ?? [];
  }

  onEndpoint(u: KindUpdate): void {
    const r = u.resource;
    if (u.kind === 'delete') this.removeEndpoint(endpointKey(r));
    else if (r.kind === 'WorkloadEndpoint')
      this.upsertEndpoint(workloadInfo(r as WorkloadEndpoint, this.hostname));
    else this.upsertEndpoint(hostEndpointInfo(r as HostEndpoint, this.hostname));
  }

  /** A profile's labelsToApply: the endpoints listing it are re-labelled when they changed. */
  onProfile(u: KindUpdate): void {
    const name = u.resource.metadata.name;
    const after = u.kind === 'set' ? (u.resource as Profile).spec.labelsToApply : undefined;
    const before = this.labelsToApply.get(name);
    if (after) this.labelsToApply.set(name, after);
    else this.labelsToApply.delete(name);
    if (JSON.stringify(before ?? {}) === JSON.stringify(after ?? {})) return;
    for (const key of [...(this.profileUsers.get(name) ?? [])]) {
      const info = this.endpoints.get(key);
      if (!info) continue;
      const labels = this.effectiveLabels(info);
      this.ipSets.updateItem(key, info, labels);
      if (info.local) this.rules.updateEndpoint(key, labels);
    }
  }

  /** Own labels win; then each profile's labelsToApply in the endpoint's order, first one wins. */
  private effectiveLabels(info: EndpointInfo): Labels {
    if (info.profiles.length === 0) return info.ownLabels;
    const out: Record<string, string> = { ...info.ownLabels };
    for (const prof of info.profiles) {
      const toApply = this.labelsToApply.get(prof);
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

    this.endpoints.set(info.key, info);
    this.ipSets.updateItem(info.key, info, this.effectiveLabels(info));

    if (info.local) {
      this.rules.updateEndpoint(info.key, this.effectiveLabels(info));
      this.emitter.endpoints.mark(info.key);
    } else if (old?.local) {
      this.rules.deleteEndpoint(info.key);
      this.emitter.endpoints.mark(info.key);
    }
    for (const p of touched) this.rules.refreshProfile(p);
  }

  private removeEndpoint(key: string): void {
    const old = this.endpoints.get(key);
    if (!old) return;
    this.ipSets.deleteItem(key);
    this.endpoints.delete(key);
    if (old.local) this.rules.deleteEndpoint(key);
    this.emitter.endpoints.mark(key);
    for (const p of old.profiles) {
      removeFrom(this.profileUsers, p, key);
      if (old.local && removeFrom(this.localProfileUsers, p, key)) this.rules.refreshProfile(p);
    }
  }

  /** The desired state of a local endpoint; undefined for a remote or deleted one. */
  state(key: string): EndpointState | undefined {
    const info = this.endpoints.get(key);
    if (!info?.local) return undefined;
    const pols = this.rules.policiesOf(key);
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
      tiers: this.sorter.buildTiers(normal),
      forwardTiers: this.sorter.buildTiers(forward),
      untrackedTiers: this.sorter.buildTiers(untracked),
      preDNATTiers: this.sorter.buildTiers(preDNAT),
      profileIds: info.profiles.filter((p) => this.rules.profileExists(p)),
    };
    return state;
  }
}
