/**
 * Whether one rule matches a flow, with the criteria tested on the way (the trace's "why").
 *
 * A rule matches when every criterion it carries does (ipVersion, protocol, notProtocol, icmp,
 * source, destination). An EntityRule: `nets` (any), `notNets` (none), the endpoint criteria
 * (`selector`, `serviceAccounts` names and selector, `namespaceSelector`; `global()` selects only
 * non-namespaced endpoints) must all hold for the endpoint owning the address; in a namespaced
 * policy, an EntityRule that uses `selector`, `notSelector` or `serviceAccounts` without
 * `namespaceSelector` only matches endpoints of the policy's namespace. `notSelector` excludes
 * addresses of endpoints matching it (an address that is no endpoint is not excluded). `ports`
 * (any; a number, a `min:max` range or a named port: the port the endpoint on that side declares
 * under the name for the flow's protocol), `notPorts` (none). `services`: as a source the
 * addresses of its EndpointSlices, as a destination an endpoint address with a port of its slice
 * or a cluster IP with a port of the Service; a missing Service matches nothing.
 *
 * Fail closed: a rule carrying a field the dataplane does not enforce (`http` with methods or
 * paths, or a key not in the API) never matches if its action is Allow, Pass or Log; a Deny rule
 * applies its other criteria.
 */
import {
  ENDPOINT_SLICE_SERVICE_LABEL,
  type K8sEndpointSlice,
  type K8sService,
} from '../convert/k8s-service.js';
import { cidrContains } from '../net/cidr.js';
import type { EntityRule, Port, Rule } from '../resources/rule.js';
import { type Endpoint, isBlank, type LabelSources, protocolName, selectorCheck } from './model.js';
import type { Check, Flow, FlowProtocol } from './types.js';

/** One side of a flow: its address and port, and the endpoint owning the address. */
export interface Side {
  readonly ip: string;
  readonly port: number;
  readonly endpoint?: Endpoint;
}

/** The keys of a Rule and an EntityRule the evaluator knows. */
const RULE_KEYS = new Set([
  'action',
  'ipVersion',
  'protocol',
  'icmp',
  'notProtocol',
  'notICMP',
  'source',
  'destination',
  'http',
  'metadata',
]);
const ENTITY_KEYS = new Set([
  'nets',
  'selector',
  'namespaceSelector',
  'services',
  'ports',
  'notNets',
  'notSelector',
  'notPorts',
  'serviceAccounts',
]);

/** `http` with a method or a path, or a key (in the rule or its EntityRules) not in the API. */
export function carriesUnenforcedField(rule: Rule): boolean {
  const http = rule.http;
  if (http && ((http.methods?.length ?? 0) > 0 || (http.paths?.length ?? 0) > 0)) return true;
  if (Object.keys(rule).some((k) => !RULE_KEYS.has(k))) return true;
  for (const er of [rule.source, rule.destination]) {
    if (er && Object.keys(er).some((k) => !ENTITY_KEYS.has(k))) return true;
  }
  return false;
}

export interface MatchContext {
  readonly flow: Flow;
  readonly src: Side;
  readonly dst: Side;
  readonly sources: LabelSources;
  readonly services: readonly K8sService[];
  readonly slices: readonly K8sEndpointSlice[];
}

/** Collects checks, stopping at the first that fails. */
class Checks {
  readonly list: Check[] = [];
  ok = true;

  add(c: Check): boolean {
    this.list.push(c);
    if (!c.ok) this.ok = false;
    return c.ok;
  }
}

const showAddr = (at: Side) => (at.endpoint ? `${at.ip} (${at.endpoint.key})` : `${at.ip} (no endpoint)`);

