/**
 * The evaluator's trace on crafted cases: what a reader of `calicoctl policy explain` is told.
 * The world: namespace `shop` (team red) with pods web (10.0.1.1, app=web, sa frontend, named port
 * http tcp/80) and db (10.0.1.2, app=db); host endpoint node1-eth0 (10.0.9.1, role=node); tiers
 * security (10, Deny) and platform (20, Pass).
 */
import { describe, expect, it } from 'vitest';
import type {
  GlobalNetworkPolicy,
  HostEndpoint,
  NetworkPolicy,
  Profile,
  Rule,
  StagedGlobalNetworkPolicy,
  StagedKubernetesNetworkPolicy,
  StagedNetworkPolicy,
  Tier,
  WorkloadEndpoint,
} from '../index.js';
import { type Flow, PolicyEvaluator, type PolicyWorld } from './index.js';

const V3 = 'projectcalico.org/v3' as const;
const WEB = '10.0.1.1';
const DB = '10.0.1.2';
const HOST = '10.0.9.1';

function pod(
  name: string,
  ip: string,
  labels: Record<string, string>,
  ports: WorkloadEndpoint['spec']['ports'] = [],
): WorkloadEndpoint {
  return {
    apiVersion: V3,
    kind: 'WorkloadEndpoint',
    metadata: { name: `node1-k8s-${name}-eth0`, namespace: 'shop', labels },
    spec: {
      node: 'node1',
      orchestrator: 'k8s',
      pod: name,
      serviceAccountName: 'frontend',
      ipNetworks: [`${ip}/32`],
      profiles: ['kns.shop', 'ksa.shop.frontend'],
      ports,
    },
  };
}

const allowAll: Rule[] = [{ action: 'Allow' }];
const PROFILES: Profile[] = [
  {
    apiVersion: V3,
    kind: 'Profile',
    metadata: { name: 'kns.shop' },
    spec: {
      ingress: allowAll,
      egress: allowAll,
      labelsToApply: { 'pcns.team': 'red', 'pcns.projectcalico.org/name': 'shop' },
    },
  },
  {
    apiVersion: V3,
    kind: 'Profile',
    metadata: { name: 'ksa.shop.frontend' },
    spec: { labelsToApply: { 'pcsa.role': 'fe', 'pcsa.projectcalico.org/name': 'frontend' } },
  },
];
const TIERS: Tier[] = [
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
];
const HEP: HostEndpoint = {
  apiVersion: V3,
  kind: 'HostEndpoint',
  metadata: { name: 'node1-eth0', labels: { role: 'node' } },
  spec: { node: 'node1', interfaceName: 'eth0', expectedIPs: [HOST] },
};

const np = (name: string, spec: NetworkPolicy['spec']): NetworkPolicy => ({
  apiVersion: V3,
  kind: 'NetworkPolicy',
  metadata: { name, namespace: 'shop' },
  spec,
});
const gnp = (name: string, spec: GlobalNetworkPolicy['spec']): GlobalNetworkPolicy => ({
  apiVersion: V3,
  kind: 'GlobalNetworkPolicy',
  metadata: { name },
  spec,
});

function evaluator(extra: Partial<PolicyWorld> = {}): PolicyEvaluator {
  return new PolicyEvaluator({
    workloadEndpoints: [
      pod('web', WEB, { app: 'web' }, [{ name: 'http', protocol: 'TCP', port: 80 }]),
      pod('db', DB, { app: 'db' }),
    ],
    hostEndpoints: [HEP],
    profiles: PROFILES,
    tiers: TIERS,
    networkPolicies: [],
    globalNetworkPolicies: [],
    ...extra,
  });
}

const tcp = (srcIP: string, dstIP: string, dstPort: number): Flow => ({
  srcIP,
  dstIP,
  protocol: 'tcp',
  srcPort: 40000,
  dstPort,
});

