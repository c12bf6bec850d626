/**
 * Active rules (upstream `felix/calc/active_rules_calculator.go`): which policies and profiles
 * apply to this node's endpoints, and their rules, scanned, while they do.
 *
 *   (G)NP ──► onPolicy ──► policyIndex (SelectorIndex: policy selectors × local endpoints' labels)
 *   local endpoints' labels (EndpointIndex) ──┘      │ match started / stopped
 *                                                    ▼
 *                         endpoint ⇄ policy matches ──first match──► scanRules ──► active rules
 *                              │                     └─last match──► inactive
 *                              ▼ emitter.endpoints.mark        owner's IP sets ──► IPSetMembers
 *   Profile ──► onProfile ──► rules; active while a local endpoint lists it (and it exists)
 *   Tier ──► onTier ──► the endpoints of the tier's policies are re-sorted
 *
 * Design: a policy is scanned when it becomes active or its rules change while active, never
 * for a metadata change; an inactive policy costs a selector in the index and nothing else.
 *
 * Thread-safety: single-threaded; pure.
 */
import type { Profile } from '@calico-ts/api';
import { addTo, removeFrom } from '../multimap.js';
import type { KindUpdate } from './dispatcher.js';
import type { Emitter } from './emitter.js';
import { policyId } from './ids.js';
import type { IPSetMembers } from './ip-set-members.js';
import { type PolicyInfo, policyInfo } from './policy-info.js';
import { type ScannedRules, scanRules } from './rule-scanner.js';
import { type Labels, SelectorIndex } from './selector-index.js';
import type { PolicyKind, PolicyState, ProfileState } from './types.js';

/** The read-only profile every datastore serves (upstream `libcalico-go/lib/resources/static.go`). */
export const DEFAULT_ALLOW_PROFILE = 'projectcalico-default-allow';

/** Who lists a profile among this node's endpoints (the EndpointIndex answers). */
export interface ProfileUsers {
  hasLocalUsers(profile: string): boolean;
  localUsers(profile: string): Iterable<string>;
}

export class ActiveRules {
  private readonly policies = new Map<string, PolicyInfo>();
  private readonly policiesByTier = new Map<string, Set<string>>();
  private readonly profiles = new Map<string, Profile>();
  private readonly policyIndex: SelectorIndex;
  private readonly endpointPolicies = new Map<string, Set<string>>();
  private readonly policyEndpoints = new Map<string, Set<string>>();
  /** Active rules by owner (`pol:<id>` / `prof:<name>`). */
  private readonly activeRules = new Map<string, ScannedRules>();

  constructor(
    private readonly emitter: Emitter,
    private readonly ipSets: IPSetMembers,
    private readonly users: ProfileUsers,
  ) {
    this.policyIndex = new SelectorIndex({
      onMatchStarted: (pol, ep) => this.onPolicyMatch(pol, ep, true),
      onMatchStopped: (pol, ep) => this.onPolicyMatch(pol, ep, false),
    });
  }

  /** Calls to `Selector.matches` made so far. */
  get evaluations(): number {
    return this.policyIndex.evaluations;
  }

  onPolicy(u: KindUpdate): void {
    const r = u.resource;
    const kind: PolicyKind = r.kind === 'NetworkPolicy' ? 'np' : 'gnp';
    const id = policyId(kind, r.metadata.name, kind === 'np' ? r.metadata.namespace : undefined);
    if (u.kind === 'delete') this.removePolicy(id);
    else this.upsertPolicy(policyInfo(r as Parameters<typeof policyInfo>[0], id));
  }

  /** A profile's rules and existence; its labels are the EndpointIndex's. */
  onProfile(u: KindUpdate): void {
    const name = u.resource.metadata.name;
    const profile = u.kind === 'set' ? (u.resource as Profile) : undefined;
    const old = this.profiles.get(name);
    const existedBefore = this.profileExists(name);
    if (profile) this.profiles.set(name, profile);
    else this.profiles.delete(name);
    const rulesChanged =
      JSON.stringify([old?.spec.ingress, old?.spec.egress]) !==
      JSON.stringify([profile?.spec.ingress, profile?.spec.egress]);
    this.refreshProfile(name, rulesChanged);
    if (existedBefore !== this.profileExists(name)) {
      for (const ep of this.users.localUsers(name)) this.emitter.endpoints.mark(ep);
    }
  }

