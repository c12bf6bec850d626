/**
 * The cross-field rules upstream's validator applies to one policy rule (`validateRule` and
 * `validateEntityRule` in `libcalico-go/lib/validator/v3/validator.go`): ports need a port
 * protocol, ICMP fields need an ICMP protocol, one IP family per rule, HTTP only on Allow ingress
 * rules, service matches that stand alone... The schemas of the fields are in `rule.ts`.
 *
 * Design: `checkRule` runs one small check per concern, in a fixed order, each reading the raw
 * rule defensively and reporting through `add`. The order is the order of the errors a user sees:
 *
 *   checkRule ─► checkPortProtocol   ports / notPorts on both sides need TCP, UDP or SCTP
 *             ─► checkICMP           icmp needs an ICMP protocol; a code needs a type; ipVersion
 *             ─► checkNets           one IP family per rule, matching ipVersion; no notNets /0
 *             ─► checkHTTP           Allow ingress rules only, TCP; methods once; each path
 *             ─► checkEntityRule     source, then destination: namespaceSelector, services
 */
import { parseCidrOrIP } from '../net/cidr.js';
import { type AddError, asArr, asNum, asObj, asStr, nonEmpty } from './common.js';
import { protocolIs, protocolSupportsPorts } from './rule.js';

/** Which list of a policy a rule is in: `spec.ingress` or `spec.egress`. */
export type RuleDirection = 'ingress' | 'egress';

export interface RuleCheckOptions {
  /** GlobalNetworkPolicy: a service match must name its namespace. */
  readonly serviceNeedsNamespace?: boolean;
}

type Obj = Record<string, unknown>;
type EntitySide = (typeof ENTITY_SIDES)[number];

