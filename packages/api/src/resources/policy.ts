/**
 * NetworkPolicy, GlobalNetworkPolicy, Tier and Profile (upstream `networkpolicy.go`,
 * `globalnetworkpolicy.go`, `tier.go`, `profile.go`, `api/pkg/defaults/networkpolicy.go`).
 */
import * as z from 'zod';
import type { ResourceObject } from '../meta.js';
import { asArr, asObj, type CheckContext, DNS_LABEL_RE, labelMap, oneOf, selector } from './common.js';
import { goPtr, goVal } from './go-encoding.js';
import { lazySchema } from './lazy-schema.js';
import { POLICY_TYPES, type PolicyType, ruleSchema } from './rule.js';
import { checkRules } from './rule-checks.js';

export const TIER_LABEL = 'projectcalico.org/tier';
export const DEFAULT_TIER = 'default';

const LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const SUBDOMAIN = `${LABEL}(\\.${LABEL})*`;
const NP_NAME_RE = new RegExp(`^((${LABEL})(\\.${LABEL})?|((knp|ossg)\\.default\\.(${SUBDOMAIN})))$`);
const GNP_NAME_RE = new RegExp(`^(${LABEL}\\.)?${LABEL}$`);

export function networkPolicyNameProblem(name: string): string | undefined {
  if (name.length > 253) return 'must be at most 253 characters';
  if (!NP_NAME_RE.test(name)) {
    return "must be a lower-case DNS-1123 label (letters, digits and '-'), optionally with one '.' (e.g. web or tier1.web)";
  }
  return undefined;
}

export function globalNetworkPolicyNameProblem(name: string): string | undefined {
  if (name.length > 253) return 'must be at most 253 characters';
  if (!GNP_NAME_RE.test(name)) {
    return "must be a lower-case DNS-1123 label (letters, digits and '-'), optionally with one '.' (e.g. allow-dns or security.allow-dns)";
  }
  return undefined;
}

export function tierNameProblem(name: string): string | undefined {
  if (name.length > 63) return `must be at most 63 characters (is ${name.length})`;
  if (!DNS_LABEL_RE.test(name)) {
    return "must be a lower-case DNS-1123 label: letters, digits and '-', starting and ending with a letter or digit, no '.'";
  }
  return undefined;
}

const policyTypes = () => z.array(oneOf(POLICY_TYPES));
const performanceHints = () => z.array(oneOf(['AssumeNeededOnEveryNode']));
const tierName = () =>
  z.string().refine((s) => DNS_LABEL_RE.test(s) && s.length <= 63, {
    error: "must name a tier: a lower-case DNS-1123 label (letters, digits and '-')",
  });

/** Fields in upstream's Go order (`NetworkPolicySpec`). */
export const networkPolicySpecSchema = lazySchema(() =>
  z.strictObject({
    tier: tierName().optional(),
    order: z.number().optional(),
    ingress: z.array(ruleSchema).optional(),
    egress: z.array(ruleSchema).optional(),
    selector: selector().optional(),
    types: policyTypes().optional(),
    serviceAccountSelector: selector().optional(),
    performanceHints: performanceHints().optional(),
  }),
);
export type NetworkPolicySpec = z.infer<typeof networkPolicySpecSchema>;
export type NetworkPolicy = ResourceObject<'NetworkPolicy', NetworkPolicySpec>;

/** Fields in upstream's Go order (`GlobalNetworkPolicySpec`); its booleans are Go values (false is left out). */
export const globalNetworkPolicySpecSchema = lazySchema(() =>
  z.strictObject({
    tier: tierName().optional(),
    order: z.number().optional(),
    ingress: z.array(ruleSchema).optional(),
    egress: z.array(ruleSchema).optional(),
    selector: selector().optional(),
    types: policyTypes().optional(),
    doNotTrack: goVal(z.boolean()),
    preDNAT: goVal(z.boolean()),
    applyOnForward: goVal(z.boolean()),
    serviceAccountSelector: selector().optional(),
    namespaceSelector: selector().optional(),
    performanceHints: performanceHints().optional(),
  }),
);
export type GlobalNetworkPolicySpec = z.infer<typeof globalNetworkPolicySpecSchema>;
export type GlobalNetworkPolicy = ResourceObject<'GlobalNetworkPolicy', GlobalNetworkPolicySpec>;

function checkTypes(s: Record<string, unknown>, ctx: CheckContext): void {
  const seen = new Set<unknown>();
  asArr(s.types)?.forEach((t, i) => {
    if (seen.has(t)) ctx.add(`spec.types[${i}]`, `lists ${String(t)} more than once`);
    seen.add(t);
  });
}

export function checkNetworkPolicy(spec: unknown, ctx: CheckContext): void {
  const s = asObj(spec);
  if (!s) return;
  checkTypes(s, ctx);
  checkRules(s, ctx.add);
}

export function checkGlobalNetworkPolicy(spec: unknown, ctx: CheckContext): void {
  const s = asObj(spec);
  if (!s) return;
  const { add } = ctx;
  checkTypes(s, ctx);
  if (s.doNotTrack === true && s.preDNAT === true)
    add('spec.preDNAT', 'cannot be true together with doNotTrack');
  if (s.preDNAT === true) {
    if ((asArr(s.egress)?.length ?? 0) > 0) add('spec.egress', 'must be empty in a preDNAT policy');
    asArr(s.types)?.forEach((t, i) => {
      if (t === 'Egress') add(`spec.types[${i}]`, 'cannot be Egress in a preDNAT policy');
    });
  }
  if ((s.doNotTrack === true || s.preDNAT === true) && s.applyOnForward !== true) {
    add('spec.applyOnForward', 'must be true when doNotTrack or preDNAT is true');
  }
  checkRules(s, add, { serviceNeedsNamespace: true });
}

