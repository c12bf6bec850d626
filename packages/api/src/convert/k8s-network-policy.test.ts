import { describe, expect, it } from 'vitest';
import { ApiError } from '../errors.js';
import {
  convertK8sNetworkPolicy,
  convertK8sNetworkPolicyPartial,
  convertK8sUID,
  isK8sNetworkPolicy,
  type K8sLabelSelector,
  type K8sNetworkPolicySpec,
  k8sLabelSelectorToCalico,
  simplifyPorts,
} from './index.js';

const ORCH = "projectcalico.org/orchestrator == 'k8s'";

function np(spec: K8sNetworkPolicySpec) {
  return {
    apiVersion: 'networking.k8s.io/v1' as const,
    kind: 'NetworkPolicy' as const,
    metadata: { name: 'test.policy', namespace: 'prod' },
    spec,
  };
}

/** The Calico policy expected for `np(...)`: only its spec differs between cases. */
function calico(spec: Record<string, unknown>) {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'NetworkPolicy',
    metadata: { name: 'knp.default.test.policy', namespace: 'prod' },
    spec: { tier: 'default', order: 1000, ...spec },
  };
}

const cases: [string, K8sNetworkPolicySpec, Record<string, unknown>][] = [
  ['deny all ingress', { podSelector: {}, policyTypes: ['Ingress'] }, { selector: ORCH, types: ['Ingress'] }],
  [
    'allow from same-namespace pods on a port',
    {
      podSelector: { matchLabels: { role: 'db' } },
      ingress: [{ from: [{ podSelector: { matchLabels: { role: 'frontend' } } }], ports: [{ port: 6379 }] }],
      policyTypes: ['Ingress'],
    },
    {
      selector: `${ORCH} && role == 'db'`,
      ingress: [
        {
          action: 'Allow',
          protocol: 'TCP',
          source: { selector: `${ORCH} && role == 'frontend'` },
          destination: { ports: [6379] },
        },
      ],
      types: ['Ingress'],
    },
  ],
  [
    'namespaceSelector only (and an empty one)',
    {
      podSelector: {},
      ingress: [
        { from: [{ namespaceSelector: { matchLabels: { team: 'ops' } } }, { namespaceSelector: {} }] },
      ],
      policyTypes: ['Ingress'],
    },
    {
      selector: ORCH,
      ingress: [
        { action: 'Allow', source: { selector: ORCH, namespaceSelector: "team == 'ops'" }, destination: {} },
        { action: 'Allow', source: { selector: ORCH, namespaceSelector: 'all()' }, destination: {} },
      ],
      types: ['Ingress'],
    },
  ],
  [
    'podSelector and namespaceSelector in one peer',
    {
      podSelector: {},
      ingress: [
        {
          from: [
            {
              namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } },
              podSelector: { matchLabels: { app: 'prometheus' } },
            },
          ],
        },
      ],
      policyTypes: ['Ingress'],
    },
    {
      selector: ORCH,
      ingress: [
        {
          action: 'Allow',
          source: {
            selector: `${ORCH} && app == 'prometheus'`,
            namespaceSelector: "kubernetes.io/metadata.name == 'monitoring'",
          },
          destination: {},
        },
      ],
      types: ['Ingress'],
    },
  ],
  [
    'ipBlock with except (CIDRs masked)',
    {
      podSelector: {},
      ingress: [
        { from: [{ ipBlock: { cidr: '198.18.0.0/15', except: ['198.18.1.0/24', '198.19.2.7/24'] } }] },
      ],
      policyTypes: ['Ingress'],
    },
    {
      selector: ORCH,
      ingress: [
        {
          action: 'Allow',
          source: { nets: ['198.18.0.0/15'], notNets: ['198.18.1.0/24', '198.19.2.0/24'] },
          destination: {},
        },
      ],
      types: ['Ingress'],
    },
  ],
  [
    'named ports, grouped by protocol',
    {
      podSelector: {},
      ingress: [{ ports: [{ port: 'http' }, { protocol: 'UDP', port: 'dns' }, { port: 8080 }] }],
      policyTypes: ['Ingress'],
    },
    {
      selector: ORCH,
      ingress: [
        { action: 'Allow', protocol: 'TCP', source: {}, destination: { ports: ['http', 8080] } },
        { action: 'Allow', protocol: 'UDP', source: {}, destination: { ports: ['dns'] } },
      ],
      types: ['Ingress'],
    },
  ],
  [
    'endPort becomes a range',
    {
      podSelector: {},
      ingress: [{ ports: [{ protocol: 'TCP', port: 32000, endPort: 32768 }] }],
      policyTypes: ['Ingress'],
    },
    {
      selector: ORCH,
      ingress: [{ action: 'Allow', protocol: 'TCP', source: {}, destination: { ports: ['32000:32768'] } }],
      types: ['Ingress'],
    },
  ],
  [
    'egress only, to an ipBlock over two protocols',
    {
      podSelector: { matchLabels: { app: 'web' } },
      egress: [
        {
          to: [{ ipBlock: { cidr: '198.18.0.53/32' } }],
          ports: [{ protocol: 'UDP', port: 53 }, { port: 53 }],
        },
      ],
      policyTypes: ['Egress'],
    },
    {
      selector: `${ORCH} && app == 'web'`,
      egress: [
        {
          action: 'Allow',
          protocol: 'TCP',
          source: {},
          destination: { nets: ['198.18.0.53/32'], ports: [53] },
        },
        {
          action: 'Allow',
          protocol: 'UDP',
          source: {},
          destination: { nets: ['198.18.0.53/32'], ports: [53] },
        },
      ],
      types: ['Egress'],
    },
  ],
  [
    'policyTypes both, with an allow-all egress rule',
    {
      podSelector: {},
      ingress: [{ from: [{ podSelector: {} }] }],
      egress: [{}],
      policyTypes: ['Ingress', 'Egress'],
    },
    {
      selector: ORCH,
      ingress: [{ action: 'Allow', source: { selector: ORCH }, destination: {} }],
      egress: [{ action: 'Allow', source: {}, destination: {} }],
      types: ['Ingress', 'Egress'],
    },
  ],
  [
    'matchExpressions of every operator, after sorted matchLabels',
    {
      podSelector: {
        matchLabels: { zone: 'b', app: 'api' },
        matchExpressions: [
          { key: 'env', operator: 'In', values: ['prod', 'staging'] },
          { key: 'track', operator: 'NotIn', values: ['canary'] },
          { key: 'team', operator: 'Exists' },
          { key: 'legacy', operator: 'DoesNotExist' },
        ],
      },
      policyTypes: ['Ingress'],
    },
    {
      selector: `${ORCH} && app == 'api' && zone == 'b' && env in { 'prod', 'staging' } && track not in { 'canary' } && has(team) && ! has(legacy)`,
      types: ['Ingress'],
    },
  ],
  [
    'empty podSelector with an empty ingress rule allows everything',
    { podSelector: {}, ingress: [{}], policyTypes: ['Ingress'] },
    { selector: ORCH, ingress: [{ action: 'Allow', source: {}, destination: {} }], types: ['Ingress'] },
  ],
  [
    'each protocol × each peer, numeric ports merged into ranges',
    {
      podSelector: {},
      ingress: [
        {
          from: [{ podSelector: { matchLabels: { a: '1' } } }, { ipBlock: { cidr: 'fd00::/64' } }],
          ports: [
            { port: 81 },
            { protocol: 'UDP', port: 53 },
            { port: 80 },
            { port: 'metrics' },
            { port: 82 },
          ],
        },
      ],
      policyTypes: ['Ingress'],
    },
    {
      selector: ORCH,
      ingress: [
        {
          action: 'Allow',
          protocol: 'TCP',
          source: { selector: `${ORCH} && a == '1'` },
          destination: { ports: ['metrics', '80:82'] },
        },
        {
          action: 'Allow',
          protocol: 'TCP',
          source: { nets: ['fd00::/64'] },
          destination: { ports: ['metrics', '80:82'] },
        },
        {
          action: 'Allow',
          protocol: 'UDP',
          source: { selector: `${ORCH} && a == '1'` },
          destination: { ports: [53] },
        },
        { action: 'Allow', protocol: 'UDP', source: { nets: ['fd00::/64'] }, destination: { ports: [53] } },
      ],
      types: ['Ingress'],
    },
  ],
  [
    'a port entry without a number opens every port of its protocol',
    {
      podSelector: {},
      ingress: [
        { ports: [{ protocol: 'UDP', port: 53 }, { protocol: 'UDP' }, { protocol: 'UDP', port: 123 }] },
      ],
      policyTypes: ['Ingress'],
    },
    {
      selector: ORCH,
      ingress: [{ action: 'Allow', protocol: 'UDP', source: {}, destination: {} }],
      types: ['Ingress'],
    },
  ],
  [
    'no policyTypes: inferred as Kubernetes does (Egress only when there are egress rules)',
    {
      podSelector: {},
      egress: [{ to: [{ namespaceSelector: {} }] }],
    },
    {
      selector: ORCH,
      egress: [{ action: 'Allow', source: {}, destination: { selector: ORCH, namespaceSelector: 'all()' } }],
      types: ['Ingress', 'Egress'],
    },
  ],
  [
    'no policyTypes and no egress rules: Ingress only',
    { podSelector: { matchLabels: { app: 'x' } }, ingress: [] },
    { selector: `${ORCH} && app == 'x'`, types: ['Ingress'] },
  ],
];

