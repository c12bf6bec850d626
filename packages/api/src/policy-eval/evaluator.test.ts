/**
 * The reference evaluator on hand-written cases, one or more per clause of the semantics it
 * implements. The world: namespaces `shop` (team red) and `bank` (team blue), pods
 *
 *   shop/web  10.0.1.1  app=web   sa frontend (role=fe)  ports http tcp/80, dns udp/53
 *   shop/db   10.0.1.2  app=db    sa backend  (role=be)  ports sql tcp/5432
 *   bank/api  10.0.2.1  app=web   sa frontend (role=fe)  ports http tcp/8080
 *
 * an external address 192.0.2.9, and Service shop/front (cluster IP 10.96.0.1 port 8000 → web:80).
 */
import { describe, expect, it } from 'vitest';
import type {
  GlobalNetworkPolicy,
  K8sEndpointSlice,
  K8sService,
  NetworkPolicy,
  Profile,
  Rule,
  Tier,
  WorkloadEndpoint,
} from '../index.js';
import { type Flow, PolicyEvaluator, type PolicyWorld } from './index.js';

const V3 = 'projectcalico.org/v3' as const;
const WEB = '10.0.1.1';
const DB = '10.0.1.2';
const API = '10.0.2.1';
const EXT = '192.0.2.9';
const CLUSTER_IP = '10.96.0.1';

function pod(
  namespace: string,
  name: string,
  ip: string,
  labels: Record<string, string>,
  sa: string,
  ports: { name: string; protocol: 'TCP' | 'UDP'; port: number }[],
): WorkloadEndpoint {
  return {
    apiVersion: V3,
    kind: 'WorkloadEndpoint',
    metadata: { name, namespace, labels },
    spec: {
      node: 'n1',
      orchestrator: 'k8s',
      serviceAccountName: sa,
      ipNetworks: [`${ip}/32`],
      profiles: [`kns.${namespace}`, `ksa.${namespace}.${sa}`],
      ports,
    },
  };
}

function profile(name: string, labelsToApply: Record<string, string>, allow: boolean): Profile {
  const rules: Rule[] = allow ? [{ action: 'Allow' }] : [];
  return {
    apiVersion: V3,
    kind: 'Profile',
    metadata: { name },
    spec: { labelsToApply, ingress: rules, egress: rules },
  };
}

const BASE = {
  workloadEndpoints: [
    pod('shop', 'web', WEB, { app: 'web' }, 'frontend', [
      { name: 'http', protocol: 'TCP', port: 80 },
      { name: 'dns', protocol: 'UDP', port: 53 },
    ]),
    pod('shop', 'db', DB, { app: 'db' }, 'backend', [{ name: 'sql', protocol: 'TCP', port: 5432 }]),
    pod('bank', 'api', API, { app: 'web' }, 'frontend', [{ name: 'http', protocol: 'TCP', port: 8080 }]),
  ],
  profiles: [
    profile('kns.shop', { 'pcns.team': 'red', 'pcns.projectcalico.org/name': 'shop' }, true),
    profile('kns.bank', { 'pcns.team': 'blue', 'pcns.projectcalico.org/name': 'bank' }, true),
    profile('ksa.shop.frontend', { 'pcsa.role': 'fe', 'pcsa.projectcalico.org/name': 'frontend' }, false),
    profile('ksa.shop.backend', { 'pcsa.role': 'be', 'pcsa.projectcalico.org/name': 'backend' }, false),
    profile('ksa.bank.frontend', { 'pcsa.role': 'fe', 'pcsa.projectcalico.org/name': 'frontend' }, false),
  ],
  tiers: [
    {
      apiVersion: V3,
      kind: 'Tier',
      metadata: { name: 'security' },
      spec: { order: 10, defaultAction: 'Deny' },
    },
    {
      apiVersion: V3,
      kind: 'Tier',
      metadata: { name: 'platform' },
      spec: { order: 20, defaultAction: 'Pass' },
    },
  ] as Tier[],
  services: [
    {
      kind: 'Service',
      metadata: { name: 'front', namespace: 'shop' },
      spec: { clusterIP: CLUSTER_IP, ports: [{ protocol: 'TCP', port: 8000, targetPort: 80 }] },
    },
    {
      kind: 'Service',
      metadata: { name: 'empty', namespace: 'shop' },
      spec: { clusterIP: '10.96.0.2', ports: [{ port: 80 }] },
    },
  ] as K8sService[],
  endpointSlices: [
    {
      kind: 'EndpointSlice',
      metadata: { name: 'front-1', namespace: 'shop', labels: { 'kubernetes.io/service-name': 'front' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: [WEB] }],
      ports: [{ protocol: 'TCP', port: 80 }],
    },
  ] as K8sEndpointSlice[],
};

