/**
 * Every field of the types that decide what traffic passes — policy specs, rules, entity rules,
 * profiles, host and workload endpoints — has a recorded decision (`@calico-ts/api`'s enforcement
 * tables), and Felix does what the decision says:
 *   - rendered:    setting the field changes the ruleset, and for a rule field, what an Allow
 *                  matches only shrinks (every match of the rule without it is still there);
 *   - fail-closed: an Allow, Pass or Log rule using it renders to nothing; a Deny rule renders as
 *                  without it; an endpoint field changes nothing it could open;
 *   - inert:       the ruleset is byte-for-byte the same.
 * The field lists come from the zod schemas, so a field added to a schema without a decision (and
 * a sample value here) fails this test.
 */

import type { Rule } from '@calico-ts/api';
import {
  ENTITY_RULE_FIELDS,
  entityRuleSchema,
  type FieldHandling,
  GLOBAL_NETWORK_POLICY_SPEC_FIELDS,
  globalNetworkPolicySpecSchema,
  HOST_ENDPOINT_SPEC_FIELDS,
  HTTP_MATCH_FIELDS,
  hostEndpointSpecSchema,
  httpMatchSchema,
  ICMP_FIELDS,
  icmpFieldsSchema,
  NETWORK_POLICY_SPEC_FIELDS,
  networkPolicySpecSchema,
  PROFILE_SPEC_FIELDS,
  profileSpecSchema,
  RULE_FIELDS,
  ruleSchema,
  SERVICE_ACCOUNT_MATCH_FIELDS,
  SERVICE_MATCH_FIELDS,
  serviceAccountMatchSchema,
  serviceMatchSchema,
  WORKLOAD_ENDPOINT_SPEC_FIELDS,
  workloadEndpointSpecSchema,
} from '@calico-ts/api/internal';
import { describe, expect, it } from 'vitest';
import { CalcGraph } from './calc/calc-graph.js';
import { scanRules } from './calc/rule-scanner.js';
import { gnp, hep, np, profile, tier, wep } from './calc/testing-internal/resources.js';
import type { CalcResource } from './calc/types.js';
import { allocateMarks, DEFAULT_RULES_CONFIG } from './rules/config.js';
import type { IpFamily } from './rules/names.js';
import { renderPolicyRules } from './rules/policy-renderer.js';
import { renderRuleset } from './rules/ruleset-renderer.js';

type Shape = { readonly shape: Record<string, unknown> };
const fieldsOf = (schema: unknown): string[] => Object.keys((schema as Shape).shape).sort();

const TABLES: [string, unknown, Readonly<Record<string, FieldHandling>>][] = [
  ['Rule', ruleSchema, RULE_FIELDS],
  ['EntityRule', entityRuleSchema, ENTITY_RULE_FIELDS],
  ['ICMPFields', icmpFieldsSchema, ICMP_FIELDS],
  ['ServiceMatch', serviceMatchSchema, SERVICE_MATCH_FIELDS],
  ['ServiceAccountMatch', serviceAccountMatchSchema, SERVICE_ACCOUNT_MATCH_FIELDS],
  ['HTTPMatch', httpMatchSchema, HTTP_MATCH_FIELDS],
  ['NetworkPolicySpec', networkPolicySpecSchema, NETWORK_POLICY_SPEC_FIELDS],
  ['GlobalNetworkPolicySpec', globalNetworkPolicySpecSchema, GLOBAL_NETWORK_POLICY_SPEC_FIELDS],
  ['ProfileSpec', profileSpecSchema, PROFILE_SPEC_FIELDS],
  ['HostEndpointSpec', hostEndpointSpecSchema, HOST_ENDPOINT_SPEC_FIELDS],
  ['WorkloadEndpointSpec', workloadEndpointSpecSchema, WORKLOAD_ENDPOINT_SPEC_FIELDS],
];

describe('every schema field has an enforcement decision', () => {
  it.each(TABLES)('%s', (_name, schema, table) => {
    const fields = fieldsOf(schema);
    expect(fields.length).toBeGreaterThan(0);
    expect(
      fields.filter((f) => !Object.hasOwn(table, f)),
      'schema fields without a decision',
    ).toEqual([]);
    expect(
      Object.keys(table).filter((f) => !fields.includes(f)),
      'decisions for fields the schema does not have',
    ).toEqual([]);
  });
});

// ---- rule-level fields: rendered through the rule scanner and the policy renderer -------------

const marks = allocateMarks(DEFAULT_RULES_CONFIG.markMask);
const FAMILIES: IpFamily[] = ['ip', 'ip6'];