describe('policy evaluator trace', () => {
  it('walks the tiers in order: a Pass in security, an Allow in default, each rule with its checks', () => {
    const e = evaluator({
      globalNetworkPolicies: [
        gnp('pass-web', {
          tier: 'security',
          order: 1,
          selector: "app == 'db'",
          types: ['Ingress'],
          ingress: [
            { action: 'Deny', protocol: 'UDP' },
            { action: 'Pass', source: { selector: "app == 'web'" } },
          ],
        }),
      ],
      networkPolicies: [
        np('db', {
          selector: "app == 'db'",
          types: ['Ingress'],
          ingress: [{ action: 'Allow', protocol: 'TCP' }],
        }),
      ],
    });
    const v = e.evaluate(tcp(WEB, DB, 5432));
    expect(v.allowed).toBe(true);
    const ing = v.ingress!;
    expect(ing.tiers.map((t) => [t.name, t.result, t.by])).toEqual([
      ['security', 'Pass', 'rule'],
      ['default', 'Allow', 'rule'],
    ]);
    const sec = ing.tiers[0]!.policies[0]!;
    expect(sec.selection).toEqual([
      { what: "selector app == 'db'", ok: true, on: 'labels of shop/node1-k8s-db-eth0' },
    ]);
    expect(sec.rules.map((r) => [r.action, r.matched, r.checks.map((c) => `${c.what} ${c.ok}`)])).toEqual([
      ['Deny', false, ['protocol UDP false']],
      ['Pass', true, ["source.selector app == 'web' true"]],
    ]);
    expect(ing.decision).toEqual({ kind: 'rule', tier: 'default', policy: 'NetworkPolicy shop/db', rule: 0 });
    expect(ing.reason).toBe('tier default: NetworkPolicy shop/db ingress[0] Allow');
    // The egress of web has no policy: its profile decides.
    expect(v.egress!.decision).toEqual({ kind: 'profile', profile: 'kns.shop', rule: 0 });
    expect(v.egress!.tiers).toEqual([]);
  });

  it('ends a Deny tier with the tier default, a Pass tier on to the profiles', () => {
    const sel = gnp('only-dns', {
      tier: 'security',
      selector: "app == 'db'",
      types: ['Ingress'],
      ingress: [{ action: 'Allow', protocol: 'UDP', destination: { ports: [53] } }],
    });
    const denied = evaluator({ globalNetworkPolicies: [sel] }).evaluate(tcp(WEB, DB, 5432)).ingress!;
    expect(denied.allowed).toBe(false);
    expect(denied.decision).toEqual({ kind: 'end-of-tier', tier: 'security' });
    expect(denied.tiers[0]!.by).toBe('end-of-tier');
    expect(denied.profiles).toEqual([]);

    const passing = evaluator({
      globalNetworkPolicies: [{ ...sel, spec: { ...sel.spec, tier: 'platform' } }],
    }).evaluate(tcp(WEB, DB, 5432)).ingress!;
    expect(passing.allowed).toBe(true);
    expect(passing.tiers.map((t) => [t.name, t.result, t.by])).toEqual([['platform', 'Pass', 'end-of-tier']]);
    expect(passing.decision).toEqual({ kind: 'profile', profile: 'kns.shop', rule: 0 });
    expect(passing.reason).toBe(
      'passed (end of tier platform (defaultAction Pass)), so profiles decide; profile kns.shop ingress[0] Allow',
    );
  });

  it('says which policies do not select the endpoint, with the selector that failed and on what', () => {
    const v = evaluator({
      networkPolicies: [np('web-only', { selector: "app == 'web'", types: ['Ingress'], ingress: allowAll })],
      globalNetworkPolicies: [
        gnp('blue', {
          selector: 'all()',
          namespaceSelector: "team == 'blue'",
          types: ['Ingress'],
          ingress: allowAll,
        }),
      ],
    }).evaluate(tcp(WEB, DB, 80));
    const failed = v.ingress!.notSelecting.map((p) => [p.name, p.selection.filter((c) => !c.ok)]);
    expect(failed).toEqual([
      ['web-only', [{ what: "selector app == 'web'", ok: false, on: 'labels of shop/node1-k8s-db-eth0' }]],
      [
        'blue',
        [
          {
            what: "namespaceSelector team == 'blue'",
            ok: false,
            on: 'labels of namespace shop {projectcalico.org/name=shop, team=red}',
          },
        ],
      ],
    ]);
    expect(v.destination?.labels).toMatchObject({
      app: 'db',
      'pcns.team': 'red',
      'projectcalico.org/namespace': 'shop',
    });
  });

  it('matches a named port on the port the destination declares, and shows the declaration', () => {
    const e = evaluator({
      networkPolicies: [
        np('http', {
          selector: "app == 'web'",
          types: ['Ingress'],
          ingress: [{ action: 'Allow', protocol: 'TCP', destination: { ports: ['http'] } }],
        }),
      ],
    });
    const hit = e.evaluate(tcp(DB, WEB, 80)).ingress!;
    expect(hit.allowed).toBe(true);
    expect(hit.tiers[0]!.policies[0]!.rules[0]!.checks.at(-1)).toEqual({
      what: 'destination.ports http',
      ok: true,
      on: 'port 80; shop/node1-k8s-web-eth0 declares tcp http=80',
    });
    const miss = e.evaluate(tcp(DB, WEB, 8080)).ingress!;
    expect(miss.allowed).toBe(false);
    expect(miss.tiers[0]!.policies[0]!.rules[0]!.checks.at(-1)?.ok).toBe(false);
  });

  it('fails closed on an http match: the Allow rule matches nothing and says why', () => {
    const v = evaluator({
      networkPolicies: [
        np('get', {
          selector: "app == 'web'",
          types: ['Ingress'],
          ingress: [{ action: 'Allow', http: { methods: ['GET'] } }],
        }),
      ],
    }).evaluate(tcp(DB, WEB, 80)).ingress!;
    expect(v.allowed).toBe(false);
    expect(v.tiers[0]!.policies[0]!.rules[0]!.checks[0]).toMatchObject({
      ok: false,
      what: 'http match or unknown field',
    });
  });

  it('profiles: none allowing denies; a missing profile is shown as missing', () => {
    const e = new PolicyEvaluator({
      workloadEndpoints: [
        {
          ...pod('web', WEB, {}),
          spec: { ...pod('web', WEB, {}).spec, profiles: ['ghost', 'ksa.shop.frontend'] },
        },
        pod('db', DB, {}),
      ],
      profiles: PROFILES,
      tiers: [],
      networkPolicies: [],
      globalNetworkPolicies: [],
    });
    const eg = e.evaluate(tcp(WEB, DB, 80)).egress!;
    expect(eg.allowed).toBe(false);
    expect(eg.decision).toEqual({ kind: 'no-profile' });
    expect(eg.profiles.map((p) => [p.name, p.found, p.result])).toEqual([
      ['ghost', false, 'none'],
      ['ksa.shop.frontend', true, 'none'],
    ]);
  });

  it('staged: Set replaces the enforced policy of the same name, Delete removes one, a new one joins its tier', () => {
    const denyWeb = np('db-in', {
      selector: "app == 'db'",
      types: ['Ingress'],
      ingress: [{ action: 'Deny' }],
    });
    const set: StagedNetworkPolicy = {
      apiVersion: V3,
      kind: 'StagedNetworkPolicy',
      metadata: { name: 'db-in', namespace: 'shop' },
      spec: { selector: "app == 'db'", types: ['Ingress'], ingress: [{ action: 'Allow' }] },
    };
    const v = evaluator({ networkPolicies: [denyWeb], stagedNetworkPolicies: [set] }).evaluate(
      tcp(WEB, DB, 80),
    );
    expect(v.allowed).toBe(false);
    expect(v.stagedAllowed).toBe(true);
    const staged = v.ingress!.staged!;
    expect(staged.policies).toEqual([
      { kind: 'StagedNetworkPolicy', name: 'db-in', namespace: 'shop', stagedAction: 'Set' },
    ]);
    expect(staged.tiers[0]!.policies.map((p) => [p.kind, p.stagedAction, p.result])).toEqual([
      ['StagedNetworkPolicy', 'Set', 'Allow'],
    ]);
    // The egress of web has no staged policy: no staged trace there.
    expect(v.egress!.staged).toBeUndefined();

    const del: StagedNetworkPolicy = { ...set, spec: { ...set.spec, stagedAction: 'Delete' } };
    const d = evaluator({ networkPolicies: [denyWeb], stagedNetworkPolicies: [del] }).evaluate(
      tcp(WEB, DB, 80),
    );
    expect(d.stagedAllowed).toBe(true);
    expect(d.ingress!.staged!.decision).toEqual({ kind: 'profile', profile: 'kns.shop', rule: 0 });

    const newDeny: StagedGlobalNetworkPolicy = {
      apiVersion: V3,
      kind: 'StagedGlobalNetworkPolicy',
      metadata: { name: 'lockdown' },
      spec: { tier: 'security', selector: 'all()', types: ['Egress'], egress: [{ action: 'Deny' }] },
    };
    const n = evaluator({ stagedGlobalNetworkPolicies: [newDeny] }).evaluate(tcp(WEB, DB, 80));
    expect([n.allowed, n.stagedAllowed]).toEqual([true, false]);
    expect(n.egress!.staged!.reason).toBe('tier security: StagedGlobalNetworkPolicy lockdown egress[0] Deny');
    // A staged policy never changes the enforced verdict, and Learn/Ignore stage nothing.
    const learn = evaluator({
      stagedGlobalNetworkPolicies: [{ ...newDeny, spec: { ...newDeny.spec, stagedAction: 'Learn' } }],
    });
    expect(learn.evaluate(tcp(WEB, DB, 80)).egress!.staged).toBeUndefined();
  });

  it('staged Kubernetes NetworkPolicy: converted as kube-controllers would, standing in for knp.default.<name>', () => {
    const sknp: StagedKubernetesNetworkPolicy = {
      apiVersion: V3,
      kind: 'StagedKubernetesNetworkPolicy',
      metadata: { name: 'db-deny', namespace: 'shop' },
      spec: { podSelector: { matchLabels: { app: 'db' } }, policyTypes: ['Ingress'] },
    } as StagedKubernetesNetworkPolicy;
    const v = evaluator({ stagedKubernetesNetworkPolicies: [sknp] }).evaluate(tcp(WEB, DB, 80));
    expect([v.allowed, v.stagedAllowed]).toEqual([true, false]);
    const s = v.ingress!.staged!;
    expect(s.policies).toEqual([
      {
        kind: 'StagedKubernetesNetworkPolicy',
        name: 'knp.default.db-deny',
        namespace: 'shop',
        stagedAction: 'Set',
      },
    ]);
    expect(s.decision).toEqual({ kind: 'end-of-tier', tier: 'default' });
  });

  it('host endpoints: their policy in their direction, global() selects them, preDNAT is left out, no profile denies', () => {
    const ingressToHost = gnp('host-ssh', {
      selector: "role == 'node'",
      types: ['Ingress'],
      ingress: [
        {
          action: 'Allow',
          protocol: 'TCP',
          source: { namespaceSelector: "team == 'red'" },
          destination: { ports: [22] },
        },
      ],
    });
    const preDnat = gnp('pre', {
      selector: "role == 'node'",
      preDNAT: true,
      applyOnForward: true,
      types: ['Ingress'],
      ingress: [{ action: 'Deny' }],
    });
    const e = evaluator({ globalNetworkPolicies: [ingressToHost, preDnat] });
    const ssh = e.evaluate(tcp(WEB, HOST, 22));
    expect(ssh.allowed).toBe(true);
    expect(ssh.ingress!.endpoint).toBe('hostendpoint/node1-eth0');
    expect(ssh.ingress!.endpointKind).toBe('HostEndpoint');
    expect(ssh.ingress!.tiers[0]!.policies.map((p) => p.name)).toEqual(['host-ssh']);
    // From the host: its egress has no policy and no profile.
    const out = e.evaluate(tcp(HOST, WEB, 80));
    expect(out.egress!.decision).toEqual({ kind: 'no-profile' });
    expect(out.allowed).toBe(false);
    // A rule's namespaceSelector global() matches the host endpoint, not a pod.
    const fromHost = evaluator({
      networkPolicies: [
        np('from-hosts', {
          selector: "app == 'web'",
          types: ['Ingress'],
          ingress: [{ action: 'Allow', source: { namespaceSelector: 'global()' } }],
        }),
      ],
    });
    const r = fromHost.evaluate(tcp(HOST, WEB, 80)).ingress!;
    expect(r.allowed).toBe(true);
    expect(fromHost.evaluate(tcp(DB, WEB, 80)).ingress!.allowed).toBe(false);
  });
});