const ENTITY_SIDES = ['source', 'destination'] as const;
const PORT_FIELDS = ['ports', 'notPorts'] as const;

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
  checkPortProtocol(rule, path, add);
  checkICMP(rule, path, add);
  checkNets(rule, path, add);
  checkHTTP(rule, path, direction, add);
  for (const side of ENTITY_SIDES) {
    const entity = asObj(rule[side]);
    if (entity) checkEntityRule(entity, side, `${path}.${side}`, direction, add, opts);
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

function listed(v: unknown): boolean {
  return (asArr(v)?.length ?? 0) > 0;
}

/** Ports exist only for TCP, UDP and SCTP. */
function checkPortProtocol(rule: Obj, path: string, add: AddError): void {
  if (protocolSupportsPorts(rule.protocol)) return;
  for (const side of ENTITY_SIDES) {
    const e = asObj(rule[side]);
    for (const f of PORT_FIELDS) {
      if (listed(e?.[f])) {
        add(
          `${path}.${side}.${f}`,
          "needs the rule's protocol to be TCP, UDP or SCTP (only they have ports)",
        );
      }
    }
  }
}

/** ICMP match fields, and the IP version an ICMP protocol implies. */
function checkICMP(rule: Obj, path: string, add: AddError): void {
  const { protocol, notProtocol } = rule;
  if (rule.icmp !== undefined && !protocolIs(protocol, 'ICMP', 'ICMPv6')) {
    add(`${path}.icmp`, "needs the rule's protocol to be ICMP or ICMPv6");
  }
  for (const f of ['icmp', 'notICMP'] as const) {
    const icmp = asObj(rule[f]);
    if (icmp && icmp.code !== undefined && icmp.type === undefined) {
      add(`${path}.${f}.code`, `needs ${f}.type to be set too (a code alone cannot be matched)`);
    }
  }
  const ipVersion = asNum(rule.ipVersion);
  if (ipVersion === undefined) return;
  if ((protocolIs(protocol, 'ICMP') || protocolIs(notProtocol, 'ICMP')) && ipVersion !== 4) {
    add(`${path}.ipVersion`, 'must be 4 when the protocol is ICMP');
  }
  if ((protocolIs(protocol, 'ICMPv6') || protocolIs(notProtocol, 'ICMPv6')) && ipVersion !== 6) {
    add(`${path}.ipVersion`, 'must be 6 when the protocol is ICMPv6');
  }
}

/** One IP family per rule, matching ipVersion; notNets may not cover everything. */
function checkNets(rule: Obj, path: string, add: AddError): void {
  const ipVersion = asNum(rule.ipVersion);
  let seen4 = false;
  let seen6 = false;
  for (const side of ENTITY_SIDES) {
    const e = asObj(rule[side]);
    for (const f of ['nets', 'notNets'] as const) {
      const nets = asArr(e?.[f]);
      if (!nets) continue;
      const fieldPath = `${path}.${side}.${f}`;
      const { has4, has6 } = netFamilies(nets, f === 'notNets' ? fieldPath : undefined, add);
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
}

/**
 * The IP families in one `nets` or `notNets` list (entries that are not CIDRs are the schema's to
 * report). With `notNetsPath`, a /0 entry is an error: excluding every address matches nothing.
 */
function netFamilies(
  nets: readonly unknown[],
  notNetsPath: string | undefined,
  add: AddError,
): { has4: boolean; has6: boolean } {
  let has4 = false;
  let has6 = false;
  nets.forEach((n, i) => {
    const c = typeof n === 'string' ? parseCidrOrIP(n) : undefined;
    if (!c) return;
    if (c.family === 4) has4 = true;
    else has6 = true;
    if (notNetsPath !== undefined && c.prefix === 0) {
      add(
        `${notNetsPath}[${i}]`,
        `must not be ${n}: excluding every address would make the rule match nothing`,
      );
    }
  });
  return { has4, has6 };
}

/** HTTP match criteria: Allow ingress rules only, TCP. */
function checkHTTP(rule: Obj, path: string, direction: RuleDirection, add: AddError): void {
  if (rule.http === undefined) return;
  const action = asStr(rule.action);
  if (action !== undefined && action !== 'Allow') add(`${path}.http`, 'is only allowed in Allow rules');
  if (direction === 'egress') add(`${path}.http`, 'is not allowed in egress rules');
  if (rule.protocol !== undefined && !protocolIs(rule.protocol, 'TCP')) {
    add(`${path}.protocol`, 'must be TCP (or unset) in a rule with http match criteria');
  }
  const http = asObj(rule.http);
  const methods = asArr(http?.methods);
  if (methods && new Set(methods).size !== methods.length) {
    add(`${path}.http.methods`, 'must not list a method twice');
  }
  asArr(http?.paths)?.forEach((p, i) => {
    const po = asObj(p);
    if (po) checkHTTPPath(po, `${path}.http.paths[${i}]`, add);
  });
}

/** One `http.paths` entry: exactly one of exact or prefix, an absolute path without query. */
function checkHTTPPath(po: Obj, pp: string, add: AddError): void {
  const exact = nonEmpty(po.exact);
  const prefix = nonEmpty(po.prefix);
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
}

/** One side's entity rule at `ep`: its namespaceSelector, then its service match. */
function checkEntityRule(
  e: Obj,
  side: EntitySide,
  ep: string,
  direction: RuleDirection,
  add: AddError,
  opts: RuleCheckOptions,
): void {
  const ns = asStr(e.namespaceSelector);
  if (ns?.includes('global(') && ns.trim() !== 'global()') {
    add(`${ep}.namespaceSelector`, 'may not combine global() with other expressions');
  }
  const services = asObj(e.services);
  if (services) checkServiceMatch(e, services, side, ep, direction, add, opts);
}

/**
 * A service match stands alone: a name, no other selector or nets beside it, no ports on the
 * destination (the service's own are used), and only on the side the direction allows.
 */
function checkServiceMatch(
  e: Obj,
  services: Obj,
  side: EntitySide,
  ep: string,
  direction: RuleDirection,
  add: AddError,
  opts: RuleCheckOptions,
): void {
  if (nonEmpty(services.name) === undefined) add(`${ep}.services.name`, 'is required');
  const conflicts: Array<[string, boolean]> = [
    ['namespaceSelector', nonEmpty(e.namespaceSelector) !== undefined],
    ['selector', nonEmpty(e.selector) !== undefined],
    ['notSelector', nonEmpty(e.notSelector) !== undefined],
    ['serviceAccounts', e.serviceAccounts !== undefined],
    ['nets', listed(e.nets)],
    ['notNets', listed(e.notNets)],
  ];
  for (const [field, set] of conflicts) {
    if (set) add(`${ep}.${field}`, `cannot be combined with ${side}.services`);
  }
  if (side === 'destination') {
    for (const f of PORT_FIELDS) {
      if (listed(e[f])) {
        add(`${ep}.${f}`, "cannot be combined with destination.services (the service's own ports are used)");
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
    add(`${ep}.services.namespace`, 'is required in a GlobalNetworkPolicy (service names are per namespace)');
  }
}