/** The nft rules one ingress rule of a NetworkPolicy in namespace `app` renders to, per family. */
function render(rule: Rule): Record<IpFamily, string[][]> {
  const scanned = scanRules([rule], [], 'app');
  const out = {} as Record<IpFamily, string[][]>;
  for (const family of FAMILIES) {
    out[family] = renderPolicyRules(scanned.inbound, { family, marks, logPrefix: 'calico-packet' }).map((r) =>
      r.expr.map((e) => JSON.stringify(e)),
    );
  }
  return out;
}

/**
 * For a field: the rule without it (`base`) and the rule with it (`with`). Both are valid rules
 * (protocols and ICMP types that the field needs are in the base).
 */
interface Sample {
  readonly base: Rule;
  readonly with: Rule;
}

const allow = (extra: Partial<Rule> = {}): Rule => ({ action: 'Allow', ...extra });

const RULE_SAMPLES: Record<string, Sample> = {
  action: { base: allow(), with: { action: 'Deny' } },
  ipVersion: { base: allow(), with: allow({ ipVersion: 4 }) },
  protocol: { base: allow(), with: allow({ protocol: 'TCP' }) },
  icmp: { base: allow({ protocol: 'ICMP' }), with: allow({ protocol: 'ICMP', icmp: { type: 8 } }) },
  notProtocol: { base: allow(), with: allow({ notProtocol: 'UDP' }) },
  notICMP: { base: allow({ protocol: 'ICMP' }), with: allow({ protocol: 'ICMP', notICMP: { type: 0 } }) },
  source: { base: allow(), with: allow({ source: { nets: ['198.18.5.0/24'] } }) },
  destination: { base: allow(), with: allow({ destination: { nets: ['198.18.6.0/24'] } }) },
  http: { base: allow(), with: allow({ http: { methods: ['GET'] } }) },
  metadata: { base: allow(), with: allow({ metadata: { annotations: { owner: 'team-a' } } }) },
};

const ENTITY_SAMPLES: Record<string, Sample> = {
  nets: { base: allow(), with: allow({ source: { nets: ['198.18.5.0/24'] } }) },
  selector: { base: allow(), with: allow({ source: { selector: "app == 'db'" } }) },
  namespaceSelector: { base: allow(), with: allow({ source: { namespaceSelector: "team == 'a'" } }) },
  services: {
    base: allow(),
    with: allow({ source: { services: { name: 'kube-dns', namespace: 'kube-system' } } }),
  },
  ports: { base: allow({ protocol: 'TCP' }), with: allow({ protocol: 'TCP', destination: { ports: [80] } }) },
  notNets: { base: allow(), with: allow({ source: { notNets: ['198.18.6.0/24'] } }) },
  notSelector: { base: allow(), with: allow({ source: { notSelector: "app == 'x'" } }) },
  notPorts: {
    base: allow({ protocol: 'TCP' }),
    with: allow({ protocol: 'TCP', destination: { notPorts: [81] } }),
  },
  serviceAccounts: { base: allow(), with: allow({ source: { serviceAccounts: { names: ['sa1'] } } }) },
};

/** Nested fields: two rules that differ in this field only, which must render differently. */
const NESTED_SAMPLES: Record<string, Record<string, [Rule, Rule]>> = {
  ICMPFields: {
    type: [allow({ protocol: 'ICMP', icmp: { type: 8 } }), allow({ protocol: 'ICMP', icmp: { type: 0 } })],
    code: [
      allow({ protocol: 'ICMP', icmp: { type: 3 } }),
      allow({ protocol: 'ICMP', icmp: { type: 3, code: 1 } }),
    ],
  },
  ServiceMatch: {
    name: [
      allow({ source: { services: { name: 'a', namespace: 'x' } } }),
      allow({ source: { services: { name: 'b', namespace: 'x' } } }),
    ],
    namespace: [
      allow({ source: { services: { name: 'a', namespace: 'x' } } }),
      allow({ source: { services: { name: 'a', namespace: 'y' } } }),
    ],
  },
  ServiceAccountMatch: {
    names: [
      allow({ source: { serviceAccounts: { selector: "role == 'x'" } } }),
      allow({ source: { serviceAccounts: { selector: "role == 'x'", names: ['sa1'] } } }),
    ],
    selector: [
      allow({ source: { serviceAccounts: { names: ['sa1'] } } }),
      allow({ source: { serviceAccounts: { names: ['sa1'], selector: "role == 'x'" } } }),
    ],
  },
};

/**
 * True if `narrow`, as a match, implies `wide`: no rule at all, or the one rule keeps every
 * statement of `wide` (and may add some).
 */
