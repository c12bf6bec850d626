/**
 * Building blocks shared by every kind's schema: strict objects, string formats (names, CIDRs,
 * IPs, selectors, durations), enums and ranges, each failing with a message written for a person.
 *
 * Design: zod checks the shape of one field at a time (type, enum, range, format, unknown keys);
 * rules that relate several fields live in each kind's `check*` function, which reads the raw
 * input defensively, so a document with both kinds of error reports all of them. Schemas carry
 * no transforms, so `z.toJSONSchema` can turn them into CRD schemas.
 */
import * as z from 'zod';
import { parseCidrOrIP, parseIP } from '../net/cidr.js';
import {
  isDnsSubdomain,
  knownGood,
  labelValueProblem,
  qualifiedNameProblem,
  SUBDOMAIN_RULE,
} from '../net/labels.js';
import { validateSelector } from '../selector/index.js';
import { goAlways, goField, goPtr } from './go-encoding.js';

// ---- names -----------------------------------------------------------------------------------

export {
  DNS_LABEL_RE,
  DNS_SUBDOMAIN_RE,
  isDnsLabel,
  isDnsSubdomain,
  knownGood,
  LABEL_RULE,
  labelValueProblem,
  qualifiedNameProblem,
  SUBDOMAIN_RULE,
} from '../net/labels.js';

/** A DNS-1123 subdomain (resource names, node names, profile names...). */
export const subdomainName = () => z.string().refine(isDnsSubdomain, { error: SUBDOMAIN_RULE });

/** A `key: value` map of strings whose keys are Kubernetes qualified names and values label values. */
export const labelMap = () =>
  z.record(z.string(), z.string()).superRefine((m, ctx) => {
    for (const [k, v] of Object.entries(m)) {
      const kp = qualifiedNameProblem(k);
      if (kp) ctx.addIssue({ code: 'custom', path: [k], message: `label key ${kp}` });
      const vp = labelValueProblem(v);
      if (vp) ctx.addIssue({ code: 'custom', path: [k], message: `label value ${vp}` });
    }
  });

// ---- numbers ---------------------------------------------------------------------------------

/** An integer in [min, max], with one message for both bounds. */
export const intBetween = (min: number, max: number) => {
  const error = `must be a whole number between ${min} and ${max}`;
  return z.number().int({ error }).min(min, { error }).max(max, { error });
};
export const int = () => z.number().int({ error: 'must be a whole number' });
export const port = () => intBetween(1, 65535);
export const portOrZero = () => intBetween(0, 65535);
export const asNumber = () => intBetween(0, 4294967295);
export const uint32 = () => intBetween(0, 4294967295);

// ---- strings with formats --------------------------------------------------------------------

export const ipAddress = () =>
  z.string().refine((s) => parseIP(s) !== undefined, { error: 'must be a valid IP address' });
export const ipv4Address = () =>
  z.string().refine((s) => parseIP(s)?.family === 4, { error: 'must be a valid IPv4 address' });
export const ipv6Address = () =>
  z.string().refine((s) => parseIP(s)?.family === 6, { error: 'must be a valid IPv6 address' });

/** A CIDR, or a bare IP taken as /32 or /128; host bits may be set. */
export const cidrOrIP = () =>
  z.string().refine((s) => parseCidrOrIP(s) !== undefined, {
    error: 'must be a valid CIDR (such as 10.0.0.0/16) or IP address',
  });

/** A CIDR (or bare IP) with no host bits set. */
export const maskedCidrOrIP = () =>
  z.string().superRefine((s, ctx) => {
    const c = parseCidrOrIP(s);
    if (!c)
      ctx.addIssue({ code: 'custom', message: 'must be a valid CIDR (such as 10.0.0.0/16) or IP address' });
    else if (c.address !== c.network) {
      ctx.addIssue({
        code: 'custom',
        message: 'must not have host bits set (the address must be the network address)',
      });
    }
  });