function np(namespace: string, name: string, spec: NetworkPolicy['spec']): NetworkPolicy {
  return { apiVersion: V3, kind: 'NetworkPolicy', metadata: { name, namespace }, spec };
}

function gnp(name: string, spec: GlobalNetworkPolicy['spec']): GlobalNetworkPolicy {
  return { apiVersion: V3, kind: 'GlobalNetworkPolicy', metadata: { name }, spec };
}

function world(policies: (NetworkPolicy | GlobalNetworkPolicy)[]): PolicyEvaluator {
  const w: PolicyWorld = {
    ...BASE,
    networkPolicies: policies.filter((p): p is NetworkPolicy => p.kind === 'NetworkPolicy'),
    globalNetworkPolicies: policies.filter((p): p is GlobalNetworkPolicy => p.kind === 'GlobalNetworkPolicy'),
  };
  return new PolicyEvaluator(w);
}

let nextPort = 40000;
function flow(
  srcIP: string,
  dstIP: string,
  protocol: 'tcp' | 'udp',
  dstPort: number,
  srcPort?: number,
): Flow {
  return { srcIP, dstIP, protocol, dstPort, srcPort: srcPort ?? nextPort++ };
}

/** An ingress-only policy on `selector` in `ns` with these rules. */
const ingressNP = (ns: string, selector: string, ingress: Rule[]) =>
  np(ns, 'p', { selector, types: ['Ingress'], ingress });

const allowed = (e: PolicyEvaluator, f: Flow) => e.evaluate(f).allowed;