function onlyShrinks(wide: string[][], narrow: string[][]): boolean {
  if (narrow.length === 0) return true;
  if (wide.length !== 1 || narrow.length !== 1) return false;
  return wide[0]!.every((s) => narrow[0]!.includes(s));
}

function expectHandled(field: string, handling: FieldHandling, sample: Sample): void {
  const base = render(sample.base);
  const withField = render(sample.with);
  switch (handling.kind) {
    case 'rendered': {
      expect(withField, `${field}: the ruleset changes`).not.toEqual(base);
      if (field === 'action') {
        expect(withField.ip[0]!.at(-1)).toContain('drop');
        return;
      }
      for (const family of FAMILIES) {
        expect(
          onlyShrinks(base[family], withField[family]),
          `${field} (${family}): an Allow only narrows`,
        ).toBe(true);
      }
      return;
    }
    case 'fail-closed': {
      for (const action of ['Allow', 'Pass', 'Log'] as const) {
        const r = render({ ...sample.with, action });
        expect(r, `${field}: an ${action} rule with it matches nothing`).toEqual({ ip: [], ip6: [] });
      }
      const deny = render({ ...sample.with, action: 'Deny' });
      expect(deny, `${field}: a Deny rule applies its other criteria`).toEqual(
        render({ ...sample.base, action: 'Deny' }),
      );
      return;
    }
    case 'inert':
      expect(withField, `${field}: inert`).toEqual(base);
      return;
  }
}

describe('rule fields do what their decision says', () => {
  it.each(Object.entries(RULE_FIELDS))('Rule.%s', (field, handling) => {
    const sample = RULE_SAMPLES[field];
    expect(sample, `a sample for Rule.${field}`).toBeDefined();
    expectHandled(field, handling, sample!);
  });

  it.each(Object.entries(ENTITY_RULE_FIELDS))('EntityRule.%s', (field, handling) => {
    const sample = ENTITY_SAMPLES[field];
    expect(sample, `a sample for EntityRule.${field}`).toBeDefined();
    expectHandled(field, handling, sample!);
  });

  it.each(Object.entries(HTTP_MATCH_FIELDS))('HTTPMatch.%s', (field, handling) => {
    const value = field === 'methods' ? ['GET'] : [{ prefix: '/api' }];
    expectHandled(`http.${field}`, handling, { base: allow(), with: allow({ http: { [field]: value } }) });
  });

  const nested: [string, Readonly<Record<string, FieldHandling>>][] = [
    ['ICMPFields', ICMP_FIELDS],
    ['ServiceMatch', SERVICE_MATCH_FIELDS],
    ['ServiceAccountMatch', SERVICE_ACCOUNT_MATCH_FIELDS],
  ];
  for (const [type, table] of nested) {
    it.each(Object.entries(table))(`${type}.%s`, (field, handling) => {
      expect(handling.kind).toBe('rendered');
      const pair = NESTED_SAMPLES[type]?.[field];
      expect(pair, `a sample for ${type}.${field}`).toBeDefined();
      expect(render(pair![1])).not.toEqual(render(pair![0]));
    });
  }

  it('a key the dataplane does not know fails closed like an unenforced field', () => {
    const unknown = { action: 'Allow', source: { futureMatch: ['x'] } } as unknown as Rule;
    expect(render(unknown)).toEqual({ ip: [], ip6: [] });
    expect(render({ ...unknown, action: 'Deny' })).toEqual(render({ action: 'Deny' }));
    const topLevel = { action: 'Allow', l7: { sni: 'x' } } as unknown as Rule;
    expect(render(topLevel)).toEqual({ ip: [], ip6: [] });
  });
});

// ---- resource-level fields: the whole ruleset of a small node ----------------------------------