const MAC_RE = /^([0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}$/;
export const macAddress = () =>
  z.string().refine((s) => MAC_RE.test(s), { error: 'must be a MAC address such as ee:ee:ee:ee:ee:ee' });

/**
 * A label selector expression. The selector parser reports why a selector is bad; `global()` is
 * refused here unless `allowGlobal`, since only an EntityRule's namespaceSelector may use it.
 */
const GOOD_SELECTORS = knownGood(1024);

export const selector = (opts: { allowGlobal?: boolean } = {}) =>
  z.string().superRefine((s, ctx) => {
    if (GOOD_SELECTORS.has(s) && !s.includes('global(')) return;
    const problem = validateSelector(s);
    if (problem === undefined && !s.includes('global(')) GOOD_SELECTORS.add(s);
    if (problem !== undefined) {
      ctx.addIssue({ code: 'custom', message: `is not a valid selector: ${problem}` });
      return;
    }
    if (!opts.allowGlobal && s.includes('global()')) {
      ctx.addIssue({
        code: 'custom',
        message: "may not use global(); it is only allowed in a rule's namespaceSelector",
      });
    }
  });

// Go's time.ParseDuration grammar (non-negative): "90s", "1m30s", "1.5h", "300ms", "0".
const DURATION_RE = /^(0|((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+)$/;
export const DURATION_RULE = 'must be a duration such as "90s", "5m" or "1h30m"';
export function isDuration(s: string): boolean {
  return DURATION_RE.test(s);
}
/** A `metav1.Duration`: stored the way Go prints it ("90s" is stored as "1m30s"). */
export const duration = () =>
  goField(z.string().refine(isDuration, { error: DURATION_RULE }), { value: 'duration' });

/** One of a fixed set of strings, matched exactly. */
export const oneOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, { error: `must be one of: ${values.join(', ')}` });

/** One of a fixed set of strings, in any letter case (upstream's `(?i)` CRD patterns). */
export const oneOfAnyCase = (values: readonly string[]) => {
  const lower = new Set(values.map((v) => v.toLowerCase()));
  return z.string().refine((s) => lower.has(s.toLowerCase()), {
    error: `must be one of: ${values.join(', ')} (any letter case)`,
  });
};

export const enabledDisabled = () => oneOf(['Enabled', 'Disabled']);

/** Go's `numorstring.Uint8OrString`-style fields: a number or a string. */
export const intOrString = () => z.union([int(), z.string()], { error: 'must be a number or a string' });

/** Upstream `BGPPassword` holding a k8s `SecretKeySelector`. */
export const secretKeyRef = () =>
  z.strictObject({
    secretKeyRef: goPtr(
      z.strictObject({
        name: z.string().optional(),
        key: goAlways(z.string()),
        optional: z.boolean().optional(),
      }),
    ),
  });

// ---- defensive readers for cross-field checks on raw input -------------------------------------

export type Raw = Record<string, unknown>;

export function asObj(x: unknown): Raw | undefined {
  return x !== null && typeof x === 'object' && !Array.isArray(x) ? (x as Raw) : undefined;
}
export function asStr(x: unknown): string | undefined {
  return typeof x === 'string' ? x : undefined;
}
export function asNum(x: unknown): number | undefined {
  return typeof x === 'number' && Number.isFinite(x) ? x : undefined;
}
export function asArr(x: unknown): unknown[] | undefined {
  return Array.isArray(x) ? x : undefined;
}
/** A non-empty string value, else undefined (Go's omitempty treats "" as unset). */
export function nonEmpty(x: unknown): string | undefined {
  return typeof x === 'string' && x !== '' ? x : undefined;
}

/** Collects cross-field errors; paths are relative to the resource root. */
export type AddError = (path: string, rule: string) => void;

/** Context handed to each kind's cross-field check. */
export interface CheckContext {
  readonly name: string | undefined;
  readonly namespace: string | undefined;
  readonly labels: Raw | undefined;
  readonly add: AddError;
}

/** The name rule of a kind there is one of per cluster: it must be called `default`. */
export function checkSingletonName(kind: string) {
  return (_spec: unknown, ctx: CheckContext): void => {
    if (ctx.name !== undefined && ctx.name !== 'default')
      ctx.add('metadata.name', `must be "default": there is one ${kind} per cluster`);
  };
}
