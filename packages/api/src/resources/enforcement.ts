/**
 * What the calico-ts dataplane does with every field of the types that decide what traffic may
 * pass: policies, rules, entity rules, profiles, host and workload endpoints. One table, read by
 * Felix (which renders the fields) and by calicoctl (which warns about the ones it does not).
 *
 * A policy engine must fail closed: a criterion it cannot enforce may never grant access. So a
 * field is one of
 *   - `rendered`: Felix turns it into nftables matches, chain order or endpoint state;
 *   - `fail-closed`: not enforced here. An Allow, Pass or Log rule that uses it matches nothing;
 *     a Deny rule still applies its other criteria (denying more, never less). For an endpoint
 *     field, the feature is simply absent and cannot open anything (the reason says why);
 *   - `inert`: takes no part in matching traffic (annotations, bookkeeping).
 *
 * A key found in a rule that this table does not know (a field added to the schema later, or
 * written into the datastore by a newer tool) is treated as `fail-closed`. The field-table test in
 * Felix reads every field from the schemas, so a schema field without a decision here fails CI.
 */
import type { EntityRule, HTTPMatch, ICMPFields, Rule, ServiceAccountMatch, ServiceMatch } from './rule.js';

export type FieldHandling =
  | { readonly kind: 'rendered' }
  | { readonly kind: 'fail-closed'; readonly reason: string }
  | { readonly kind: 'inert'; readonly reason: string };

type Table<T> = { readonly [K in keyof Required<T>]-?: FieldHandling };

const RENDERED: FieldHandling = { kind: 'rendered' };
const NO_L7 = 'HTTP matches need an application-layer proxy, which this dataplane does not run';

export const RULE_FIELDS: Table<Rule> = {
  action: RENDERED,
  ipVersion: RENDERED,
  protocol: RENDERED,
  icmp: RENDERED,
  notProtocol: RENDERED,
  notICMP: RENDERED,
  source: RENDERED,
  destination: RENDERED,
  http: { kind: 'fail-closed', reason: NO_L7 },
  metadata: { kind: 'inert', reason: 'annotations for people and tools; not a match criterion' },
};

export const ENTITY_RULE_FIELDS: Table<EntityRule> = {
  nets: RENDERED,
  selector: RENDERED,
  namespaceSelector: RENDERED,
  services: RENDERED,
  ports: RENDERED,
  notNets: RENDERED,
  notSelector: RENDERED,
  notPorts: RENDERED,
  serviceAccounts: RENDERED,
};

export const ICMP_FIELDS: Table<ICMPFields> = { type: RENDERED, code: RENDERED };
export const SERVICE_MATCH_FIELDS: Table<ServiceMatch> = { name: RENDERED, namespace: RENDERED };
export const SERVICE_ACCOUNT_MATCH_FIELDS: Table<ServiceAccountMatch> = {
  names: RENDERED,
  selector: RENDERED,
};
export const HTTP_MATCH_FIELDS: Table<HTTPMatch> = {
  methods: { kind: 'fail-closed', reason: NO_L7 },
  paths: { kind: 'fail-closed', reason: NO_L7 },
};

const PERFORMANCE_HINTS: FieldHandling = {
  kind: 'inert',
  reason: 'a hint about where the policy is needed; it never changes what the policy matches',
};

/** NetworkPolicy spec. */
export const NETWORK_POLICY_SPEC_FIELDS = {
  tier: RENDERED,
  order: RENDERED,
  ingress: RENDERED,
  egress: RENDERED,
  selector: RENDERED,
  types: RENDERED,
  serviceAccountSelector: RENDERED,
  performanceHints: PERFORMANCE_HINTS,
} as const satisfies Record<string, FieldHandling>;

/** GlobalNetworkPolicy spec. */
export const GLOBAL_NETWORK_POLICY_SPEC_FIELDS = {
  ...NETWORK_POLICY_SPEC_FIELDS,
  doNotTrack: RENDERED,
  preDNAT: RENDERED,
  applyOnForward: RENDERED,
  namespaceSelector: RENDERED,
} as const satisfies Record<string, FieldHandling>;

export const PROFILE_SPEC_FIELDS = {
  ingress: RENDERED,
  egress: RENDERED,
  labelsToApply: RENDERED,
} as const satisfies Record<string, FieldHandling>;

export const HOST_ENDPOINT_SPEC_FIELDS = {
  node: RENDERED,
  interfaceName: RENDERED,
  expectedIPs: RENDERED,
  profiles: RENDERED,
  ports: RENDERED,
} as const satisfies Record<string, FieldHandling>;

const BOOKKEEPING: FieldHandling = {
  kind: 'inert',
  reason: 'identifies the workload; policy matches it through labels, not through this field',
};

