/**
 * Policy rules shared by NetworkPolicy, GlobalNetworkPolicy and Profile: the Rule and EntityRule
 * schemas (upstream `policy_common.go`) and the cross-field rules upstream's validator applies to
 * them (ports need a port protocol, ICMP fields need an ICMP protocol, one IP family per rule,
 * HTTP only on Allow ingress rules, service matches that stand alone...).
 */
import * as z from 'zod';
import { parseCidrOrIP } from '../net/cidr.js';
import {
  type AddError,
  asArr,
  asNum,
  asObj,
  asStr,
  intBetween,
  maskedCidrOrIP,
  nonEmpty,
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

// ---- cross-field rules -----------------------------------------------------------------------

function protocolIs(p: unknown, ...names: string[]): boolean {
  if (p === undefined) return false;
  const numbers: Record<string, number> = { TCP: 6, UDP: 17, ICMP: 1, ICMPv6: 58, SCTP: 132, UDPLite: 136 };
  return names.some((n) => p === n || p === numbers[n] || p === String(numbers[n]));
}

/** Upstream `Protocol.SupportsPorts`: TCP, UDP and SCTP (by v3 or lower-case v1 name, or number). */
export function protocolSupportsPorts(p: unknown): boolean {
  return protocolIs(p, 'TCP', 'UDP', 'SCTP') || p === 'tcp' || p === 'udp' || p === 'sctp';
}

export type RuleDirection = 'ingress' | 'egress';

export interface RuleCheckOptions {
  /** GlobalNetworkPolicy: a service match must name its namespace. */
  readonly serviceNeedsNamespace?: boolean;
}

const ENTITY_SIDES = ['source', 'destination'] as const;

/** Cross-field checks of one rule at `path` (e.g. `spec.ingress[0]`). */
export function checkRule(
  rawRule: unknown,
  path: string,
  direction: RuleDirection,
  add: AddError,
  opts: RuleCheckOptions = {},
): void {
  const rule = asObj(rawRule);
  if (!rule) return;
  const protocol = rule.protocol;
  const ipVersion = asNum(rule.ipVersion);
  const action = asStr(rule.action);

  // Ports exist only for TCP, UDP and SCTP.
  if (!protocolSupportsPorts(protocol)) {
    for (const side of ENTITY_SIDES) {
      const e = asObj(rule[side]);
      for (const f of ['ports', 'notPorts'] as const) {
        if ((asArr(e?.[f])?.length ?? 0) > 0) {
          add(
            `${path}.${side}.${f}`,
            "needs the rule's protocol to be TCP, UDP or SCTP (only they have ports)",
          );
        }
      }
    }
  }

  // ICMP match fields.
  if (rule.icmp !== undefined && !protocolIs(protocol, 'ICMP', 'ICMPv6')) {
    add(`${path}.icmp`, "needs the rule's protocol to be ICMP or ICMPv6");
  }
  for (const f of ['icmp', 'notICMP'] as const) {
    const icmp = asObj(rule[f]);
    if (icmp && icmp.code !== undefined && icmp.type === undefined) {
      add(`${path}.${f}.code`, `needs ${f}.type to be set too (a code alone cannot be matched)`);
    }
  }
  if (ipVersion !== undefined) {
    if ((protocolIs(protocol, 'ICMP') || protocolIs(rule.notProtocol, 'ICMP')) && ipVersion !== 4) {
      add(`${path}.ipVersion`, 'must be 4 when the protocol is ICMP');
    }
    if ((protocolIs(protocol, 'ICMPv6') || protocolIs(rule.notProtocol, 'ICMPv6')) && ipVersion !== 6) {
      add(`${path}.ipVersion`, 'must be 6 when the protocol is ICMPv6');
    }
  }

  // One IP family per rule, matching ipVersion; notNets may not cover everything.
  let seen4 = false;
  let seen6 = false;
  for (const side of ENTITY_SIDES) {
    const e = asObj(rule[side]);
    for (const f of ['nets', 'notNets'] as const) {
      const nets = asArr(e?.[f]);
      if (!nets) continue;
      let has4 = false;
      let has6 = false;
      nets.forEach((n, i) => {
        const c = typeof n === 'string' ? parseCidrOrIP(n) : undefined;
        if (!c) return;
        if (c.family === 4) has4 = true;
        else has6 = true;
        if (f === 'notNets' && c.prefix === 0) {
          add(
            `${path}.${side}.notNets[${i}]`,
            `must not be ${n}: excluding every address would make the rule match nothing`,
          );
        }
      });
      const fieldPath = `${path}.${side}.${f}`;
      if (ipVersion !== undefined && ((has4 && ipVersion !== 4) || (has6 && ipVersion !== 6))) {
        add(fieldPath, `contains CIDRs of another IP version than the rule's ipVersion ${ipVersion}`);
      }
      if ((has4 && has6) || (has4 && seen6) || (has6 && seen4)) {
        add(fieldPath, 'mixes IPv4 and IPv6: all CIDRs in one rule must be of the same IP version');
      }
      seen4 ||= has4;
      seen6 ||= has6;
    }
  }

  // HTTP match criteria: Allow ingress rules only, TCP.
  if (rule.http !== undefined) {
    if (action !== undefined && action !== 'Allow') add(`${path}.http`, 'is only allowed in Allow rules');
    if (direction === 'egress') add(`${path}.http`, 'is not allowed in egress rules');
    if (protocol !== undefined && !protocolIs(protocol, 'TCP')) {
      add(`${path}.protocol`, 'must be TCP (or unset) in a rule with http match criteria');
    }
    const http = asObj(rule.http);
    const methods = asArr(http?.methods);
    if (methods && new Set(methods).size !== methods.length) {
      add(`${path}.http.methods`, 'must not list a method twice');
    }
    asArr(http?.paths)?.forEach((p, i) => {
      const po = asObj(p);
      if (!po) return;
      const exact = nonEmpty(po.exact);
      const prefix = nonEmpty(po.prefix);
      const pp = `${path}.http.paths[${i}]`;
      if (exact !== undefined && prefix !== undefined) add(pp, 'must set either exact or prefix, not both');
      else if (exact === undefined && prefix === undefined) add(pp, 'must set exact or prefix');
      else {
        const v = (exact ?? prefix)!;
        if (!v.startsWith('/') || /[? #]/.test(v)) {
          add(
            `${pp}.${exact !== undefined ? 'exact' : 'prefix'}`,
            "must start with '/' and contain no '?', '#' or space",
          );
        }
      }
    });
  }

  // Entity rules.
  for (const side of ENTITY_SIDES) {
    const e = asObj(rule[side]);
    if (!e) continue;
    const ep = `${path}.${side}`;
    const ns = asStr(e.namespaceSelector);
    if (ns?.includes('global(') && ns.trim() !== 'global()') {
      add(`${ep}.namespaceSelector`, 'may not combine global() with other expressions');
    }
    const services = asObj(e.services);
    if (!services) continue;
    if (nonEmpty(services.name) === undefined) add(`${ep}.services.name`, 'is required');
    const conflicts: Array<[string, boolean]> = [
      ['namespaceSelector', nonEmpty(e.namespaceSelector) !== undefined],
      ['selector', nonEmpty(e.selector) !== undefined],
      ['notSelector', nonEmpty(e.notSelector) !== undefined],
      ['serviceAccounts', e.serviceAccounts !== undefined],
      ['nets', (asArr(e.nets)?.length ?? 0) > 0],
      ['notNets', (asArr(e.notNets)?.length ?? 0) > 0],
    ];
    for (const [field, set] of conflicts) {
      if (set) add(`${ep}.${field}`, `cannot be combined with ${side}.services`);
    }
    if (side === 'destination') {
      for (const f of ['ports', 'notPorts'] as const) {
        if ((asArr(e[f])?.length ?? 0) > 0) {
          add(
            `${ep}.${f}`,
            "cannot be combined with destination.services (the service's own ports are used)",
          );
        }
      }
    }
    if (direction === 'egress' && side === 'source') {
      add(`${ep}.services`, 'is not allowed in egress rules; match services in destination');
    }
    if (direction === 'ingress' && side === 'destination') {
      add(`${ep}.services`, 'is not allowed in ingress rules; match services in source');
    }
    const applies =
      (direction === 'egress' && side === 'destination') || (direction === 'ingress' && side === 'source');
    if (opts.serviceNeedsNamespace && applies && nonEmpty(services.namespace) === undefined) {
      add(
        `${ep}.services.namespace`,
        'is required in a GlobalNetworkPolicy (service names are per namespace)',
      );
    }
  }
}

/** Checks every rule in `spec.ingress` and `spec.egress`. */
export function checkRules(spec: unknown, add: AddError, opts: RuleCheckOptions = {}): void {
  const s = asObj(spec);
  if (!s) return;
  for (const direction of ['ingress', 'egress'] as const) {
    asArr(s[direction])?.forEach((r, i) => {
      checkRule(r, `spec.${direction}[${i}]`, direction, add, opts);
    });
  }
}
