/**
 * Whole-state tests of the calculation graph, in the style of upstream felix/calc/state_test.go:
 * each state is a complete set of datastore resources with the complete expected output. Every
 * state is reached from empty and from every other state, and the incremental result must equal
 * both the expectation and a graph built from scratch.
 */
import { describe, expect, it } from 'vitest';
import { CalcGraph } from './calc-graph.js';
import { applyDataplaneDiff, emptyDataplaneState } from './dataplane-state.js';
import {
  allow,
  deny,
  globalNetSet,
  gnp,
  hep,
  netSet,
  np,
  pool,
  profile,
  resourceKey,
  tier,
  wep,
} from './testing-internal/resources.js';
import type { CalcResource, DataplaneState, EndpointState } from './types.js';

interface Expected {
  /** Endpoint key → one line per tier: `name(action) in:[..] out:[..]`, then `profiles:[..]`. */
  endpoints: Record<string, string[]>;
  policies: string[];
  profiles: string[];
  /** `selector` or `selector#name/proto` → members. */
  ipSets: Record<string, string[]>;
  pools?: string[];
}

interface TestState {
  name: string;
  resources: CalcResource[];
  expected: Expected;
}

function summarizeEndpoint(e: EndpointState): string[] {
  const line = (prefix: string) => (t: EndpointState['tiers'][number]) =>
    `${prefix}${t.name}(${t.defaultAction}) in:[${t.ingressPolicies.join(',')}] out:[${t.egressPolicies.join(',')}]`;
  return [
    ...e.tiers.map(line('')),
    ...e.forwardTiers.map(line('fwd ')),
    ...e.untrackedTiers.map(line('untracked ')),
    ...e.preDNATTiers.map(line('preDNAT ')),
    `profiles:[${e.profileIds.join(',')}]`,
  ];
}

function summarize(s: DataplaneState): Expected {
  const ipSets: Record<string, string[]> = {};
  for (const set of Object.values(s.ipSets)) {
    const key = set.namedPort
      ? `${set.selector}#${set.namedPort.name}/${set.namedPort.protocol}`
      : set.selector;
    ipSets[key] = [...set.members];
  }
  const endpoints: Record<string, string[]> = {};
  for (const e of Object.values(s.endpoints)) endpoints[e.key] = summarizeEndpoint(e);
  return {
    endpoints,
    policies: Object.keys(s.policies).sort(),
    profiles: Object.keys(s.profiles).sort(),
    ipSets,
    pools: Object.keys(s.pools).sort(),
  };
}

/** Moves `g` from the resources in `from` to those in `to`, as a datastore watch would. */
function transition(g: CalcGraph, from: CalcResource[], to: CalcResource[]): void {
  const next = new Map(to.map((r) => [resourceKey(r), r]));
  const prev = new Map(from.map((r) => [resourceKey(r), r]));
  for (const [k, r] of prev) if (!next.has(k)) g.onUpdate({ kind: 'delete', resource: r });
  for (const [k, r] of next) {
    if (JSON.stringify(prev.get(k)) !== JSON.stringify(r)) g.onUpdate({ kind: 'set', resource: r });
  }
}

const web = { app: 'web' };