/** Upstream's `types` defaulting: no egress rules ⇒ Ingress; only egress ⇒ Egress; both ⇒ both. */
export function defaultPolicyTypes(
  ingress: unknown[] | undefined,
  egress: unknown[] | undefined,
): PolicyType[] {
  if (!egress || egress.length === 0) return ['Ingress'];
  if (!ingress || ingress.length === 0) return ['Egress'];
  return ['Ingress', 'Egress'];
}

/**
 * What a reader sees of a stored policy (`api/pkg/defaults/networkpolicy.go`): `types` from the
 * rules when empty, and the `projectcalico.org/tier` label naming the tier (`default` when unset).
 * An unset tier stays unset on read, as upstream leaves it: objects stored before tiers were
 * written read back as they were stored. Consumers take an unset tier as `default`.
 */
export function defaultPolicy<P extends NetworkPolicy | GlobalNetworkPolicy>(p: P): P {
  const tier = p.spec.tier || DEFAULT_TIER;
  const hasTypes = p.spec.types !== undefined && p.spec.types.length > 0;
  if (hasTypes && p.metadata.labels?.[TIER_LABEL] === tier) return p;
  const spec = hasTypes ? p.spec : { ...p.spec, types: defaultPolicyTypes(p.spec.ingress, p.spec.egress) };
  const labels = { ...(p.metadata.labels ?? {}), [TIER_LABEL]: tier };
  return { ...p, metadata: { ...p.metadata, labels }, spec };
}

/**
 * What clientv3 stores for a policy: what a reader sees (`defaultPolicy`), and `spec.tier:
 * default` written into a policy given without a tier, as upstream v3.32 stores it (its
 * `calicoctl get` then shows the tier, and the CRD object carries it).
 */
export function defaultPolicyOnWrite<P extends NetworkPolicy | GlobalNetworkPolicy>(p: P): P {
  return defaultPolicy(withStoredTier(p));
}

/** The policy with `spec.tier` set to `default` when it names no tier. */
export function withStoredTier<P extends { spec: { tier?: string } }>(p: P): P {
  return p.spec.tier ? p : { ...p, spec: { ...p.spec, tier: DEFAULT_TIER } };
}

// ---- Tier ------------------------------------------------------------------------------------

export const tierSpecSchema = lazySchema(() =>
  z.strictObject({
    order: z.number().optional(),
    defaultAction: goPtr(oneOf(['Deny', 'Pass'])),
  }),
);
export type TierSpec = z.infer<typeof tierSpecSchema>;
export type Tier = ResourceObject<'Tier', TierSpec>;

/** The tiers every cluster has, with the order and default action upstream requires of them. */
export const WELL_KNOWN_TIERS: Readonly<Record<string, { order: number; defaultAction: 'Deny' | 'Pass' }>> = {
  default: { order: 1_000_000, defaultAction: 'Deny' },
  'kube-admin': { order: 1_000, defaultAction: 'Pass' },
  'kube-baseline': { order: 10_000_000, defaultAction: 'Pass' },
};

export function checkTier(spec: unknown, ctx: CheckContext): void {
  const s = asObj(spec);
  const fixed = ctx.name === undefined ? undefined : WELL_KNOWN_TIERS[ctx.name];
  if (!s || !fixed) return;
  if (s.order !== undefined && s.order !== fixed.order) {
    ctx.add('spec.order', `must be ${fixed.order} for the ${ctx.name} tier`);
  }
  if (s.defaultAction !== undefined && s.defaultAction !== fixed.defaultAction) {
    ctx.add('spec.defaultAction', `must be ${fixed.defaultAction} for the ${ctx.name} tier`);
  }
}

/** Upstream's order for a tier that gives none (`libcalico-go/lib/resources/tier.go`). */
export const DEFAULT_TIER_ORDER = 1_000_000;

/**
 * clientv3's tier defaulting, on write and on read: an unset order is 1,000,000 and an unset
 * default action is `Deny`. The well-known tiers get their fixed order and action (upstream
 * defaults them like any tier and then refuses the result; we fill in the only valid values).
 */
export function defaultTier(t: Tier): Tier {
  const fixed = WELL_KNOWN_TIERS[t.metadata.name];
  if (t.spec.order !== undefined && t.spec.defaultAction !== undefined) return t;
  const spec = { ...t.spec };
  spec.order ??= fixed?.order ?? DEFAULT_TIER_ORDER;
  spec.defaultAction ??= fixed?.defaultAction ?? 'Deny';
  return { ...t, spec };
}

// ---- Profile ---------------------------------------------------------------------------------

export const profileSpecSchema = lazySchema(() =>
  z.strictObject({
    ingress: z.array(ruleSchema).optional(),
    egress: z.array(ruleSchema).optional(),
    labelsToApply: labelMap().optional(),
  }),
);
export type ProfileSpec = z.infer<typeof profileSpecSchema>;
export type Profile = ResourceObject<'Profile', ProfileSpec>;

export function checkProfile(spec: unknown, ctx: CheckContext): void {
  checkRules(spec, ctx.add);
}