  /** A tier's order or default action changed: its policies' endpoints are sorted again. */
  onTier(u: KindUpdate): void {
    for (const pol of this.policiesByTier.get(u.resource.metadata.name) ?? []) {
      for (const ep of this.policyEndpoints.get(pol) ?? []) this.emitter.endpoints.mark(ep);
    }
  }

  /** A local endpoint's effective labels (new or changed). */
  updateEndpoint(key: string, labels: Labels): void {
    this.policyIndex.updateItem(key, labels);
  }

  /** A local endpoint gone (or no longer local). */
  deleteEndpoint(key: string): void {
    this.policyIndex.deleteItem(key);
  }

  /** The policies that select a local endpoint, unordered. */
  policiesOf(key: string): PolicyInfo[] {
    return [...(this.endpointPolicies.get(key) ?? [])]
      .map((id) => this.policies.get(id))
      .filter((p): p is PolicyInfo => p !== undefined);
  }

  private setOwnerRules(owner: string, scanned: ScannedRules | undefined): void {
    if (scanned) this.activeRules.set(owner, scanned);
    else this.activeRules.delete(owner);
    this.ipSets.setOwnerSets(owner, scanned?.ipSets);
  }

  private onPolicyMatch(pol: string, ep: string, started: boolean): void {
    this.emitter.endpoints.mark(ep);
    if (started) {
      addTo(this.endpointPolicies, ep, pol);
      if (addTo(this.policyEndpoints, pol, ep) && this.policyEndpoints.get(pol)!.size === 1) {
        this.activatePolicy(pol);
      }
    } else {
      removeFrom(this.endpointPolicies, ep, pol);
      if (removeFrom(this.policyEndpoints, pol, ep) && !this.policyEndpoints.has(pol)) {
        this.setOwnerRules(`pol:${pol}`, undefined);
        this.emitter.policies.mark(pol);
      }
    }
  }

  private activatePolicy(id: string): void {
    const p = this.policies.get(id);
    if (!p) return;
    this.setOwnerRules(`pol:${id}`, scanRules(p.ingressRules, p.egressRules, p.namespace));
    this.emitter.policies.mark(id);
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
      for (const ep of this.policyEndpoints.get(info.id) ?? []) this.emitter.endpoints.mark(ep);
    }
    const wasActive = this.policyEndpoints.has(info.id);
    this.policyIndex.updateSelector(info.id, info.selector);
    // A policy that stayed active with new rules is rescanned; one that just became active was
    // scanned by the match callback.
    if (wasActive && this.policyEndpoints.has(info.id) && old && old.rulesKey !== info.rulesKey) {
      this.activatePolicy(info.id);
    }
    if (old && (old.tier !== info.tier || old.rulesKey !== info.rulesKey))
      this.emitter.policies.mark(info.id);
  }

  private removePolicy(id: string): void {
    const old = this.policies.get(id);
    if (!old) return;
    this.policyIndex.deleteSelector(id);
    this.policies.delete(id);
    removeFrom(this.policiesByTier, old.tier, id);
    this.emitter.policies.mark(id);
  }

  /** Whether the profile exists (the built-in default-allow one always does). */
  profileExists(name: string): boolean {
    return this.profiles.has(name) || name === DEFAULT_ALLOW_PROFILE;
  }

  private profileRules(name: string): ScannedRules {
    const p = this.profiles.get(name);
    if (p) return scanRules(p.spec.ingress, p.spec.egress, undefined);
    // projectcalico-default-allow
    return scanRules([{ action: 'Allow' }], [{ action: 'Allow' }], undefined);
  }

  /** Activates or deactivates a profile's rules; `rulesChanged` rescans an active one. */
  refreshProfile(name: string, rulesChanged = false): void {
    const owner = `prof:${name}`;
    const shouldBeActive = this.users.hasLocalUsers(name) && this.profileExists(name);
    const isActive = this.activeRules.has(owner);
    if (shouldBeActive && (!isActive || rulesChanged)) {
      this.setOwnerRules(owner, this.profileRules(name));
      this.emitter.profiles.mark(name);
    } else if (!shouldBeActive && isActive) {
      this.setOwnerRules(owner, undefined);
      this.emitter.profiles.mark(name);
    }
  }

  policyState(id: string): PolicyState | undefined {
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

  profileState(name: string): ProfileState | undefined {
    const rules = this.activeRules.get(`prof:${name}`);
    if (!rules) return undefined;
    return { id: name, inbound: rules.inbound, outbound: rules.outbound };
  }
}
