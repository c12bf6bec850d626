/**
 * Policy rules shared by NetworkPolicy, GlobalNetworkPolicy and Profile: the Rule and EntityRule
 * schemas (upstream `policy_common.go`), field by field, and what a protocol is (name or number,
 * which ones have ports). The cross-field rules upstream's validator applies to a rule are in
 * `rule-checks.ts`.
 */
import * as z from 'zod';
import {
  intBetween,
  maskedCidrOrIP,
  oneOf,
  qualifiedNameProblem,
  selector,
  subdomainName,
} from './common.js';
import { goField } from './go-encoding.js';
import { lazySchema } from './lazy-schema.js';

export const PROTOCOL_NAMES = ['TCP', 'UDP', 'ICMP', 'ICMPv6', 'SCTP', 'UDPLite'] as const;
const PROTOCOL_RULE = `must be one of ${PROTOCOL_NAMES.join(', ')} or a protocol number between 1 and 255`;

/** A protocol name or number (upstream `numorstring.Protocol`; digits are stored as a number). */
export const protocolSchema = lazySchema(() =>
  goField(
    z.union([z.number(), z.string()], { error: PROTOCOL_RULE }).superRefine((p, ctx) => {
      if (typeof p === 'number') {
        if (!Number.isInteger(p) || p < 1 || p > 255)
          ctx.addIssue({ code: 'custom', message: PROTOCOL_RULE });
      } else if (/^[0-9]+$/.test(p)) {
        const n = Number(p);
        if (n < 1 || n > 255) ctx.addIssue({ code: 'custom', message: PROTOCOL_RULE });
      } else if (!(PROTOCOL_NAMES as readonly string[]).includes(p)) {
        ctx.addIssue({ code: 'custom', message: PROTOCOL_RULE });
      }
    }),
    { value: 'uint8OrString' },
  ),
);
export type Protocol = z.infer<typeof protocolSchema>;

const PORT_RULE = 'must be a port number between 1 and 65535, a range "min:max", or a port name';
const PORT_NAME_RE = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

function portProblem(p: number | string): string | undefined {
  const inRange = (n: number) => Number.isInteger(n) && n >= 1 && n <= 65535;
  if (typeof p === 'number') return inRange(p) ? undefined : PORT_RULE;
  if (/^[0-9]+$/.test(p)) return inRange(Number(p)) ? undefined : PORT_RULE;
  const range = /^([0-9]+):([0-9]+)$/.exec(p);
  if (range) {
    const lo = Number(range[1]);
    const hi = Number(range[2]);
    if (!inRange(lo) || !inRange(hi)) return PORT_RULE;
    if (lo > hi) return `is not a valid port range: ${lo} is greater than ${hi}`;
    return undefined;
  }
  return PORT_NAME_RE.test(p) && p.length <= 63 ? undefined : PORT_RULE;
}

/**
 * A port: a number, a `"min:max"` range, or a named port (upstream `numorstring.Port`, which
 * stores a single port as a number).
 */