const tierStates: TestState[] = [
  {
    name: 'tiers ordered by order then name, unset order last; policies likewise',
    resources: [
      tier('t-high', 10),
      tier('t-low', 100),
      tier('t-unordered', undefined),
      tier('default', 1_000_000, 'Deny'),
      wep('ns1', 'wep1', { labels: web, ips: ['10.0.0.1/32'] }),
      wep('ns1', 'wep2', { node: 'node2', labels: { app: 'db' }, ips: ['10.0.1.1'] }),
      gnp('t-low.b', { tier: 't-low', order: 5, selector: "app == 'web'", ingress: [deny] }),
      gnp('t-low.a', {
        tier: 't-low',
        order: 5,
        selector: 'all()',
        ingress: [{ action: 'Allow', source: { selector: "app == 'db'" } }],
      }),
      gnp('t-high.x', { tier: 't-high', order: 1, selector: 'has(app)', egress: [{ action: 'Pass' }] }),
      gnp('default.z', { selector: "app == 'web'", ingress: [deny] }),
      gnp('default.y', { order: 1000, selector: "app == 'nope'", ingress: [allow] }),
      gnp('t-unordered.u', { tier: 't-unordered', selector: 'all()', ingress: [allow] }),
    ],
    expected: {
      endpoints: {
        'wep/ns1/wep1': [
          't-high(Deny) in:[] out:[gnp/t-high.x]',
          't-low(Deny) in:[gnp/t-low.a,gnp/t-low.b] out:[]',
          'default(Deny) in:[gnp/default.z] out:[]',
          't-unordered(Deny) in:[gnp/t-unordered.u] out:[]',
          'profiles:[]',
        ],
      },
      policies: ['gnp/default.z', 'gnp/t-high.x', 'gnp/t-low.a', 'gnp/t-low.b', 'gnp/t-unordered.u'],
      profiles: [],
      ipSets: { 'app == "db"': ['10.0.1.1/32'] },
    },
  },
];

// The same cluster after wep1's label changed from web to db.
const relabelled: TestState = {
  name: 'label change moves an endpoint between policies and IP sets',
  resources: tierStates[0]!.resources.map((r) =>
    r.kind === 'WorkloadEndpoint' && r.metadata.name === 'wep1'
      ? wep('ns1', 'wep1', { labels: { app: 'db' }, ips: ['10.0.0.1/32'] })
      : r,
  ),
  expected: {
    endpoints: {
      'wep/ns1/wep1': [
        't-high(Deny) in:[] out:[gnp/t-high.x]',
        't-low(Deny) in:[gnp/t-low.a] out:[]',
        't-unordered(Deny) in:[gnp/t-unordered.u] out:[]',
        'profiles:[]',
      ],
    },
    policies: ['gnp/t-high.x', 'gnp/t-low.a', 'gnp/t-unordered.u'],
    profiles: [],
    ipSets: { 'app == "db"': ['10.0.0.1/32', '10.0.1.1/32'] },
  },
};

const namespaceState: TestState = {
  name: 'profiles, labelsToApply, namespaceSelector and the implicit namespace of a NetworkPolicy',
  resources: [
    profile('kns.prod', { labelsToApply: { 'pcns.env': 'prod' }, ingress: [allow], egress: [allow] }),
    profile('kns.dev', { labelsToApply: { 'pcns.env': 'dev' }, ingress: [allow], egress: [allow] }),
    wep('prod', 'web', { labels: web, profiles: ['kns.prod'], ips: ['10.0.0.2/32'] }),
    wep('dev', 'web', { node: 'node2', labels: web, profiles: ['kns.dev'], ips: ['10.0.0.3/32'] }),
    gnp('ns-sel', {
      namespaceSelector: "env == 'prod'",
      selector: 'all()',
      ingress: [{ action: 'Allow', source: { namespaceSelector: "env == 'dev'" } }],
    }),
    np('prod', 'allow-same-ns', {
      selector: 'all()',
      ingress: [{ action: 'Allow', source: { selector: "app == 'web'" } }],
    }),
    np('dev', 'other-ns', { selector: 'all()', ingress: [allow] }),
  ],
  expected: {
    endpoints: {
      'wep/prod/web': ['default(Deny) in:[np/prod/allow-same-ns,gnp/ns-sel] out:[]', 'profiles:[kns.prod]'],
    },
    policies: ['gnp/ns-sel', 'np/prod/allow-same-ns'],
    profiles: ['kns.prod'],
    ipSets: {
      'pcns.env == "dev"': ['10.0.0.3/32'],
      '(projectcalico.org/namespace == "prod" && app == "web")': ['10.0.0.2/32'],
    },
  },
};