/** The checks of `rule` on the flow; `namespace` is the policy's, undefined for a global policy or a profile. */
export function ruleChecks(
  rule: Rule,
  ctx: MatchContext,
  namespace: string | undefined,
): { matched: boolean; checks: Check[] } {
  if (rule.notICMP !== undefined) throw new Error('notICMP is not supported by the policy evaluator');
  const c = new Checks();
  const done = () => ({ matched: c.ok, checks: c.list });
  const { flow } = ctx;
  if (rule.action !== 'Deny' && carriesUnenforcedField(rule)) {
    c.add({
      what: 'http match or unknown field',
      ok: false,
      on: 'not enforced by the dataplane, so it matches nothing',
    });
    return done();
  }
  if (
    rule.ipVersion !== undefined &&
    !c.add({ what: `ipVersion ${rule.ipVersion}`, ok: rule.ipVersion === 4, on: 'IPv4' })
  )
    return done();
  if (
    rule.protocol !== undefined &&
    !c.add({
      what: `protocol ${rule.protocol}`,
      ok: protocolName(rule.protocol) === flow.protocol,
      on: flow.protocol,
    })
  )
    return done();
  if (
    rule.notProtocol !== undefined &&
    !c.add({
      what: `notProtocol ${rule.notProtocol}`,
      ok: protocolName(rule.notProtocol) !== flow.protocol,
      on: flow.protocol,
    })
  )
    return done();
  if (rule.icmp !== undefined && !c.add({ what: 'icmp', ok: false, on: flow.protocol })) return done();
  if (!entityChecks(c, rule.source, 'source', ctx, ctx.src, namespace)) return done();
  entityChecks(c, rule.destination, 'destination', ctx, ctx.dst, namespace);
  return done();
}

function entityChecks(
  c: Checks,
  er: EntityRule | undefined,
  side: 'source' | 'destination',
  ctx: MatchContext,
  at: Side,
  namespace: string | undefined,
): boolean {
  if (!er) return true;
  const addr = showAddr(at);
  if (er.nets && er.nets.length > 0) {
    if (
      !c.add({
        what: `${side}.nets ${er.nets.join(', ')}`,
        ok: er.nets.some((n) => cidrContains(n, at.ip)),
        on: addr,
      })
    )
      return false;
  }
  if (er.notNets && er.notNets.length > 0) {
    if (
      !c.add({
        what: `${side}.notNets ${er.notNets.join(', ')}`,
        ok: !er.notNets.some((n) => cidrContains(n, at.ip)),
        on: addr,
      })
    )
      return false;
  }
  if (!endpointCriteria(c, er, side, ctx.sources, at, namespace)) return false;
  if (!isBlank(er.notSelector)) {
    const ok = !at.endpoint || !selectorCheck('', er.notSelector!, at.endpoint).ok;
    if (
      !c.add({
        what: `${side}.notSelector ${er.notSelector}`,
        ok,
        on: at.endpoint ? `labels of ${at.endpoint.key}` : addr,
      })
    )
      return false;
  }
  const proto = ctx.flow.protocol;
  if (er.ports && er.ports.length > 0) {
    const ok = er.ports.some((p) => portMatches(p, proto, at));
    if (!c.add({ what: `${side}.ports ${er.ports.join(', ')}`, ok, on: portOn(er.ports, proto, at) }))
      return false;
  }
  if (er.notPorts && er.notPorts.length > 0) {
    const ok = !er.notPorts.some((p) => portMatches(p, proto, at));
    if (
      !c.add({ what: `${side}.notPorts ${er.notPorts.join(', ')}`, ok, on: portOn(er.notPorts, proto, at) })
    )
      return false;
  }
  if (er.services) {
    const svc = er.services;
    const ok = serviceMatches(svc, side, ctx, at, namespace);
    const name = `${svc.namespace || namespace || '?'}/${svc.name ?? '?'}`;
    if (!c.add({ what: `${side}.services ${name}`, ok, on: `${addr} port ${at.port}` })) return false;
  }
  return true;
}

function portOn(ports: readonly Port[], proto: FlowProtocol, at: Side): string {
  const named = ports.filter((p) => typeof p === 'string' && /^[a-zA-Z]/.test(p));
  if (named.length === 0) return `port ${at.port}`;
  const declared = (at.endpoint?.ports ?? [])
    .filter((d) => d.protocol === proto)
    .map((d) => `${d.name}=${d.port}`);
  const owner = at.endpoint
    ? `${at.endpoint.key} declares ${proto} ${declared.length ? declared.join(', ') : 'no named port'}`
    : 'no endpoint, so no named port';
  return `port ${at.port}; ${owner}`;
}