describe('policy evaluator', () => {
  it('without policy the profiles decide: kns allows', () => {
    const e = world([]);
    const v = e.evaluate(flow(WEB, DB, 'tcp', 5432));
    expect(v.allowed).toBe(true);
    expect(v.ingress?.reason).toMatch(/no policy applies; profile kns.shop ingress\[0\] Allow/);
    expect(v.egress?.allowed).toBe(true);
    // External addresses have no policy of their own.
    expect(e.evaluate(flow(EXT, WEB, 'tcp', 80)).egress).toBeUndefined();
  });

  it('a NetworkPolicy applies only in its namespace; its end of tier denies', () => {
    const e = world([ingressNP('shop', "app == 'web'", [])]);
    expect(allowed(e, flow(DB, WEB, 'tcp', 80))).toBe(false);
    expect(e.evaluate(flow(DB, WEB, 'tcp', 80)).ingress?.reason).toMatch(/end of tier default/);
    expect(allowed(e, flow(WEB, API, 'tcp', 8080))).toBe(true); // bank/api: same labels, other namespace
  });

  it('a GlobalNetworkPolicy with namespaceSelector and serviceAccountSelector', () => {
    const deny = (spec: Partial<GlobalNetworkPolicy['spec']>) =>
      world([
        gnp('g', { selector: "app == 'web'", types: ['Ingress'], ingress: [{ action: 'Deny' }], ...spec }),
      ]);
    expect(allowed(deny({}), flow(DB, API, 'tcp', 8080))).toBe(false);
    expect(allowed(deny({ namespaceSelector: "team == 'red'" }), flow(DB, API, 'tcp', 8080))).toBe(true);
    expect(allowed(deny({ namespaceSelector: "team == 'red'" }), flow(DB, WEB, 'tcp', 80))).toBe(false);
    expect(allowed(deny({ serviceAccountSelector: "role == 'be'" }), flow(DB, WEB, 'tcp', 80))).toBe(true);
    expect(allowed(deny({ serviceAccountSelector: "role == 'fe'" }), flow(DB, WEB, 'tcp', 80))).toBe(false);
  });

  it('types default from the rules: egress rules only make an egress policy', () => {
    const e = world([np('shop', 'p', { selector: "app == 'web'", egress: [{ action: 'Deny' }] })]);
    expect(allowed(e, flow(WEB, DB, 'tcp', 5432))).toBe(false);
    expect(allowed(e, flow(DB, WEB, 'tcp', 80))).toBe(true); // no ingress policy on web
    const none = world([np('shop', 'p', { selector: "app == 'web'" })]);
    expect(allowed(none, flow(DB, WEB, 'tcp', 80))).toBe(false); // no rules at all: Ingress
    expect(allowed(none, flow(WEB, DB, 'tcp', 5432))).toBe(true);
  });

  it('tiers in order; Pass moves on, Log continues, defaultAction Pass reaches the profiles', () => {
    const sec = (rules: Rule[]) =>
      gnp('s', { tier: 'security', selector: "app == 'db'", types: ['Ingress'], ingress: rules });
    const dflt = ingressNP('shop', "app == 'db'", [{ action: 'Deny' }]);
    // Allow in the first tier wins over Deny in a later one.
    expect(allowed(world([sec([{ action: 'Allow' }]), dflt]), flow(WEB, DB, 'tcp', 5432))).toBe(true);
    // Log then Pass: the default tier's Deny decides.
    const v = world([sec([{ action: 'Log' }, { action: 'Pass' }]), dflt]).evaluate(
      flow(WEB, DB, 'tcp', 5432),
    );
    expect(v.allowed).toBe(false);
    expect(v.ingress?.reason).toMatch(/^tier default: NetworkPolicy shop\/p ingress\[0\] Deny/);
    // Pass from the last tier: the profiles decide.
    expect(allowed(world([sec([{ action: 'Pass' }])]), flow(WEB, DB, 'tcp', 5432))).toBe(true);
    // A Deny-default tier with no match denies; a Pass-default tier goes on to the profiles.
    expect(allowed(world([sec([{ action: 'Allow', protocol: 'UDP' }])]), flow(WEB, DB, 'tcp', 5432))).toBe(
      false,
    );
    const plat = gnp('p', { tier: 'platform', selector: 'all()', types: ['Ingress'], ingress: [] });
    expect(allowed(world([plat]), flow(WEB, DB, 'tcp', 5432))).toBe(true);
  });

  it('within a tier policies go by order (unset last), then name', () => {
    const p = (name: string, order: number | undefined, action: 'Allow' | 'Deny') =>
      gnp(name, {
        selector: "app == 'db'",
        types: ['Ingress'],
        ingress: [{ action }],
        ...(order !== undefined ? { order } : {}),
      });
    expect(allowed(world([p('a', undefined, 'Deny'), p('b', 5, 'Allow')]), flow(WEB, DB, 'tcp', 1))).toBe(
      true,
    );
    expect(allowed(world([p('a', 5, 'Deny'), p('b', 5, 'Allow')]), flow(WEB, DB, 'tcp', 1))).toBe(false);
    expect(allowed(world([p('b', 1, 'Deny'), p('a', 2, 'Allow')]), flow(WEB, DB, 'tcp', 1))).toBe(false);
  });

  it('selector and notSelector; a NetworkPolicy limits them to its namespace', () => {
    const e = (source: Rule['source']) =>
      world([ingressNP('shop', "app == 'db'", [{ action: 'Allow', source }])]);
    expect(allowed(e({ selector: "app == 'web'" }), flow(WEB, DB, 'tcp', 5432))).toBe(true);
    expect(allowed(e({ selector: "app == 'web'" }), flow(API, DB, 'tcp', 5432))).toBe(false);
    expect(allowed(e({ notSelector: "app == 'db'" }), flow(WEB, DB, 'tcp', 5432))).toBe(true);
    // notSelector alone in a NetworkPolicy: still only this namespace's endpoints.
    expect(allowed(e({ notSelector: "app == 'db'" }), flow(API, DB, 'tcp', 5432))).toBe(false);
    expect(allowed(e({ notSelector: "app == 'db'" }), flow(EXT, DB, 'tcp', 5432))).toBe(false);
    // In a GlobalNetworkPolicy, notSelector alone also matches addresses that are no endpoint.
    const g = world([
      gnp('g', {
        selector: "app == 'db'",
        types: ['Ingress'],
        ingress: [{ action: 'Allow', source: { notSelector: "app == 'web'" } }],
      }),
    ]);
    expect(allowed(g, flow(EXT, DB, 'tcp', 5432))).toBe(true);
    expect(allowed(g, flow(API, DB, 'tcp', 5432))).toBe(false);
    // Selectors see labels inherited from profiles.
    expect(allowed(e({ selector: "pcns.team == 'red' && app == 'web'" }), flow(WEB, DB, 'tcp', 1))).toBe(
      true,
    );
  });

  it('namespaceSelector over namespace labels; all() and global()', () => {
    const e = (namespaceSelector: string, selector?: string) =>
      world([
        ingressNP('shop', "app == 'db'", [
          { action: 'Allow', source: { namespaceSelector, ...(selector ? { selector } : {}) } },
        ]),
      ]);
    expect(allowed(e("team == 'blue'"), flow(API, DB, 'tcp', 1))).toBe(true);
    expect(allowed(e("team == 'blue'"), flow(WEB, DB, 'tcp', 1))).toBe(false);
    expect(allowed(e("projectcalico.org/name == 'bank'", "app == 'web'"), flow(API, DB, 'tcp', 1))).toBe(
      true,
    );
    expect(allowed(e('all()'), flow(API, DB, 'tcp', 1))).toBe(true);
    expect(allowed(e('all()'), flow(EXT, DB, 'tcp', 1))).toBe(false);
    expect(allowed(e('global()'), flow(API, DB, 'tcp', 1))).toBe(false);
    expect(allowed(e('global()'), flow(EXT, DB, 'tcp', 1))).toBe(false);
  });

  it('serviceAccounts: names and a selector over the service account labels, ANDed', () => {
    const e = (serviceAccounts: { names?: string[]; selector?: string }, ns = 'shop') =>
      world([
        np(ns, 'p', {
          selector: 'all()',
          types: ['Ingress'],
          ingress: [{ action: 'Allow', source: { serviceAccounts } }],
        }),
      ]);
    expect(allowed(e({ names: ['frontend'] }), flow(WEB, DB, 'tcp', 1))).toBe(true);
    expect(allowed(e({ names: ['backend'] }), flow(WEB, DB, 'tcp', 1))).toBe(false);
    expect(allowed(e({ selector: "role == 'fe'" }), flow(WEB, DB, 'tcp', 1))).toBe(true);
    expect(allowed(e({ names: ['frontend'], selector: "role == 'be'" }), flow(WEB, DB, 'tcp', 1))).toBe(
      false,
    );
    // In a NetworkPolicy, only the policy's namespace: bank/api has SA frontend too.
    expect(allowed(e({ names: ['frontend'] }), flow(API, DB, 'tcp', 1))).toBe(false);
    const g = world([
      gnp('g', {
        selector: "app == 'db'",
        types: ['Ingress'],
        ingress: [{ action: 'Allow', source: { serviceAccounts: { names: ['frontend'] } } }],
      }),
    ]);
    expect(allowed(g, flow(API, DB, 'tcp', 1))).toBe(true);
    expect(allowed(g, flow(EXT, DB, 'tcp', 1))).toBe(false);
  });

  it('nets and notNets', () => {
    const e = (source: Rule['source']) =>
      world([ingressNP('shop', "app == 'db'", [{ action: 'Allow', source }])]);
    expect(allowed(e({ nets: ['192.0.2.0/24'] }), flow(EXT, DB, 'tcp', 1))).toBe(true);
    expect(allowed(e({ nets: ['192.0.2.0/24', '10.0.2.1/32'] }), flow(API, DB, 'tcp', 1))).toBe(true);
    expect(allowed(e({ nets: ['192.0.2.0/24'] }), flow(WEB, DB, 'tcp', 1))).toBe(false);
    expect(allowed(e({ notNets: ['10.0.0.0/16'] }), flow(EXT, DB, 'tcp', 1))).toBe(true);
    expect(allowed(e({ notNets: ['10.0.0.0/16'] }), flow(WEB, DB, 'tcp', 1))).toBe(false);
  });

  it('ports: numbers, ranges, named ports of the right protocol; notPorts', () => {
    const e = (destination: Rule['destination'], protocol: 'TCP' | 'UDP' = 'TCP') =>
      world([
        gnp('g', {
          selector: 'all()',
          types: ['Ingress'],
          ingress: [{ action: 'Allow', protocol, destination }],
        }),
      ]);
    expect(allowed(e({ ports: [80] }), flow(DB, WEB, 'tcp', 80))).toBe(true);
    expect(allowed(e({ ports: [80] }), flow(DB, WEB, 'tcp', 81))).toBe(false);
    expect(allowed(e({ ports: ['5000:6000'] }), flow(WEB, DB, 'tcp', 5432))).toBe(true);
    expect(allowed(e({ ports: ['http'] }), flow(DB, WEB, 'tcp', 80))).toBe(true);
    expect(allowed(e({ ports: ['http'] }), flow(DB, API, 'tcp', 8080))).toBe(true); // api's http is 8080
    expect(allowed(e({ ports: ['http'] }), flow(DB, API, 'tcp', 80))).toBe(false);
    expect(allowed(e({ ports: ['dns'] }, 'TCP'), flow(DB, WEB, 'tcp', 53))).toBe(false); // dns is UDP
    expect(allowed(e({ ports: ['dns'] }, 'UDP'), flow(DB, WEB, 'udp', 53))).toBe(true);
    expect(allowed(e({ notPorts: ['http', 5432] }), flow(DB, WEB, 'tcp', 80))).toBe(false);
    expect(allowed(e({ notPorts: ['http', 5432] }), flow(DB, WEB, 'tcp', 81))).toBe(true);
    // A source port range and a source named port (the source endpoint's own declaration).
    const s = (ports: (string | number)[]) =>
      world([
        gnp('g', {
          selector: "app == 'db'",
          types: ['Ingress'],
          ingress: [{ action: 'Allow', protocol: 'TCP', source: { ports } }],
        }),
      ]);
    expect(allowed(s(['30000:40000']), flow(WEB, DB, 'tcp', 5432, 35000))).toBe(true);
    expect(allowed(s(['30000:40000']), flow(WEB, DB, 'tcp', 5432, 45000))).toBe(false);
    expect(allowed(s(['http']), flow(WEB, DB, 'tcp', 5432, 80))).toBe(true);
  });

  it('protocol and notProtocol, by name or number; ipVersion 6 never matches IPv4', () => {
    const e = (rule: Partial<Rule>) =>
      world([
        gnp('g', { selector: "app == 'db'", types: ['Ingress'], ingress: [{ action: 'Allow', ...rule }] }),
      ]);
    expect(allowed(e({ protocol: 'UDP' }), flow(WEB, DB, 'udp', 1))).toBe(true);
    expect(allowed(e({ protocol: 17 }), flow(WEB, DB, 'udp', 1))).toBe(true);
    expect(allowed(e({ protocol: 17 }), flow(WEB, DB, 'tcp', 1))).toBe(false);
    expect(allowed(e({ notProtocol: 'TCP' }), flow(WEB, DB, 'tcp', 1))).toBe(false);
    expect(allowed(e({ notProtocol: 6 }), flow(WEB, DB, 'udp', 1))).toBe(true);
    expect(allowed(e({ protocol: 'ICMP' }), flow(WEB, DB, 'tcp', 1))).toBe(false);
    expect(allowed(e({ ipVersion: 6 }), flow(WEB, DB, 'tcp', 1))).toBe(false);
    expect(allowed(e({ ipVersion: 4 }), flow(WEB, DB, 'tcp', 1))).toBe(true);
  });

  it('source services: the addresses of the endpoints; namespace defaults to the policy', () => {
    const e = (services: { name: string; namespace?: string }, ns = 'shop') =>
      world([
        np(ns, 'p', {
          selector: 'all()',
          types: ['Ingress'],
          ingress: [{ action: 'Allow', source: { services } }],
        }),
      ]);
    expect(allowed(e({ name: 'front' }), flow(WEB, DB, 'tcp', 1))).toBe(true);
    expect(allowed(e({ name: 'front' }), flow(API, DB, 'tcp', 1))).toBe(false);
    expect(allowed(e({ name: 'front' }, 'bank'), flow(WEB, API, 'tcp', 1))).toBe(false); // bank/front: none
    expect(allowed(e({ name: 'front', namespace: 'shop' }, 'bank'), flow(WEB, API, 'tcp', 1))).toBe(true);
    expect(allowed(e({ name: 'ghost' }), flow(WEB, DB, 'tcp', 1))).toBe(false);
    expect(allowed(e({ name: 'empty' }), flow(WEB, DB, 'tcp', 1))).toBe(false);
  });

  it('destination services: endpoint address and slice port, or cluster IP and service port', () => {
    const e = (services: { name: string; namespace?: string }) =>
      world([
        np('bank', 'p', {
          selector: 'all()',
          types: ['Egress'],
          egress: [{ action: 'Allow', destination: { services } }],
        }),
      ]);
    const svc = e({ name: 'front', namespace: 'shop' });
    expect(allowed(svc, flow(API, WEB, 'tcp', 80))).toBe(true);
    expect(allowed(svc, flow(API, WEB, 'tcp', 8000))).toBe(false);
    expect(allowed(svc, flow(API, WEB, 'udp', 80))).toBe(false);
    expect(allowed(svc, flow(API, CLUSTER_IP, 'tcp', 8000))).toBe(true);
    expect(allowed(svc, flow(API, CLUSTER_IP, 'tcp', 80))).toBe(false);
    expect(allowed(svc, flow(API, DB, 'tcp', 80))).toBe(false);
    // No endpoints: nothing, not even the cluster IP.
    expect(allowed(e({ name: 'empty', namespace: 'shop' }), flow(API, '10.96.0.2', 'tcp', 80))).toBe(false);
    expect(allowed(e({ name: 'front' }), flow(API, CLUSTER_IP, 'tcp', 8000))).toBe(false); // bank/front
  });

  it('fails closed on http: an Allow with http never matches, a Deny applies its other criteria', () => {
    const http = { methods: ['GET'] };
    const a = world([ingressNP('shop', "app == 'web'", [{ action: 'Allow', protocol: 'TCP', http }])]);
    expect(allowed(a, flow(DB, WEB, 'tcp', 80))).toBe(false);
    const pass = world([
      gnp('g', {
        tier: 'security',
        selector: "app == 'web'",
        types: ['Ingress'],
        ingress: [{ action: 'Pass', http }],
      }),
    ]);
    expect(allowed(pass, flow(DB, WEB, 'tcp', 80))).toBe(false); // the Pass never matches: end of tier
    const d = world([
      ingressNP('shop', "app == 'web'", [
        {
          action: 'Deny',
          protocol: 'TCP',
          destination: { ports: [80] },
          http: { paths: [{ prefix: '/x' }] },
        },
        { action: 'Allow' },
      ]),
    ]);
    expect(allowed(d, flow(DB, WEB, 'tcp', 80))).toBe(false);
    expect(allowed(d, flow(DB, WEB, 'tcp', 81))).toBe(true);
    // An unknown key fails closed the same way.
    const unknown = world([
      ingressNP('shop', "app == 'web'", [{ action: 'Allow', future: true } as unknown as Rule]),
    ]);
    expect(allowed(unknown, flow(DB, WEB, 'tcp', 80))).toBe(false);
  });

  it('both directions: the source egress and the destination ingress must allow', () => {
    const out = np('shop', 'out', {
      selector: "app == 'web'",
      types: ['Egress'],
      egress: [{ action: 'Deny', destination: { nets: [DB] } }, { action: 'Allow' }],
    });
    const v = world([out]).evaluate(flow(WEB, DB, 'tcp', 5432));
    expect(v.allowed).toBe(false);
    expect(v.egress?.allowed).toBe(false);
    expect(v.ingress?.allowed).toBe(true);
    expect(allowed(world([out]), flow(WEB, API, 'tcp', 8080))).toBe(true);
    expect(allowed(world([out]), flow(WEB, EXT, 'udp', 53))).toBe(true);
  });
});