describe('Kubernetes NetworkPolicy → Calico NetworkPolicy', () => {
  it.each(cases)('%s', (_name, spec, expected) => {
    expect(convertK8sNetworkPolicy(np(spec))).toEqual(calico(expected));
  });

  it('keeps resourceVersion and creationTimestamp and derives a distinct UID', () => {
    const policy = convertK8sNetworkPolicy({
      metadata: {
        name: 'allow-dns',
        namespace: 'kube-system',
        uid: '6ba7b810-9dad-41d1-80b4-00c04fd430c8',
        resourceVersion: '4711',
        creationTimestamp: '2025-01-02T03:04:05Z',
        labels: { ignored: 'yes' },
      },
      spec: { podSelector: {} },
    });
    expect(policy.metadata).toEqual({
      name: 'knp.default.allow-dns',
      namespace: 'kube-system',
      uid: 'd6e51d08-b9b5-418b-802d-0003f22b0c13',
      resourceVersion: '4711',
      creationTimestamp: '2025-01-02T03:04:05Z',
    });
  });

  it('reverses UID bits except the version and variant bytes, so converting twice gives the original', () => {
    const uid = '0f1e2d3c-4b5a-4968-8796-a5b4c3d2e1f0';
    expect(convertK8sUID(uid)).not.toBe(uid);
    expect(convertK8sUID(convertK8sUID(uid))).toBe(uid);
    expect(() => convertK8sUID('not-a-uid')).toThrow(/metadata\.uid: "not-a-uid" is not a UUID/);
  });

  it('leaves out a rule it cannot convert and says which, or refuses in strict mode', () => {
    const bad = np({
      podSelector: {},
      ingress: [
        { ports: [{ port: 80 }] },
        { ports: [{ port: 90, endPort: 80 }] },
        { from: [{ ipBlock: { cidr: '198.18.0.0/33' } }] },
      ],
      policyTypes: ['Ingress'],
    });
    const { policy, errors } = convertK8sNetworkPolicyPartial(bad);
    expect(policy.spec.ingress).toEqual([
      { action: 'Allow', protocol: 'TCP', source: {}, destination: { ports: [80] } },
    ]);
    expect(errors).toEqual([
      'NetworkPolicy prod/test.policy: spec.ingress[1].ports[0].endPort: port range 90:80: minimum 90 is greater than maximum 80; rule left out',
      'NetworkPolicy prod/test.policy: spec.ingress[2].from[0].ipBlock.cidr: "198.18.0.0/33" is not a CIDR; rule left out',
    ]);
    let thrown: unknown;
    try {
      convertK8sNetworkPolicy(bad);
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(ApiError);
    expect((thrown as ApiError).code).toBe('conversion-failed');
    expect((thrown as ApiError).message).toContain('spec.ingress[1].ports[0].endPort');
  });

  it('refuses an unknown selector operator instead of widening the selector', () => {
    const spec = {
      podSelector: { matchExpressions: [{ key: 'a', operator: 'Gt' as never, values: ['1'] }] },
    };
    expect(() => convertK8sNetworkPolicy(np(spec))).toThrow(
      'NetworkPolicy prod/test.policy: spec.podSelector.matchExpressions[0].operator: unknown operator "Gt" (want In, NotIn, Exists or DoesNotExist)',
    );
  });

  it('recognises a NetworkPolicy document', () => {
    expect(isK8sNetworkPolicy(np({ podSelector: {} }))).toBe(true);
    expect(isK8sNetworkPolicy({ apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy' })).toBe(false);
  });
});

describe('k8sLabelSelectorToCalico', () => {
  const selectorCases: [K8sLabelSelector | undefined, 'pod' | 'namespace', string][] = [
    [undefined, 'pod', ORCH],
    [{}, 'pod', ORCH],
    [undefined, 'namespace', ''],
    [{}, 'namespace', 'all()'],
    [{ matchLabels: { b: '2', a: '1' } }, 'namespace', "a == '1' && b == '2'"],
    [
      { matchExpressions: [{ key: 'x', operator: 'In', values: ['p', 'q'] }] },
      'pod',
      `${ORCH} && x in { 'p', 'q' }`,
    ],
  ];
  it.each(selectorCases)('%j as a %s selector is %j', (sel, kind, expected) => {
    expect(k8sLabelSelectorToCalico(sel, kind)).toBe(expected);
  });
});

describe('simplifyPorts', () => {
  it.each([
    [[80], [80]],
    [
      [80, 'http'],
      [80, 'http'],
    ],
    [
      [82, 'http', 80, 81, 9090],
      ['http', '80:82', 9090],
    ],
    [['8000:8002', 8003, 8003], ['8000:8003']],
    [
      ['a', 'b'],
      ['a', 'b'],
    ],
  ] as const)('%j → %j', (input, output) => {
    expect(simplifyPorts(input)).toEqual(output);
  });
});