export const WORKLOAD_ENDPOINT_SPEC_FIELDS = {
  orchestrator: RENDERED,
  workload: BOOKKEEPING,
  node: RENDERED,
  containerID: BOOKKEEPING,
  pod: BOOKKEEPING,
  endpoint: BOOKKEEPING,
  serviceAccountName: {
    kind: 'inert',
    reason: 'service-account policy matches the projectcalico.org/serviceaccount label and the ksa.* profile',
  },
  ipNetworks: RENDERED,
  ipNATs: {
    kind: 'fail-closed',
    reason: '1:1 NAT (floating IPs) is not programmed: traffic to the external IP is not delivered',
  },
  ipv4Gateway: { kind: 'inert', reason: 'the CNI plugin configures the gateway inside the pod' },
  ipv6Gateway: { kind: 'inert', reason: 'the CNI plugin configures the gateway inside the pod' },
  profiles: RENDERED,
  interfaceName: RENDERED,
  mac: { kind: 'inert', reason: 'the CNI plugin sets the MAC inside the pod' },
  ports: RENDERED,
  allowSpoofedSourcePrefixes: {
    kind: 'fail-closed',
    reason:
      'source-spoofing exceptions are not programmed: strict reverse-path filtering on the workload interface still drops them',
  },
  qosControls: {
    kind: 'fail-closed',
    reason: 'bandwidth, packet-rate and connection limits are not programmed',
  },
} as const satisfies Record<string, FieldHandling>;

/** One field of a rule that the dataplane does not enforce, with the reason. */
export interface UnenforcedField {
  /** Dotted path inside the rule: `http`, `source.foo`. */
  readonly path: string;
  readonly reason: string;
}

const UNKNOWN_REASON = 'is not a field this dataplane knows, so it cannot be enforced';

function isSet(v: unknown): boolean {
  if (v === undefined || v === null) return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v as object).length > 0;
  return true;
}

/** A table plus the tables of its object-valued fields, so a walk can descend. */
interface Shape {
  readonly fields: Readonly<Record<string, FieldHandling>>;
  readonly nested?: Readonly<Record<string, Shape>>;
}

const ENTITY_RULE_SHAPE: Shape = {
  fields: ENTITY_RULE_FIELDS,
  nested: {
    services: { fields: SERVICE_MATCH_FIELDS },
    serviceAccounts: { fields: SERVICE_ACCOUNT_MATCH_FIELDS },
  },
};

const RULE_SHAPE: Shape = {
  fields: RULE_FIELDS,
  nested: {
    icmp: { fields: ICMP_FIELDS },
    notICMP: { fields: ICMP_FIELDS },
    source: ENTITY_RULE_SHAPE,
    destination: ENTITY_RULE_SHAPE,
  },
};

function walk(obj: object, shape: Shape, prefix: string, out: UnenforcedField[]): void {
  for (const [key, value] of Object.entries(obj)) {
    if (!isSet(value)) continue;
    const path = prefix + key;
    const handling = Object.hasOwn(shape.fields, key) ? shape.fields[key] : undefined;
    if (!handling) out.push({ path, reason: UNKNOWN_REASON });
    else if (handling.kind === 'fail-closed') out.push({ path, reason: handling.reason });
    else if (handling.kind === 'rendered' && typeof value === 'object' && !Array.isArray(value)) {
      const sub = shape.nested && Object.hasOwn(shape.nested, key) ? shape.nested[key] : undefined;
      if (sub) walk(value as object, sub, `${path}.`, out);
    }
  }
}

/**
 * The fields of `rule` this dataplane does not enforce (fail-closed ones and unknown keys), in
 * the order they appear. Empty for a rule Felix renders in full.
 */
export function unenforcedRuleFields(rule: Rule): UnenforcedField[] {
  const out: UnenforcedField[] = [];
  walk(rule, RULE_SHAPE, '', out);
  return out;
}

/** One unenforced field of a policy or profile, with where it is. */
export interface UnenforcedRuleField extends UnenforcedField {
  /** `spec.ingress[0].http` */
  readonly fullPath: string;
  readonly action: Rule['action'];
}

/**
 * Every unenforced field in a policy's or profile's rules, for warnings: calicoctl prints them on
 * apply, Felix logs them once per policy.
 */
export function unenforcedPolicyFields(spec: {
  readonly ingress?: readonly Rule[];
  readonly egress?: readonly Rule[];
}): UnenforcedRuleField[] {
  const out: UnenforcedRuleField[] = [];
  for (const dir of ['ingress', 'egress'] as const) {
    (spec[dir] ?? []).forEach((rule, i) => {
      for (const f of unenforcedRuleFields(rule)) {
        out.push({ ...f, fullPath: `spec.${dir}[${i}].${f.path}`, action: rule.action });
      }
    });
  }
  return out;
}

/** What happens to a rule with an unenforced field, in words for a warning. */
export function unenforcedConsequence(action: Rule['action']): string {
  return action === 'Deny'
    ? 'the Deny rule applies its other criteria (it denies more, never less)'
    : `the ${action} rule matches nothing`;
}