const passState: TestState = {
  name: 'Pass to the next tier, and profiles reached only when no tier applies',
  resources: [
    tier('security', 1, 'Pass'),
    profile('kns.a', { ingress: [allow] }),
    wep('a', 'one', { labels: { tier: 'one' }, profiles: ['kns.a', 'missing'], ips: ['10.0.3.1/32'] }),
    wep('a', 'two', { labels: {}, profiles: ['kns.a'], ips: ['10.0.3.2/32'] }),
    gnp('security.pass', { tier: 'security', selector: 'has(tier)', ingress: [{ action: 'Pass' }] }),
    gnp('default.after', { selector: 'has(tier)', ingress: [allow] }),
  ],
  expected: {
    endpoints: {
      'wep/a/one': [
        'security(Pass) in:[gnp/security.pass] out:[]',
        'default(Deny) in:[gnp/default.after] out:[]',
        'profiles:[kns.a]',
      ],
      'wep/a/two': ['profiles:[kns.a]'],
    },
    policies: ['gnp/default.after', 'gnp/security.pass'],
    profiles: ['kns.a'],
    ipSets: {},
  },
};

const portsState: TestState = {
  name: 'named ports, nets/notNets and network sets',
  resources: [
    wep('default', 'a', {
      labels: { role: 'server' },
      ips: ['10.0.0.5/32', 'fd00::5/128'],
      ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
    }),
    wep('default', 'b', {
      node: 'node2',
      labels: { role: 'server' },
      ips: ['10.0.2.5/32'],
      ports: [
        { name: 'http', protocol: 'TCP', port: 9090 },
        { name: 'http', protocol: 'UDP', port: 53 },
      ],
    }),
    netSet('default', 'ext', { kind: 'ext' }, ['192.0.2.0/24']),
    globalNetSet('gext', { kind: 'ext' }, ['198.51.100.0/24']),
    gnp('named', {
      selector: "role == 'server'",
      ingress: [
        {
          action: 'Allow',
          protocol: 'TCP',
          source: { nets: ['10.0.0.0/8'], notNets: ['10.9.0.0/16'] },
          destination: { selector: "role == 'server'", ports: ['http'] },
        },
      ],
      egress: [{ action: 'Allow', destination: { selector: "kind == 'ext'" } }],
    }),
    pool('p1', '10.0.0.0/16', true),
  ],
  expected: {
    endpoints: {
      'wep/default/a': ['default(Deny) in:[gnp/named] out:[gnp/named]', 'profiles:[]'],
    },
    policies: ['gnp/named'],
    profiles: [],
    ipSets: {
      'role == "server"#http/tcp': ['10.0.0.5,tcp:8080', '10.0.2.5,tcp:9090', 'fd00::5,tcp:8080'],
      'kind == "ext"': ['192.0.2.0/24', '198.51.100.0/24'],
    },
    pools: ['p1'],
  },
};

const hostState: TestState = {
  name: 'types defaulting, explicit types and host endpoints with applyOnForward',
  resources: [
    hep('h1', { labels: { host: 'yes' }, ips: ['198.18.0.1'] }),
    hep('h2', { node: 'node2', labels: { host: 'yes' }, ips: ['198.18.0.2'] }),
    gnp('egress-only', { selector: 'has(host)', egress: [allow] }),
    gnp('both', { selector: 'has(host)', ingress: [allow], egress: [allow] }),
    gnp('explicit', { selector: 'has(host)', types: ['Ingress'], egress: [allow] }),
    gnp('no-rules', { selector: 'has(host)' }),
    gnp('aof', { selector: 'has(host)', applyOnForward: true, ingress: [allow] }),
  ],
  expected: {
    endpoints: {
      'hep/h1': [
        'default(Deny) in:[gnp/aof,gnp/both,gnp/explicit,gnp/no-rules] out:[gnp/both,gnp/egress-only]',
        'fwd default(Deny) in:[gnp/aof] out:[]',
        'profiles:[]',
      ],
    },
    policies: ['gnp/aof', 'gnp/both', 'gnp/egress-only', 'gnp/explicit', 'gnp/no-rules'],
    profiles: [],
    ipSets: {},
  },
};

