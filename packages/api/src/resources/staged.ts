/**
 * Staged policies (`StagedNetworkPolicy`, `StagedGlobalNetworkPolicy`,
 * `StagedKubernetesNetworkPolicy`): stored and served as upstream stores them. A staged policy is what a policy would be if committed (`stagedAction: Set`), or that it
 * would be removed (`Delete`); it never changes traffic in this dataplane (upstream's open-source
 * dataplane does not enforce or preview them either).
 */
import * as z from 'zod';
import type { ResourceObject } from '../meta.js';
import { asObj, type CheckContext, oneOf } from './common.js';
import { goAlways } from './go-encoding.js';
import { lazySchema } from './lazy-schema.js';
import {
  checkGlobalNetworkPolicy,
  checkNetworkPolicy,
  DEFAULT_TIER,
  defaultPolicyTypes,
  globalNetworkPolicySpecSchema,
  networkPolicySpecSchema,
  TIER_LABEL,
  withStoredTier,
} from './policy.js';

export const STAGED_ACTIONS = ['Set', 'Delete', 'Learn', 'Ignore'] as const;
export type StagedAction = (typeof STAGED_ACTIONS)[number];

/** Fields in upstream's Go order: `stagedAction`, then the policy's own. */
export const stagedNetworkPolicySpecSchema = lazySchema(() =>
  z.strictObject({ stagedAction: oneOf(STAGED_ACTIONS).optional(), ...networkPolicySpecSchema.shape }),
);
export type StagedNetworkPolicySpec = z.infer<typeof stagedNetworkPolicySpecSchema>;
export type StagedNetworkPolicy = ResourceObject<'StagedNetworkPolicy', StagedNetworkPolicySpec>;

export const stagedGlobalNetworkPolicySpecSchema = lazySchema(() =>
  z.strictObject({ stagedAction: oneOf(STAGED_ACTIONS).optional(), ...globalNetworkPolicySpecSchema.shape }),
);
export type StagedGlobalNetworkPolicySpec = z.infer<typeof stagedGlobalNetworkPolicySpecSchema>;
export type StagedGlobalNetworkPolicy = ResourceObject<
  'StagedGlobalNetworkPolicy',
  StagedGlobalNetworkPolicySpec
>;

const k8sLabelSelector = () =>
  z.strictObject({
    matchLabels: z.record(z.string(), z.string()).optional(),
    matchExpressions: z
      .array(
        z.strictObject({
          key: goAlways(z.string()),
          operator: goAlways(oneOf(['In', 'NotIn', 'Exists', 'DoesNotExist'])),
          values: z.array(z.string()).optional(),
        }),
      )
      .optional(),
  });

const k8sPeer = () =>
  z.strictObject({
    podSelector: k8sLabelSelector().optional(),
    namespaceSelector: k8sLabelSelector().optional(),
    ipBlock: z
      .strictObject({ cidr: goAlways(z.string()), except: z.array(z.string()).optional() })
      .optional(),
  });

const k8sPort = () =>
  z.strictObject({
    protocol: oneOf(['TCP', 'UDP', 'SCTP']).optional(),
    port: z.union([z.number().int(), z.string()]).optional(),
    endPort: z.number().int().optional(),
  });

/** `stagedAction` and a `networking.k8s.io/v1` NetworkPolicySpec. */
export const stagedKubernetesNetworkPolicySpecSchema = lazySchema(() =>
  z.strictObject({
    stagedAction: oneOf(STAGED_ACTIONS).optional(),
    // A Go struct value: `omitempty` does not drop it, so it is stored as {} when unset.
    podSelector: goAlways(k8sLabelSelector().optional()),
    ingress: z
      .array(z.strictObject({ ports: z.array(k8sPort()).optional(), from: z.array(k8sPeer()).optional() }))
      .optional(),
    egress: z
      .array(z.strictObject({ ports: z.array(k8sPort()).optional(), to: z.array(k8sPeer()).optional() }))
      .optional(),
    policyTypes: z.array(oneOf(['Ingress', 'Egress'])).optional(),
  }),
);
export type StagedKubernetesNetworkPolicySpec = z.infer<typeof stagedKubernetesNetworkPolicySpecSchema>;
export type StagedKubernetesNetworkPolicy = ResourceObject<
  'StagedKubernetesNetworkPolicy',
  StagedKubernetesNetworkPolicySpec
>;

/**
 * `stagedAction: Delete` stages a removal: nothing but the tier (which names the policy) may be
 * set beside it, as upstream's validator requires.
 */
function checkDeleteIsEmpty(s: Record<string, unknown>, ctx: CheckContext, keep: readonly string[]): boolean {
  if (s.stagedAction !== 'Delete') return false;
  for (const [k, v] of Object.entries(s)) {
    if (k === 'stagedAction' || keep.includes(k) || v === undefined) continue;
    if (Array.isArray(v) && v.length === 0) continue;
    if (v === false || v === '') continue;
    ctx.add(
      `spec.${k}`,
      `must not be set when stagedAction is Delete (only ${['stagedAction', ...keep].join(' and ')} may be)`,
    );
  }
  return true;
}

export function checkStagedNetworkPolicy(spec: unknown, ctx: CheckContext): void {
  const s = asObj(spec);
  if (!s) return;
  if (!checkDeleteIsEmpty(s, ctx, ['tier'])) checkNetworkPolicy(spec, ctx);
}

export function checkStagedGlobalNetworkPolicy(spec: unknown, ctx: CheckContext): void {
  const s = asObj(spec);
  if (!s) return;
  if (!checkDeleteIsEmpty(s, ctx, ['tier'])) checkGlobalNetworkPolicy(spec, ctx);
}

export function checkStagedKubernetesNetworkPolicy(spec: unknown, ctx: CheckContext): void {
  const s = asObj(spec);
  if (!s) return;
  checkDeleteIsEmpty(s, ctx, []);
}

/**
 * What a reader sees of a staged Calico policy: the tier label as for a policy; `types` from the
 * rules when empty, except that a staged Delete carries no types at all.
 */
export function defaultStagedPolicy<P extends StagedNetworkPolicy | StagedGlobalNetworkPolicy>(p: P): P {
  const tier = p.spec.tier || DEFAULT_TIER;
  let spec = p.spec;
  if (spec.stagedAction === 'Delete') {
    if (spec.types !== undefined) {
      const { types: _types, ...rest } = spec;
      spec = rest as P['spec'];
    }
  } else if (spec.types === undefined || spec.types.length === 0) {
    spec = { ...spec, types: defaultPolicyTypes(spec.ingress, spec.egress) };
  }
  if (spec === p.spec && p.metadata.labels?.[TIER_LABEL] === tier) return p;
  return {
    ...p,
    metadata: { ...p.metadata, labels: { ...(p.metadata.labels ?? {}), [TIER_LABEL]: tier } },
    spec,
  };
}

/** What clientv3 stores for a staged Calico policy: as read, with `spec.tier: default` when unset. */
export function defaultStagedPolicyOnWrite<P extends StagedNetworkPolicy | StagedGlobalNetworkPolicy>(
  p: P,
): P {
  return defaultStagedPolicy(withStoredTier(p));
}