/** selector, serviceAccounts, namespaceSelector, and the policy's namespace where that applies. */
function endpointCriteria(
  c: Checks,
  er: EntityRule,
  side: 'source' | 'destination',
  sources: LabelSources,
  at: Side,
  namespace: string | undefined,
): boolean {
  const sa = er.serviceAccounts;
  const usesServiceAccounts = sa !== undefined && ((sa.names?.length ?? 0) > 0 || !isBlank(sa.selector));
  const usesSelector = !isBlank(er.selector);
  const usesNamespaceSelector = !isBlank(er.namespaceSelector);
  const sameNamespaceOnly =
    !usesNamespaceSelector &&
    namespace !== undefined &&
    (usesSelector || usesServiceAccounts || !isBlank(er.notSelector));
  if (!usesSelector && !usesServiceAccounts && !usesNamespaceSelector && !sameNamespaceOnly) return true;
  const ep = at.endpoint;
  if (!ep) {
    const what = [
      usesSelector ? `selector ${er.selector}` : '',
      usesNamespaceSelector ? `namespaceSelector ${er.namespaceSelector}` : '',
      usesServiceAccounts ? 'serviceAccounts' : '',
      sameNamespaceOnly ? `namespace ${namespace}` : '',
    ]
      .filter((x) => x !== '')
      .join(', ');
    return c.add({ what: `${side} ${what}`, ok: false, on: `${at.ip}, which is no endpoint` });
  }
  if (usesSelector && !c.add(selectorCheck(`${side}.selector`, er.selector!, ep))) return false;
  if (usesServiceAccounts) {
    const names = sa!.names ?? [];
    if (names.length > 0) {
      const ok = ep.serviceAccount !== undefined && names.includes(ep.serviceAccount);
      const on = ep.serviceAccount
        ? `service account ${ep.serviceAccount} of ${ep.key}`
        : `${ep.key}, which has no service account`;
      if (!c.add({ what: `${side}.serviceAccounts.names ${names.join(', ')}`, ok, on })) return false;
    }
    const check = sources.serviceAccountCheck(`${side}.serviceAccounts.selector`, sa!.selector, ep);
    if (check && !c.add(check)) return false;
  }
  if (
    usesNamespaceSelector &&
    !c.add(sources.namespaceCheck(`${side}.namespaceSelector`, er.namespaceSelector!, ep))
  )
    return false;
  if (sameNamespaceOnly) {
    const ok = ep.namespace === namespace;
    if (
      !c.add({
        what: `${side} in the policy's namespace ${namespace}`,
        ok,
        on: ep.namespace ? `namespace ${ep.namespace}` : `${ep.key}, which is in no namespace`,
      })
    )
      return false;
  }
  return true;
}

function serviceMatches(
  svc: { name?: string; namespace?: string },
  side: 'source' | 'destination',
  ctx: MatchContext,
  at: Side,
  namespace: string | undefined,
): boolean {
  const ns = svc.namespace || namespace;
  if (!svc.name || !ns) return false;
  const service = ctx.services.find(
    (s) => s.metadata.name === svc.name && (s.metadata.namespace ?? 'default') === ns,
  );
  if (!service) return false;
  const slices = ctx.slices.filter(
    (s) =>
      (s.metadata.namespace ?? 'default') === ns &&
      s.metadata.labels?.[ENDPOINT_SLICE_SERVICE_LABEL] === svc.name &&
      s.addressType === 'IPv4',
  );
  const addresses = slices.flatMap((s) => (s.endpoints ?? []).flatMap((e) => e.addresses));
  if (addresses.length === 0) return false;
  if (side === 'source') return addresses.includes(at.ip);
  const protocol = ctx.flow.protocol;
  for (const s of slices) {
    const addrs = (s.endpoints ?? []).flatMap((e) => e.addresses);
    if (!addrs.includes(at.ip)) continue;
    if ((s.ports ?? []).some((p) => p.port === at.port && protocolName(p.protocol ?? 'TCP') === protocol))
      return true;
  }
  const clusterIPs = service.spec?.clusterIPs ?? (service.spec?.clusterIP ? [service.spec.clusterIP] : []);
  if (!clusterIPs.includes(at.ip)) return false;
  return (service.spec?.ports ?? []).some(
    (p) => p.port === at.port && protocolName(p.protocol ?? 'TCP') === protocol,
  );
}

function portMatches(p: Port, protocol: FlowProtocol, at: Side): boolean {
  if (typeof p === 'number') return at.port === p;
  if (/^[0-9]+$/.test(p)) return at.port === Number(p);
  const range = /^([0-9]+):([0-9]+)$/.exec(p);
  if (range) return at.port >= Number(range[1]) && at.port <= Number(range[2]);
  // A named port: the port this side's endpoint declares under the name, for this protocol.
  return (at.endpoint?.ports ?? []).some(
    (d) => d.name === p && d.protocol === protocol && d.port === at.port,
  );
}