const untrackedState: TestState = {
  name: 'doNotTrack and preDNAT policies apply to host endpoints only, in their own tiers',
  resources: [
    tier('t', 5),
    hep('h1', { labels: { host: 'yes' }, ips: ['198.18.0.1'] }),
    wep('ns', 'w', { labels: { host: 'yes' }, ips: ['198.19.0.1/32'] }),
    gnp('normal', { selector: 'has(host)', ingress: [allow] }),
    gnp('dnt', {
      selector: 'has(host)',
      doNotTrack: true,
      applyOnForward: true,
      ingress: [allow],
      egress: [deny],
    }),
    gnp('t.dnt', {
      tier: 't',
      selector: 'has(host)',
      doNotTrack: true,
      applyOnForward: true,
      egress: [allow],
    }),
    gnp('pre', { selector: 'has(host)', preDNAT: true, applyOnForward: true, ingress: [deny] }),
    // An egress type on a pre-DNAT policy (rejected by validation) is ignored.
    gnp('pre-egress', {
      selector: 'has(host)',
      preDNAT: true,
      applyOnForward: true,
      types: ['Ingress', 'Egress'],
      ingress: [allow],
      egress: [deny],
    }),
  ],
  expected: {
    endpoints: {
      'hep/h1': [
        'default(Deny) in:[gnp/normal] out:[]',
        'untracked t(Deny) in:[] out:[gnp/t.dnt]',
        'untracked default(Deny) in:[gnp/dnt] out:[gnp/dnt]',
        'preDNAT default(Deny) in:[gnp/pre-egress,gnp/pre] out:[]',
        'profiles:[]',
      ],
      'wep/ns/w': ['default(Deny) in:[gnp/normal] out:[]', 'profiles:[]'],
    },
    policies: ['gnp/dnt', 'gnp/normal', 'gnp/pre', 'gnp/pre-egress', 'gnp/t.dnt'],
    profiles: [],
    ipSets: {},
  },
};

const empty: TestState = {
  name: 'empty',
  resources: [],
  expected: { endpoints: {}, policies: [], profiles: [], ipSets: {} },
};

const states = [
  empty,
  ...tierStates,
  relabelled,
  namespaceState,
  passState,
  portsState,
  hostState,
  untrackedState,
];

function expectState(actual: DataplaneState, expected: Expected): void {
  const s = summarize(actual);
  expect(s.endpoints).toEqual(expected.endpoints);
  expect(s.policies).toEqual(expected.policies);
  expect(s.profiles).toEqual(expected.profiles);
  expect(s.ipSets).toEqual(expected.ipSets);
  expect(s.pools).toEqual(expected.pools ?? []);
}