/** A node with one workload, one host endpoint, tiers, profiles and policies using every feature. */
function baseScene(): CalcResource[] {
  return [
    tier('sec', 100),
    profile('kns.app', {
      ingress: [{ action: 'Allow' }],
      egress: [{ action: 'Allow' }],
      labelsToApply: { 'pcns.team': 'a' },
    }),
    profile('kns.other', { ingress: [{ action: 'Deny' }] }),
    wep('app', 'web', {
      labels: { app: 'web', 'projectcalico.org/serviceaccount': 'sa1' },
      profiles: ['kns.app'],
      ips: ['198.19.0.2/32'],
      iface: 'caliweb',
      ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
    }),
    hep('node1-eth0', { labels: { role: 'host' }, ips: ['198.18.0.11'], iface: 'eth0' }),
    np('app', 'pol', {
      tier: 'default',
      order: 10,
      selector: "app == 'web' && projectcalico.org/orchestrator == 'k8s'",
      ingress: [
        { action: 'Allow', protocol: 'TCP', destination: { ports: ['http'] } },
        { action: 'Allow', source: { namespaceSelector: "team == 'a'" } },
      ],
    }),
    np('app', 'pol2', {
      tier: 'default',
      order: 20,
      selector: "app == 'web'",
      ingress: [{ action: 'Deny' }],
    }),
    gnp('g1', {
      selector: "role == 'host'",
      applyOnForward: true,
      order: 10,
      ingress: [
        { action: 'Allow', protocol: 'TCP', destination: { ports: [22] } },
        { action: 'Allow', source: { selector: "role == 'host'" } },
      ],
    }),
    gnp('g2', { selector: "role == 'host'", order: 20, ingress: [{ action: 'Deny' }] }),
  ];
}

function rulesetOf(resources: CalcResource[]): string {
  const g = new CalcGraph({ hostname: 'node1' });
  for (const r of resources) g.onUpdate({ kind: 'set', resource: r });
  g.onUpdate({ kind: 'in-sync' });
  g.flush();
  return JSON.stringify(renderRuleset(g.state(), { ...DEFAULT_RULES_CONFIG, ipv6Support: true }));
}

type Mutation = (scene: CalcResource[]) => void;

function spec(scene: CalcResource[], kind: string, name: string): Record<string, unknown> {
  const r = scene.find((x) => x.kind === kind && x.metadata.name === name);
  if (!r) throw new Error(`no ${kind} ${name} in the scene`);
  return (r as unknown as { spec: Record<string, unknown> }).spec;
}

const NP_MUTATIONS: Record<string, Mutation> = {
  tier: (s) => {
    spec(s, 'NetworkPolicy', 'pol').tier = 'sec';
  },
  order: (s) => {
    spec(s, 'NetworkPolicy', 'pol').order = 30;
  },
  ingress: (s) => {
    spec(s, 'NetworkPolicy', 'pol').ingress = [{ action: 'Allow', protocol: 'UDP' }];
  },
  egress: (s) => {
    spec(s, 'NetworkPolicy', 'pol').egress = [{ action: 'Allow' }];
    spec(s, 'NetworkPolicy', 'pol').types = ['Ingress', 'Egress'];
  },
  selector: (s) => {
    spec(s, 'NetworkPolicy', 'pol').selector = "app == 'db'";
  },
  types: (s) => {
    spec(s, 'NetworkPolicy', 'pol').types = ['Egress'];
  },
  serviceAccountSelector: (s) => {
    spec(s, 'NetworkPolicy', 'pol').serviceAccountSelector = "role == 'admin'";
  },
  performanceHints: (s) => {
    spec(s, 'NetworkPolicy', 'pol').performanceHints = ['AssumeNeededOnEveryNode'];
  },
};

const GNP_MUTATIONS: Record<string, Mutation> = {
  ...Object.fromEntries(
    Object.keys(NP_MUTATIONS).map((f) => [
      f,
      (s: CalcResource[]) => {
        const g = spec(s, 'GlobalNetworkPolicy', 'g1');
        const sample: Record<string, unknown> = {
          tier: 'sec',
          order: 30,
          ingress: [{ action: 'Allow', protocol: 'UDP' }],
          egress: [{ action: 'Allow' }],
          selector: "role == 'db'",
          types: ['Egress'],
          serviceAccountSelector: "role == 'admin'",
          performanceHints: ['AssumeNeededOnEveryNode'],
        };
        g[f] = sample[f];
        if (f === 'egress') g.types = ['Ingress', 'Egress'];
      },
    ]),
  ),
  doNotTrack: (s) => {
    spec(s, 'GlobalNetworkPolicy', 'g1').doNotTrack = true;
  },
  preDNAT: (s) => {
    spec(s, 'GlobalNetworkPolicy', 'g1').preDNAT = true;
  },
  applyOnForward: (s) => {
    spec(s, 'GlobalNetworkPolicy', 'g1').applyOnForward = false;
  },
  namespaceSelector: (s) => {
    spec(s, 'GlobalNetworkPolicy', 'g1').namespaceSelector = "team == 'a'";
  },
};

const PROFILE_MUTATIONS: Record<string, Mutation> = {
  ingress: (s) => {
    spec(s, 'Profile', 'kns.app').ingress = [{ action: 'Allow', protocol: 'TCP' }];
  },
  egress: (s) => {
    spec(s, 'Profile', 'kns.app').egress = [];
  },
  labelsToApply: (s) => {
    spec(s, 'Profile', 'kns.app').labelsToApply = { 'pcns.team': 'b' };
  },
};