export const portSchema = lazySchema(() =>
  goField(
    z.union([z.number(), z.string()], { error: PORT_RULE }).superRefine((p, ctx) => {
      const problem = portProblem(p);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
    { value: 'port' },
  ),
);
export type Port = z.infer<typeof portSchema>;

/** True if the port is a name rather than a number or range. */
export function isNamedPort(p: Port): boolean {
  return typeof p === 'string' && !/^[0-9]+(:[0-9]+)?$/.test(p);
}

export const icmpFieldsSchema = lazySchema(() =>
  z.strictObject({
    type: intBetween(0, 254).optional(),
    code: intBetween(0, 255).optional(),
  }),
);
export type ICMPFields = z.infer<typeof icmpFieldsSchema>;

export const httpPathSchema = lazySchema(() =>
  z.strictObject({
    exact: z.string().optional(),
    prefix: z.string().optional(),
  }),
);
export type HTTPPath = z.infer<typeof httpPathSchema>;

export const httpMatchSchema = lazySchema(() =>
  z.strictObject({
    methods: z.array(z.string()).optional(),
    paths: z.array(httpPathSchema).optional(),
  }),
);
export type HTTPMatch = z.infer<typeof httpMatchSchema>;

export const serviceMatchSchema = lazySchema(() =>
  z.strictObject({
    name: subdomainName().optional(),
    namespace: subdomainName().optional(),
  }),
);
export type ServiceMatch = z.infer<typeof serviceMatchSchema>;

export const serviceAccountMatchSchema = lazySchema(() =>
  z.strictObject({
    names: z.array(z.string()).optional(),
    selector: selector().optional(),
  }),
);
export type ServiceAccountMatch = z.infer<typeof serviceAccountMatchSchema>;

/** Fields in upstream's Go order (`EntityRule`). */
export const entityRuleSchema = lazySchema(() =>
  z.strictObject({
    nets: z.array(maskedCidrOrIP()).optional(),
    selector: selector().optional(),
    namespaceSelector: selector({ allowGlobal: true }).optional(),
    services: serviceMatchSchema.optional(),
    ports: z.array(portSchema).optional(),
    notNets: z.array(maskedCidrOrIP()).optional(),
    notSelector: selector().optional(),
    notPorts: z.array(portSchema).optional(),
    serviceAccounts: serviceAccountMatchSchema.optional(),
  }),
);
export type EntityRule = z.infer<typeof entityRuleSchema>;

export const annotationMap = () =>
  z.record(z.string(), z.string()).superRefine((m, ctx) => {
    let size = 0;
    for (const [k, v] of Object.entries(m)) {
      const p = qualifiedNameProblem(k.toLowerCase());
      if (p) ctx.addIssue({ code: 'custom', path: [k], message: `annotation key ${p}` });
      size += k.length + v.length;
    }
    if (size > 256 * 1024) {
      ctx.addIssue({
        code: 'custom',
        message: `must total at most 256 KiB (keys and values), not ${size} bytes`,
      });
    }
  });

export const ruleMetadataSchema = lazySchema(() =>
  z.strictObject({
    annotations: annotationMap().optional(),
  }),
);
export type RuleMetadata = z.infer<typeof ruleMetadataSchema>;

export const ACTIONS = ['Allow', 'Deny', 'Log', 'Pass'] as const;
export type Action = (typeof ACTIONS)[number];

/**
 * Fields in upstream's Go order (`Rule`). `source` and `destination` are Go structs tagged
 * `omitzero` (since v3.32): an empty one is left out of the stored value.
 */
export const ruleSchema = lazySchema(() =>
  z.strictObject({
    action: oneOf(ACTIONS),
    ipVersion: z.union([z.literal(4), z.literal(6)], { error: 'must be 4 or 6' }).optional(),
    protocol: protocolSchema.optional(),
    icmp: icmpFieldsSchema.optional(),
    notProtocol: protocolSchema.optional(),
    notICMP: icmpFieldsSchema.optional(),
    source: goField(entityRuleSchema.optional(), { omit: 'zero' }),
    destination: goField(entityRuleSchema.optional(), { omit: 'zero' }),
    http: httpMatchSchema.optional(),
    metadata: ruleMetadataSchema.optional(),
  }),
);
export type Rule = z.infer<typeof ruleSchema>;

export const POLICY_TYPES = ['Ingress', 'Egress'] as const;
export type PolicyType = (typeof POLICY_TYPES)[number];

// ---- protocols --------------------------------------------------------------------------------

/** True if `p` is one of the named protocols, by v3 name or by number (as a number or its digits). */
export function protocolIs(p: unknown, ...names: string[]): boolean {
  if (p === undefined) return false;
  const numbers: Record<string, number> = { TCP: 6, UDP: 17, ICMP: 1, ICMPv6: 58, SCTP: 132, UDPLite: 136 };
  return names.some((n) => p === n || p === numbers[n] || p === String(numbers[n]));
}

/** Upstream `Protocol.SupportsPorts`: TCP, UDP and SCTP (by v3 or lower-case v1 name, or number). */
export function protocolSupportsPorts(p: unknown): boolean {
  return protocolIs(p, 'TCP', 'UDP', 'SCTP') || p === 'tcp' || p === 'udp' || p === 'sctp';
}