describe('CalcGraph state transitions', () => {
  for (const st of states) {
    it(`from empty: ${st.name}`, () => {
      const g = new CalcGraph({ hostname: 'node1' });
      transition(g, [], st.resources);
      const diff = g.flush();
      expectState(g.state(), st.expected);
      // The diff from nothing is the whole state.
      expect(applyDataplaneDiff(emptyDataplaneState(), diff)).toEqual(g.state());
    });
  }

  for (const a of states) {
    for (const b of states) {
      if (a === b) continue;
      it(`${a.name} → ${b.name}`, () => {
        const g = new CalcGraph({ hostname: 'node1' });
        transition(g, [], a.resources);
        let acc = applyDataplaneDiff(emptyDataplaneState(), g.flush());
        transition(g, a.resources, b.resources);
        acc = applyDataplaneDiff(acc, g.flush());
        expectState(g.state(), b.expected);
        expect(acc).toEqual(g.state());
        const fresh = new CalcGraph({ hostname: 'node1' });
        transition(fresh, [], b.resources);
        fresh.flush();
        expect(g.state()).toEqual(fresh.state());
      });
    }
  }

  it('breaks order ties by the text name/namespace/kind, as upstream', () => {
    const g = new CalcGraph({ hostname: 'node1' });
    transition(
      g,
      [],
      [
        wep('ns', 'w', { labels: { a: 'b' } }),
        gnp('ab', { order: 5, selector: 'all()', ingress: [allow] }),
        gnp('ab-c', { order: 5, selector: 'all()', ingress: [allow] }),
        np('ns', 'ab', { order: 5, selector: 'all()', ingress: [allow] }),
      ],
    );
    g.flush();
    // "ab-c/..." < "ab//..." < "ab/ns/..." because '-' sorts before '/', and '/' before 'n'.
    expect(g.state().endpoints['wep/ns/w']!.tiers[0]!.ingressPolicies).toEqual([
      'gnp/ab-c',
      'gnp/ab',
      'np/ns/ab',
    ]);
  });

  it('a flush with nothing changed is empty, and in-sync is reported once seen', () => {
    const g = new CalcGraph({ hostname: 'node1' });
    transition(g, [], portsState.resources);
    expect(g.flush().inSync).toBe(false);
    g.onUpdate({ kind: 'in-sync' });
    const d = g.flush();
    expect(d.inSync).toBe(true);
    expect(d.ipSetsUpdated).toEqual([]);
    expect(d.endpointsUpdated).toEqual([]);
  });

  it('add and remove within one batch cancel out', () => {
    const g = new CalcGraph({ hostname: 'node1' });
    transition(g, [], tierStates[0]!.resources);
    g.flush();
    const extra = gnp('default.extra', {
      selector: 'all()',
      ingress: [{ action: 'Allow', source: { selector: 'has(x)' } }],
    });
    g.onUpdate({ kind: 'set', resource: extra });
    g.onUpdate({ kind: 'delete', resource: extra });
    const d = g.flush();
    expect(d.policiesUpdated).toEqual([]);
    expect(d.policiesRemoved).toEqual([]);
    expect(d.ipSetsUpdated).toEqual([]);
    expect(d.endpointsUpdated).toEqual([]);
  });
});

describe('all-interfaces ("*") host endpoints', () => {
  it('keeps this node\'s "*" host endpoint, with its policies and profiles, and no other node\'s', () => {
    const g = new CalcGraph({ hostname: 'node1' });
    transition(
      g,
      [],
      [
        profile('projectcalico-default-allow', { ingress: [allow], egress: [allow] }),
        hep('node1-auto-hep', {
          labels: { auto: 'yes' },
          ips: ['198.18.0.1'],
          iface: '*',
          profiles: ['projectcalico-default-allow'],
        }),
        hep('node2-auto-hep', { node: 'node2', labels: { auto: 'yes' }, ips: ['198.18.0.2'], iface: '*' }),
        gnp('host', { selector: 'has(auto)', ingress: [deny] }),
        gnp('fwd', { selector: 'has(auto)', applyOnForward: true, ingress: [allow] }),
        gnp('pre', { selector: 'has(auto)', preDNAT: true, applyOnForward: true, ingress: [deny] }),
      ],
    );
    g.flush();
    const s = g.state();
    expect(Object.keys(s.endpoints)).toEqual(['hep/node1-auto-hep']);
    const ep = s.endpoints['hep/node1-auto-hep']!;
    expect(ep.interfaceName).toBe('*');
    expect(summarizeEndpoint(ep)).toEqual([
      'default(Deny) in:[gnp/fwd,gnp/host] out:[]',
      'fwd default(Deny) in:[gnp/fwd] out:[]',
      'preDNAT default(Deny) in:[gnp/pre] out:[]',
      'profiles:[projectcalico-default-allow]',
    ]);
  });
});