const HEP_MUTATIONS: Record<string, Mutation> = {
  node: (s) => {
    spec(s, 'HostEndpoint', 'node1-eth0').node = 'node2';
  },
  interfaceName: (s) => {
    spec(s, 'HostEndpoint', 'node1-eth0').interfaceName = 'eth1';
  },
  expectedIPs: (s) => {
    spec(s, 'HostEndpoint', 'node1-eth0').expectedIPs = ['198.18.0.12'];
  },
  profiles: (s) => {
    spec(s, 'HostEndpoint', 'node1-eth0').profiles = ['kns.other'];
  },
  ports: (s) => {
    spec(s, 'HostEndpoint', 'node1-eth0').ports = [{ name: 'http', protocol: 'TCP', port: 8081 }];
  },
};

const wepSpec = (s: CalcResource[]) => spec(s, 'WorkloadEndpoint', 'web');
const WEP_MUTATIONS: Record<string, Mutation> = {
  orchestrator: (s) => {
    wepSpec(s).orchestrator = 'cni';
  },
  workload: (s) => {
    wepSpec(s).workload = 'web-7d9f';
  },
  node: (s) => {
    wepSpec(s).node = 'node2';
  },
  containerID: (s) => {
    wepSpec(s).containerID = 'abc123';
  },
  pod: (s) => {
    wepSpec(s).pod = 'web-7d9f-x2';
  },
  endpoint: (s) => {
    wepSpec(s).endpoint = 'eth1';
  },
  serviceAccountName: (s) => {
    wepSpec(s).serviceAccountName = 'sa2';
  },
  ipNetworks: (s) => {
    wepSpec(s).ipNetworks = ['198.19.0.3/32'];
  },
  ipNATs: (s) => {
    wepSpec(s).ipNATs = [{ internalIP: '198.19.0.2', externalIP: '198.18.9.9' }];
  },
  ipv4Gateway: (s) => {
    wepSpec(s).ipv4Gateway = '169.254.1.1';
  },
  ipv6Gateway: (s) => {
    wepSpec(s).ipv6Gateway = 'fe80::1';
  },
  profiles: (s) => {
    wepSpec(s).profiles = ['kns.other'];
  },
  interfaceName: (s) => {
    wepSpec(s).interfaceName = 'caliweb2';
  },
  mac: (s) => {
    wepSpec(s).mac = 'ee:ee:ee:ee:ee:ee';
  },
  ports: (s) => {
    wepSpec(s).ports = [{ name: 'http', protocol: 'TCP', port: 9090 }];
  },
  allowSpoofedSourcePrefixes: (s) => {
    wepSpec(s).allowSpoofedSourcePrefixes = ['198.18.100.0/24'];
  },
  qosControls: (s) => {
    wepSpec(s).qosControls = { ingressBandwidth: 1_000_000 };
  },
};

describe('resource fields do what their decision says', () => {
  const baseline = rulesetOf(baseScene());
  const groups: [string, Readonly<Record<string, FieldHandling>>, Record<string, Mutation>][] = [
    ['NetworkPolicySpec', NETWORK_POLICY_SPEC_FIELDS, NP_MUTATIONS],
    ['GlobalNetworkPolicySpec', GLOBAL_NETWORK_POLICY_SPEC_FIELDS, GNP_MUTATIONS],
    ['ProfileSpec', PROFILE_SPEC_FIELDS, PROFILE_MUTATIONS],
    ['HostEndpointSpec', HOST_ENDPOINT_SPEC_FIELDS, HEP_MUTATIONS],
    ['WorkloadEndpointSpec', WORKLOAD_ENDPOINT_SPEC_FIELDS, WEP_MUTATIONS],
  ];
  for (const [type, table, mutations] of groups) {
    it.each(Object.entries(table))(`${type}.%s`, (field, handling) => {
      const mutate = mutations[field];
      expect(mutate, `a sample change for ${type}.${field}`).toBeDefined();
      const scene = structuredClone(baseScene());
      mutate!(scene);
      const changed = rulesetOf(scene);
      if (handling.kind === 'rendered') expect(changed, `${type}.${field} is rendered`).not.toEqual(baseline);
      // Inert fields take no part; fail-closed endpoint fields are features that are not
      // programmed, so they cannot open anything either.
      else expect(changed, `${type}.${field} (${handling.kind}) leaves the ruleset alone`).toEqual(baseline);
    });
  }
});
