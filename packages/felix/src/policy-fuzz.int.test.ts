/**
 * Randomised policy on real traffic: "a policy is never wider than what it says". Each round
 * writes 1–3 random, validated NetworkPolicies and GlobalNetworkPolicies (random tiers, orders,
 * selectors, namespace and service-account selectors, nets, ports, named ports, protocols,
 * services, Allow/Deny/Pass/Log, sometimes `http`), sometimes with a staged policy beside them,
 * into Felix's calculation graph, programs the node with Felix's nftables dataplane, sends a
 * sample of TCP and UDP flows between network namespaces, and compares what got through with the
 * reference evaluator (`@calico-ts/api/policy-eval`, written from the API documentation), fed the
 * policies both as written and as the datastore stores them. `calicoctl policy explain` answers
 * with that evaluator on the stored form, so this test is also what shows the explainer agrees
 * with the dataplane; staged policies must change nothing that is enforced. Any difference
 * fails the test with the seed, the round, the policies, the flow, both answers and the ruleset.
 *
 * ```
 *  ext netns: fab0 198.18.0.1/24, lo 203.0.113.7 and the cluster IPs 10.96.0.10, .11
 *      ║ veth
 *  node netns: eth0 198.18.0.2/24, default via 198.18.0.1; Felix's nftables (ip table calico)
 *      ║ cali<11 hex> ×7, proxy ARP, <pod>/32 routes
 *  pod netns ×7 (k8s namespaces alpha, beta, gamma): eth0 198.19.x.y/32, default via 169.254.1.1
 * ```
 *
 * There is no Kubernetes API here: the test feeds CalcGraph directly, including two Services with
 * EndpointSlices (and names a third that does not exist). The cluster IPs are addresses of the ext
 * namespace, so traffic to a cluster IP really leaves through the source pod's egress policy. Every
 * probe uses a source port never used before in the run, so no conntrack entry of an earlier round
 * can let a probe through. Seeded: POLICY_FUZZ_SEED=<n> replays a run. Needs root, ip, nsenter, nft
 * and libnftables.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes, randomInt } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type EntityRule,
  type GlobalNetworkPolicy,
  type IPPool,
  type K8sEndpointSlice,
  type K8sService,
  type NetworkPolicy,
  type Profile,
  type Rule,
  type StagedGlobalNetworkPolicy,
  type StagedNetworkPolicy,
  type Tier,
  validateResource,
  type WorkloadEndpoint,
} from '@calico-ts/api';
import { type Flow, type FlowProtocol, PolicyEvaluator, type Verdict } from '@calico-ts/api/policy-eval';
import { NftContext } from '@calico-ts/nftables';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CalcGraph } from './calc/calc-graph.js';
import type { CalcResource } from './calc/types.js';
import { NftablesDataplane } from './dataplane/nftables-dataplane.js';
import { DEFAULT_RULES_CONFIG, type RulesConfig } from './rules/config.js';
import { renderRuleset } from './rules/ruleset-renderer.js';

function missingPrerequisites(): string[] {
  const missing: string[] = [];
  if (process.getuid?.() !== 0) missing.push('root');
  for (const tool of ['ip', 'nsenter', 'nft']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) missing.push(tool);
  }
  return missing;
}
const missing = missingPrerequisites();
if (missing.length > 0) {
  describe('randomised policy on real traffic', () => {
    it.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

/** Policies to write in a run, at least. */
const POLICY_TARGET = 500;
/** Flows probed per round. */
const FLOWS_PER_ROUND = 12;
/** A probe that has no answer within this is taken as dropped... */
const PROBE_MS = 350;
/** ...unless the evaluator says allowed: then it is tried again with these, before it counts. */
const RECHECK_MS = [1_500, 3_000];

// ---------------------------------------------------------------------------------------------
// The cluster: namespaces, service accounts, pods, Services, tiers

const V3 = 'projectcalico.org/v3' as const;
const NODE = 'node1';
const NAMESPACES: Readonly<Record<string, Record<string, string>>> = {
  alpha: { team: 'red', env: 'prod' },
  beta: { team: 'blue', env: 'prod' },
  gamma: { team: 'red', env: 'dev' },
};
const SERVICE_ACCOUNTS: readonly { ns: string; name: string; labels: Record<string, string> }[] = [
  { ns: 'alpha', name: 'web', labels: { role: 'frontend' } },
  { ns: 'alpha', name: 'db', labels: { role: 'backend', pii: 'yes' } },
  { ns: 'beta', name: 'default', labels: {} },
  { ns: 'beta', name: 'web', labels: { role: 'frontend' } },
  { ns: 'gamma', name: 'default', labels: { role: 'batch' } },
];

interface PodSpec {
  readonly ns: string;
  readonly name: string;
  readonly ip: string;
  readonly sa: string;
  readonly labels: Record<string, string>;
  readonly ports: readonly { name: string; protocol: 'TCP' | 'UDP'; port: number }[];
}

const PODS: readonly PodSpec[] = [
  {
    ns: 'alpha',
    name: 'a1',
    ip: '198.19.1.11',
    sa: 'web',
    labels: { app: 'web', tier: 'front' },
    ports: [
      { name: 'http', protocol: 'TCP', port: 80 },
      { name: 'metrics', protocol: 'TCP', port: 81 },
      { name: 'dns', protocol: 'UDP', port: 53 },
    ],
  },
  {
    ns: 'alpha',
    name: 'a2',
    ip: '198.19.1.12',
    sa: 'web',
    labels: { app: 'web', tier: 'front', canary: 'true' },
    ports: [
      { name: 'http', protocol: 'TCP', port: 81 },
      { name: 'dns', protocol: 'UDP', port: 53 },
    ],
  },
  {
    ns: 'alpha',
    name: 'a3',
    ip: '198.19.1.13',
    sa: 'db',
    labels: { app: 'db', tier: 'back' },
    ports: [
      { name: 'db', protocol: 'TCP', port: 8080 },
      { name: 'dns', protocol: 'TCP', port: 53 },
    ],
  },
  {
    ns: 'beta',
    name: 'b1',
    ip: '198.19.2.21',
    sa: 'default',
    labels: { app: 'dns', tier: 'infra' },
    ports: [
      { name: 'dns', protocol: 'UDP', port: 53 },
      { name: 'dns-tcp', protocol: 'TCP', port: 53 },
      { name: 'http', protocol: 'TCP', port: 8080 },
    ],
  },
  {
    ns: 'beta',
    name: 'b2',
    ip: '198.19.2.22',
    sa: 'web',
    labels: { app: 'web', tier: 'front' },
    ports: [{ name: 'http', protocol: 'TCP', port: 80 }],
  },
  {
    ns: 'gamma',
    name: 'c1',
    ip: '198.19.3.31',
    sa: 'default',
    labels: { app: 'db', tier: 'back' },
    ports: [
      { name: 'db', protocol: 'TCP', port: 81 },
      { name: 'dns', protocol: 'UDP', port: 53 },
    ],
  },
  { ns: 'gamma', name: 'c2', ip: '198.19.3.32', sa: 'default', labels: { app: 'cache' }, ports: [] },
];

/** Where the ext namespace's agent is reached and sends from. */
const EXT_FABRIC = '198.18.0.1';
const EXT_OTHER = '203.0.113.7';
const NODE_FABRIC = '198.18.0.2';
const CLUSTER_IP_WEB = '10.96.0.10';
const CLUSTER_IP_DNS = '10.96.0.11';
const EXT_ADDRESSES = [EXT_FABRIC, EXT_OTHER, CLUSTER_IP_WEB, CLUSTER_IP_DNS];
/** Every agent serves TCP and UDP echo on these. */
const AGENT_PORTS = [53, 80, 81, 8080];

const podByName = (name: string) => PODS.find((p) => p.name === name)!;
const podByIP = (ip: string) => PODS.find((p) => p.ip === ip);

/** The host-side interface as the CNI plugin names it: cali + 11 hex of SHA-1("<ns>.<pod>"). */
function ifaceOf(pod: PodSpec): string {
  return `cali${createHash('sha1').update(`${pod.ns}.${pod.name}`).digest('hex').slice(0, 11)}`;
}

function workloadEndpoint(pod: PodSpec): WorkloadEndpoint {
  return {
    apiVersion: V3,
    kind: 'WorkloadEndpoint',
    metadata: {
      name: `${NODE}-k8s-${pod.name}-eth0`,
      namespace: pod.ns,
      labels: {
        ...pod.labels,
        'projectcalico.org/namespace': pod.ns,
        'projectcalico.org/orchestrator': 'k8s',
        'projectcalico.org/serviceaccount': pod.sa,
      },
    },
    spec: {
      orchestrator: 'k8s',
      node: NODE,
      pod: pod.name,
      endpoint: 'eth0',
      serviceAccountName: pod.sa,
      ipNetworks: [`${pod.ip}/32`],
      profiles: [`kns.${pod.ns}`, `ksa.${pod.ns}.${pod.sa}`],
      interfaceName: ifaceOf(pod),
      ports: pod.ports.map((p) => ({ ...p })),
    },
  };
}

function profiles(): Profile[] {
  const out: Profile[] = [];
  for (const [ns, labels] of Object.entries(NAMESPACES)) {
    const labelsToApply: Record<string, string> = { 'pcns.projectcalico.org/name': ns };
    for (const [k, v] of Object.entries(labels)) labelsToApply[`pcns.${k}`] = v;
    out.push({
      apiVersion: V3,
      kind: 'Profile',
      metadata: { name: `kns.${ns}` },
      spec: { ingress: [{ action: 'Allow' }], egress: [{ action: 'Allow' }], labelsToApply },
    });
  }
  for (const sa of SERVICE_ACCOUNTS) {
    const labelsToApply: Record<string, string> = { 'pcsa.projectcalico.org/name': sa.name };
    for (const [k, v] of Object.entries(sa.labels)) labelsToApply[`pcsa.${k}`] = v;
    out.push({
      apiVersion: V3,
      kind: 'Profile',
      metadata: { name: `ksa.${sa.ns}.${sa.name}` },
      spec: { labelsToApply },
    });
  }
  return out;
}

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
    spec: { order: 50, defaultAction: 'Pass' },
  },
  {
    apiVersion: V3,
    kind: 'Tier',
    metadata: { name: 'kube-admin' },
    spec: { order: 1_000, defaultAction: 'Pass' },
  },
  {
    apiVersion: V3,
    kind: 'Tier',
    metadata: { name: 'default' },
    spec: { order: 1_000_000, defaultAction: 'Deny' },
  },
];

const SERVICES: K8sService[] = [
  {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web', namespace: 'alpha' },
    spec: {
      clusterIP: CLUSTER_IP_WEB,
      clusterIPs: [CLUSTER_IP_WEB],
      ports: [{ name: 'http', protocol: 'TCP', port: 8080, targetPort: 80 }],
    },
  },
  {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'dns', namespace: 'beta' },
    spec: {
      clusterIP: CLUSTER_IP_DNS,
      clusterIPs: [CLUSTER_IP_DNS],
      ports: [
        { name: 'dns', protocol: 'UDP', port: 53 },
        { name: 'dns-tcp', protocol: 'TCP', port: 53 },
      ],
    },
  },
];

const SLICES: K8sEndpointSlice[] = [
  {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: 'web-7x2kq', namespace: 'alpha', labels: { 'kubernetes.io/service-name': 'web' } },
    addressType: 'IPv4',
    endpoints: ['a1', 'a2'].map((n) => ({
      addresses: [podByName(n).ip],
      conditions: { ready: true },
      targetRef: { kind: 'Pod', name: n, namespace: 'alpha' },
    })),
    ports: [{ name: 'http', protocol: 'TCP', port: 80 }],
  },
  {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: 'dns-p8v4c', namespace: 'beta', labels: { 'kubernetes.io/service-name': 'dns' } },
    addressType: 'IPv4',
    endpoints: ['b1', 'c1'].map((n) => ({
      addresses: [podByName(n).ip],
      conditions: { ready: true },
      targetRef: { kind: 'Pod', name: n, namespace: podByName(n).ns },
    })),
    ports: [
      { name: 'dns', protocol: 'UDP', port: 53 },
      { name: 'dns-tcp', protocol: 'TCP', port: 53 },
    ],
  },
];

const POOL: IPPool = {
  apiVersion: V3,
  kind: 'IPPool',
  metadata: { name: 'pods' },
  spec: { cidr: '198.19.0.0/16', natOutgoing: false },
};

/** Everything but the policies, as the datastore and the Kubernetes API would hold it. */
function baseResources(): CalcResource[] {
  return [POOL, ...TIERS, ...profiles(), ...PODS.map(workloadEndpoint), ...SERVICES, ...SLICES];
}

// ---------------------------------------------------------------------------------------------
// Random policies

/** mulberry32: small, fast, and the same sequence for the same seed everywhere. */
class Rng {
  #s: number;

  constructor(seed: number) {
    this.#s = seed >>> 0;
  }

  next(): number {
    this.#s = (this.#s + 0x6d2b79f5) >>> 0;
    let t = this.#s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  bool(p: number): boolean {
    return this.next() < p;
  }

  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.next() * xs.length)]!;
  }

  /** `n` distinct elements (n between lo and hi). */
  some<T>(xs: readonly T[], lo: number, hi: number): T[] {
    const pool = [...xs];
    const out: T[] = [];
    for (let n = this.int(lo, Math.min(hi, pool.length)); n > 0; n--) {
      out.push(pool.splice(Math.floor(this.next() * pool.length), 1)[0]!);
    }
    return out;
  }
}

const POD_SELECTOR_ATOMS = [
  "app == 'web'",
  "app == 'db'",
  "app == 'dns'",
  "app in {'web', 'cache'}",
  "app != 'web'",
  "app not in {'db'}",
  'has(canary)',
  '!has(canary)',
  "tier == 'front'",
  "tier in {'back', 'infra'}",
  "app starts with 'd'",
  "tier contains 'ron'",
  "app ends with 'che'",
  "projectcalico.org/serviceaccount == 'web'",
  "pcns.team == 'red'",
  "pcsa.role == 'frontend'",
  "projectcalico.org/namespace == 'beta'",
  'has(tier)',
];

function podSelector(rng: Rng): string {
  const a = rng.pick(POD_SELECTOR_ATOMS);
  const r = rng.next();
  if (r < 0.65) return a;
  if (r < 0.85) return `${a} && ${rng.pick(POD_SELECTOR_ATOMS)}`;
  if (r < 0.95) return `${a} || ${rng.pick(POD_SELECTOR_ATOMS)}`;
  return `!(${a})`;
}

const NAMESPACE_SELECTORS = [
  "team == 'red'",
  "team == 'blue'",
  "env == 'prod'",
  "env != 'prod'",
  'has(env)',
  '!has(team)',
  "projectcalico.org/name == 'gamma'",
  "projectcalico.org/name in {'alpha', 'beta'}",
  "team == 'red' && env == 'dev'",
  'all()',
];
const SA_SELECTORS = [
  "role == 'frontend'",
  "role != 'backend'",
  'has(pii)',
  '!has(role)',
  "projectcalico.org/name == 'default'",
  'all()',
];
const SA_NAMES = ['web', 'db', 'default', 'nope'];
const NETS = [
  '198.19.0.0/16',
  '198.19.1.0/24',
  '198.19.2.0/23',
  '198.19.3.0/24',
  ...PODS.map((p) => `${p.ip}/32`),
  PODS[3]!.ip,
  '198.18.0.0/24',
  '203.0.113.0/24',
  '10.96.0.0/16',
  `${CLUSTER_IP_WEB}/32`,
  '0.0.0.0/0',
];
const NOT_NETS = NETS.filter((n) => n !== '0.0.0.0/0');
const DST_PORTS: (number | string)[] = [
  53,
  80,
  81,
  8080,
  443,
  '80:81',
  '53:80',
  '81:9000',
  '1:52',
  'http',
  'dns',
  'dns-tcp',
  'db',
  'metrics',
  'nope',
];
/** Source ports of probes are 20000–60999. */
const SRC_PORTS: (number | string)[] = ['20000:40000', '40001:60999', '30000:65535', 80, 'http', '1:1024'];
const SERVICE_REFS = [
  { name: 'web', namespace: 'alpha' },
  { name: 'dns', namespace: 'beta' },
  { name: 'ghost', namespace: 'alpha' },
  { name: 'web' },
  { name: 'dns' },
];

type AnyPolicy = NetworkPolicy | GlobalNetworkPolicy;
type AnyStagedPolicy = StagedNetworkPolicy | StagedGlobalNetworkPolicy;

/** Tallies of what the generated (and kept) policies used. */
type Features = Record<string, number>;

function count(f: Features, key: string): void {
  f[key] = (f[key] ?? 0) + 1;
}

function entityRule(rng: Rng, side: 'source' | 'destination'): EntityRule {
  const e: Record<string, unknown> = {};
  if (rng.bool(0.35)) e.selector = podSelector(rng);
  if (rng.bool(0.12)) e.notSelector = podSelector(rng);
  if (rng.bool(0.2)) e.namespaceSelector = rng.bool(0.1) ? 'global()' : rng.pick(NAMESPACE_SELECTORS);
  if (rng.bool(0.15)) {
    const r = rng.next();
    e.serviceAccounts =
      r < 0.4
        ? { names: rng.some(SA_NAMES, 1, 2) }
        : r < 0.8
          ? { selector: rng.pick(SA_SELECTORS) }
          : { names: rng.some(SA_NAMES, 1, 2), selector: rng.pick(SA_SELECTORS) };
  }
  if (rng.bool(0.2)) e.nets = rng.some(NETS, 1, 2);
  if (rng.bool(0.15)) e.notNets = rng.some(NOT_NETS, 1, 2);
  const ports = side === 'destination' ? DST_PORTS : SRC_PORTS;
  if (rng.bool(side === 'destination' ? 0.4 : 0.15)) e.ports = rng.some(ports, 1, 3);
  if (rng.bool(0.12)) e.notPorts = rng.some(ports, 1, 2);
  return e as EntityRule;
}

const PORT_PROTOCOLS: (string | number)[] = ['TCP', 'UDP', 6, 17];

function hasPorts(e: EntityRule | undefined): boolean {
  return (e?.ports?.length ?? 0) > 0 || (e?.notPorts?.length ?? 0) > 0;
}

function httpMatch(rng: Rng): NonNullable<Rule['http']> {
  return rng.bool(0.5)
    ? { methods: rng.some(['GET', 'POST', 'PUT'], 1, 2) }
    : { paths: [rng.bool(0.5) ? { exact: '/healthz' } : { prefix: '/api' }] };
}

function rule(rng: Rng, direction: 'ingress' | 'egress'): Rule {
  const action = rng.pick(['Allow', 'Allow', 'Allow', 'Deny', 'Deny', 'Pass', 'Log'] as const);
  const r: Record<string, unknown> = { action };
  const proto = rng.pick([undefined, undefined, 'TCP', 'TCP', 'UDP', 'UDP', 6, 17, 'SCTP', 'ICMP']);
  if (proto !== undefined) r.protocol = proto;
  if (rng.bool(0.1)) r.notProtocol = rng.pick(['TCP', 'UDP', 17, 'ICMP']);
  if (direction === 'ingress' && rng.bool(0.12)) {
    r.source = {
      services: { ...rng.pick(SERVICE_REFS) },
      ...(rng.bool(0.2) ? { ports: rng.some(SRC_PORTS, 1, 2) } : {}),
    };
  } else if (rng.bool(0.45)) {
    r.source = entityRule(rng, 'source');
  }
  if (direction === 'egress' && rng.bool(0.15)) {
    r.destination = { services: { ...rng.pick(SERVICE_REFS) } };
  } else if (rng.bool(0.55)) {
    r.destination = entityRule(rng, 'destination');
  }
  const ruleWithPorts = hasPorts(r.source as EntityRule) || hasPorts(r.destination as EntityRule);
  if (ruleWithPorts && !['TCP', 'UDP', 6, 17, 'SCTP'].includes(r.protocol as string)) {
    r.protocol = rng.pick(PORT_PROTOCOLS);
  }
  if (action === 'Allow' && direction === 'ingress' && rng.bool(0.12)) {
    r.http = httpMatch(rng);
    if (r.protocol !== undefined && r.protocol !== 'TCP' && r.protocol !== 6) r.protocol = 'TCP';
  }
  if (action === 'Deny' && rng.bool(0.06)) r.http = httpMatch(rng);
  if (rng.bool(0.04)) r.ipVersion = rng.pick([4, 6]);
  return r as unknown as Rule;
}

function rules(rng: Rng, direction: 'ingress' | 'egress'): Rule[] {
  const n = rng.pick([0, 1, 1, 2, 2, 3]);
  return Array.from({ length: n }, () => rule(rng, direction));
}

function randomPolicy(rng: Rng, name: string): AnyPolicy {
  const global = rng.bool(0.5);
  const spec: Record<string, unknown> = {};
  const tier = rng.pick(['default', 'default', 'default', 'security', 'platform', 'kube-admin']);
  if (tier !== 'default' || rng.bool(0.3)) spec.tier = tier;
  const order = rng.pick([undefined, 1, 5, 10, 10, 100]);
  if (order !== undefined) spec.order = order;
  const sel = rng.next();
  if (sel < 0.2) spec.selector = 'all()';
  else if (sel < 0.9) spec.selector = podSelector(rng);
  if (global && rng.bool(0.3)) spec.namespaceSelector = rng.pick(NAMESPACE_SELECTORS);
  if (rng.bool(0.15)) spec.serviceAccountSelector = rng.pick(SA_SELECTORS);
  const types = rng.pick([['Ingress'], ['Ingress'], ['Egress'], ['Egress'], ['Ingress', 'Egress']]);
  if (types.includes('Ingress')) spec.ingress = rules(rng, 'ingress');
  if (types.includes('Egress')) spec.egress = rules(rng, 'egress');
  // Mostly explicit types; sometimes left for the defaulting to derive from the rules.
  if (rng.bool(0.8)) spec.types = types;
  if (global)
    return { apiVersion: V3, kind: 'GlobalNetworkPolicy', metadata: { name }, spec } as GlobalNetworkPolicy;
  const namespace = rng.pick(Object.keys(NAMESPACES));
  return { apiVersion: V3, kind: 'NetworkPolicy', metadata: { name, namespace }, spec } as NetworkPolicy;
}

interface Generated {
  /** What the evaluator reads: the policy as written. */
  readonly written: AnyPolicy;
  /** What the calculation graph gets: the policy as the datastore stores it (defaulted). */
  readonly stored: AnyPolicy;
  /** True if a Deny rule carries `http`, which the validator refuses (see below). */
  readonly denyWithHttp: boolean;
}

/**
 * A validated random policy, or undefined (counted in `discarded`) if `validateResource` refuses
 * it. One exception, on purpose: a Deny rule with `http` is refused by the validator (upstream
 * allows `http` on Allow rules only), but such a rule can still reach Felix from a datastore
 * written by another tool, and must then deny on its other criteria. So the policy is validated
 * with those `http` fields taken out, and they are put back into what Felix gets.
 */
function validPolicy(rng: Rng, name: string, discarded: Features): Generated | undefined {
  const written = randomPolicy(rng, name);
  const denyHttp: [string, number][] = [];
  const forValidation = structuredClone(written);
  for (const dir of ['ingress', 'egress'] as const) {
    forValidation.spec[dir]?.forEach((r, i) => {
      if (r.action === 'Deny' && r.http) {
        denyHttp.push([dir, i]);
        delete r.http;
      }
    });
  }
  const v = validateResource(forValidation);
  if (!v.ok) {
    for (const e of v.errors.slice(0, 1)) count(discarded, `${e.path.replace(/\[\d+\]/g, '[]')} ${e.rule}`);
    return undefined;
  }
  const stored = structuredClone(v.value) as AnyPolicy;
  for (const [dir, i] of denyHttp) {
    stored.spec[dir as 'ingress' | 'egress']![i]!.http = written.spec[dir as 'ingress' | 'egress']![i]!.http!;
  }
  return { written, stored, denyWithHttp: denyHttp.length > 0 };
}

/**
 * Sometimes a staged policy beside the round's policies: a random policy's spec staged as
 * Set, Delete or with no stagedAction, usually under the name of one of the round's policies of
 * its kind (so it stands for that policy in the would-be verdict). Felix never enforces staged
 * policies, so the enforced verdict must not change; the evaluator's would-be verdict is counted.
 */
function stagedPolicy(rng: Rng, round: number, generated: readonly Generated[], discarded: Features) {
  if (!rng.bool(0.4)) return undefined;
  const base = validPolicy(rng, `fz${round}-staged`, discarded);
  if (!base) return undefined;
  const p = base.written;
  const sameKind = generated.filter((g) => g.written.kind === p.kind);
  const standFor = sameKind.length > 0 && rng.bool(0.7) ? rng.pick(sameKind).written : undefined;
  const stagedAction = rng.pick([undefined, 'Set', 'Set', 'Delete'] as const);
  const metadata = standFor
    ? {
        name: standFor.metadata.name,
        ...(standFor.metadata.namespace ? { namespace: standFor.metadata.namespace } : {}),
      }
    : { ...p.metadata };
  const staged = {
    apiVersion: V3,
    kind: p.kind === 'NetworkPolicy' ? 'StagedNetworkPolicy' : 'StagedGlobalNetworkPolicy',
    metadata,
    // A staged Delete names the policy and carries no spec of its own.
    spec:
      stagedAction === 'Delete'
        ? { stagedAction, ...(standFor?.spec.tier ? { tier: standFor.spec.tier } : {}) }
        : { ...(stagedAction ? { stagedAction } : {}), ...p.spec },
  } as AnyStagedPolicy;
  const v = validateResource(staged);
  if (!v.ok) {
    count(discarded, `staged: ${v.errors[0]!.path.replace(/\[\d+\]/g, '[]')} ${v.errors[0]!.rule}`);
    return undefined;
  }
  return { written: staged, stored: v.value as AnyStagedPolicy };
}

function tallyFeatures(p: AnyPolicy, f: Features): void {
  count(f, p.kind);
  count(f, `tier ${p.spec.tier ?? 'default'}`);
  if ((p.spec as GlobalNetworkPolicy['spec']).namespaceSelector) count(f, 'policy namespaceSelector');
  if (p.spec.serviceAccountSelector) count(f, 'policy serviceAccountSelector');
  for (const dir of ['ingress', 'egress'] as const) {
    for (const r of p.spec[dir] ?? []) {
      count(f, `${dir} ${r.action}`);
      if (r.protocol !== undefined) count(f, 'protocol');
      if (r.notProtocol !== undefined) count(f, 'notProtocol');
      if (r.http) count(f, `http on ${r.action}`);
      if (r.ipVersion) count(f, `ipVersion ${r.ipVersion}`);
      for (const side of ['source', 'destination'] as const) {
        const e = r[side];
        if (!e) continue;
        for (const k of Object.keys(e)) count(f, `${side}.${k}`);
        for (const p of [...(e.ports ?? []), ...(e.notPorts ?? [])]) {
          if (typeof p === 'string' && /^[a-z]/.test(p)) count(f, 'named port');
          else if (typeof p === 'string' && p.includes(':')) count(f, 'port range');
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The agent in every pod (and in the ext namespace): echo servers and a prober

/**
 * argv: control socket path, comma-separated local addresses (UDP servers bind each, so a reply
 * leaves from the address the request was sent to). A line
 * `{"id":1,"probes":[{"proto":"tcp","host":"…","port":80,"sport":23456,"src":"…","ms":350}]}` is
 * answered with `{"id":1,"results":["ok"|"timeout"|"<error code>", …]}` once all probes (run in
 * parallel) are done.
 */
const AGENT_SRC = `
const net = require('node:net'); const dgram = require('node:dgram');
const [sock, addrList] = process.argv.slice(1);
const PORTS = ${JSON.stringify(AGENT_PORTS)};
const addrs = addrList.split(',');
let pending = PORTS.length * (1 + addrs.length);
const up = () => { if (--pending === 0) control(); };
for (const port of PORTS) {
  net.createServer((c) => { c.on('data', (d) => c.write(d)); c.on('error', () => {}); }).listen(port, '0.0.0.0', up);
  for (const a of addrs) {
    const u = dgram.createSocket('udp4');
    u.on('message', (m, r) => u.send(m, r.port, r.address));
    u.on('error', () => {});
    u.bind(port, a, up);
  }
}
function probe(p) {
  return new Promise((resolve) => {
    let cleanup = () => {};
    let done = false;
    const finish = (result) => { if (done) return; done = true; clearTimeout(timer); cleanup(); resolve(result); };
    const timer = setTimeout(() => finish('timeout'), p.ms);
    if (p.proto === 'tcp') {
      const s = net.connect({ host: p.host, port: p.port, localPort: p.sport, localAddress: p.src });
      s.on('connect', () => s.write('x'));
      s.on('data', () => finish('ok'));
      s.on('error', (e) => finish(e.code || String(e)));
      cleanup = () => s.destroy();
    } else {
      const u = dgram.createSocket('udp4');
      let resend;
      u.on('message', () => finish('ok'));
      u.on('error', (e) => finish(e.code || String(e)));
      u.bind({ port: p.sport, address: p.src }, () => {
        const send = () => u.send('x', p.port, p.host);
        send();
        resend = setInterval(send, 100);
      });
      cleanup = () => { clearInterval(resend); try { u.close(); } catch {} };
    }
  });
}
function control() {
  net.createServer((c) => {
    let buf = '';
    c.on('error', () => {});
    c.on('data', (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf('\\n')) >= 0) {
        const cmd = JSON.parse(buf.slice(0, i)); buf = buf.slice(i + 1);
        Promise.all(cmd.probes.map(probe)).then((results) => c.write(JSON.stringify({ id: cmd.id, results }) + '\\n'));
      }
    });
  }).listen(sock, () => process.stdout.write('ready\\n'));
}
`;

interface Probe {
  readonly proto: FlowProtocol;
  readonly host: string;
  readonly port: number;
  readonly sport: number;
  readonly src?: string;
  readonly ms: number;
}

class AgentClient {
  readonly #sock: Socket;
  readonly #waiting = new Map<number, (results: string[]) => void>();
  #seq = 0;

  private constructor(sock: Socket) {
    this.#sock = sock;
    let buf = '';
    sock.on('data', (d) => {
      buf += d.toString('utf8');
      let i = buf.indexOf('\n');
      while (i >= 0) {
        const msg = JSON.parse(buf.slice(0, i)) as { id: number; results: string[] };
        buf = buf.slice(i + 1);
        this.#waiting.get(msg.id)?.(msg.results);
        this.#waiting.delete(msg.id);
        i = buf.indexOf('\n');
      }
    });
  }

  static connect(path: string): Promise<AgentClient> {
    return new Promise((resolve, reject) => {
      const s = createConnection(path, () => resolve(new AgentClient(s)));
      s.once('error', reject);
    });
  }

  probe(probes: readonly Probe[]): Promise<string[]> {
    if (probes.length === 0) return Promise.resolve([]);
    const id = ++this.#seq;
    return new Promise((resolve) => {
      this.#waiting.set(id, resolve);
      this.#sock.write(`${JSON.stringify({ id, probes })}\n`);
    });
  }

  close(): void {
    this.#sock.destroy();
  }
}

// ---------------------------------------------------------------------------------------------
// The lab: namespaces, veths, agents, and Felix's dataplane in the node namespace

const EXT = 'ext';

class FuzzLab {
  readonly id = `pfz-${randomBytes(3).toString('hex')}`;
  /** Holds the agents' control sockets; made by `start()`. */
  tmp: string | undefined;
  readonly #namespaces: string[] = [];
  readonly #children: ChildProcess[] = [];
  readonly agents = new Map<string, AgentClient>();
  #nft: NftContext | undefined;
  dataplane!: NftablesDataplane;

  get node(): string {
    return `${this.id}-node`;
  }

  netnsOf(agent: string): string {
    return `${this.id}-${agent}`;
  }

  async start(): Promise<void> {
    this.tmp = mkdtempSync(join(tmpdir(), `${this.id}-`));
    const sh: string[] = [];
    const all = [this.node, this.netnsOf(EXT), ...PODS.map((p) => this.netnsOf(p.name))];
    this.#namespaces.push(...all);
    for (const ns of all) sh.push(`ip netns add ${ns}`, `ip -n ${ns} link set lo up`);
    const node = this.node;
    const ext = this.netnsOf(EXT);
    const inNode = (cmds: string[]) => `nsenter --net=/run/netns/${node} sh -ec '${cmds.join('; ')}'`;
    sh.push(
      `ip link add fab0 netns ${ext} type veth peer name eth0 netns ${node}`,
      `ip -n ${ext} addr add ${EXT_FABRIC}/24 dev fab0`,
      ...[EXT_OTHER, CLUSTER_IP_WEB, CLUSTER_IP_DNS].map((a) => `ip -n ${ext} addr add ${a}/32 dev lo`),
      `ip -n ${ext} link set fab0 up`,
      `ip -n ${ext} route add 198.19.0.0/16 via ${NODE_FABRIC}`,
      `ip -n ${node} addr add ${NODE_FABRIC}/24 dev eth0`,
      `ip -n ${node} link set eth0 up`,
      // A host has a default route; proxy ARP for the pods' gateway answers only with one.
      `ip -n ${node} route add default via ${EXT_FABRIC}`,
    );
    for (const pod of PODS) {
      const iface = ifaceOf(pod);
      const ns = this.netnsOf(pod.name);
      sh.push(
        `ip -n ${node} link add ${iface} type veth peer name eth0 netns ${ns}`,
        inNode([
          `echo 1 > /proc/sys/net/ipv4/conf/${iface}/proxy_arp`,
          `echo 0 > /proc/sys/net/ipv4/neigh/${iface}/proxy_delay`,
          `echo 1 > /proc/sys/net/ipv4/conf/${iface}/forwarding`,
        ]),
        `ip -n ${node} link set ${iface} up`,
        `ip -n ${node} route add ${pod.ip}/32 dev ${iface} scope link`,
        `ip -n ${ns} addr add ${pod.ip}/32 dev eth0`,
        `ip -n ${ns} link set eth0 up`,
        `ip -n ${ns} route add 169.254.1.1/32 dev eth0 scope link`,
        `ip -n ${ns} route add default via 169.254.1.1 dev eth0`,
      );
    }
    sh.push(inNode(['echo 1 > /proc/sys/net/ipv4/ip_forward']));
    execFileSync('sh', ['-ec', sh.join('\n')], { stdio: ['ignore', 'ignore', 'pipe'] });

    this.#nft = await NftContext.open({ netns: node });
    this.dataplane = new NftablesDataplane({ nft: this.#nft });

    const agents: [string, string[]][] = [
      [EXT, EXT_ADDRESSES],
      ...PODS.map((p): [string, string[]] => [p.name, [p.ip]]),
    ];
    await Promise.all(agents.map(([name, addrs]) => this.#startAgent(name, addrs)));
  }

  async #startAgent(name: string, addrs: string[]): Promise<void> {
    const sock = join(this.tmp!, `${name}.sock`);
    const child = spawn(
      'nsenter',
      [`--net=/run/netns/${this.netnsOf(name)}`, process.execPath, '-e', AGENT_SRC, sock, addrs.join(',')],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.#children.push(child);
    await new Promise<void>((resolve, reject) => {
      let err = '';
      child.stderr!.on('data', (b: Buffer) => {
        err += b.toString();
      });
      child.stdout!.on('data', (b: Buffer) => {
        if (b.toString().includes('ready')) resolve();
      });
      child.once('error', reject);
      child.once('exit', (code) => reject(new Error(`agent ${name} exited (${code}): ${err}`)));
    });
    this.agents.set(name, await AgentClient.connect(sock));
  }

  /** The node's `ip calico` table as nft prints it. */
  ruleset(): string {
    return execFileSync(
      'nsenter',
      [`--net=/run/netns/${this.node}`, 'nft', 'list', 'table', 'ip', 'calico'],
      {
        encoding: 'utf8',
      },
    );
  }

  async close(): Promise<void> {
    for (const a of this.agents.values()) a.close();
    for (const c of this.#children) {
      if (c.pid !== undefined && c.exitCode === null && c.signalCode === null) {
        try {
          process.kill(c.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
    await this.#nft?.close().catch(() => {});
    for (const ns of this.#namespaces) spawnSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
    if (this.tmp) rmSync(this.tmp, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// Flows

interface FlowCase extends Flow {
  /** The agent that sends: a pod name or `ext`. */
  readonly from: string;
}

const SOURCES = [...PODS.map((p) => p.ip), EXT_FABRIC, EXT_OTHER];
const DESTINATIONS = [...PODS.map((p) => p.ip), EXT_FABRIC, EXT_OTHER, CLUSTER_IP_WEB, CLUSTER_IP_DNS];
const isPod = (ip: string) => podByIP(ip) !== undefined;

function describeAddr(ip: string): string {
  const pod = podByIP(ip);
  if (pod) return `${pod.ns}/${pod.name} (${ip})`;
  if (ip === CLUSTER_IP_WEB) return `cluster IP of alpha/web (${ip})`;
  if (ip === CLUSTER_IP_DNS) return `cluster IP of beta/dns (${ip})`;
  return `external ${ip}`;
}

function describeFlow(f: Flow): string {
  return `${f.protocol} ${describeAddr(f.srcIP)}:${f.srcPort} → ${describeAddr(f.dstIP)}:${f.dstPort}`;
}

class SourcePorts {
  readonly #used = new Set<number>();

  constructor(private readonly rng: Rng) {}

  /** A source port (20000–60999) not used before in this run. */
  next(): number {
    for (;;) {
      const p = this.rng.int(20_000, 60_999);
      if (!this.#used.has(p)) {
        this.#used.add(p);
        return p;
      }
    }
  }
}

/**
 * `n` flows, most of them to or from an endpoint that the round's policies apply to (a flow
 * between endpoints no policy selects only shows that the profiles allow).
 */
function pickFlows(rng: Rng, ports: SourcePorts, evaluator: PolicyEvaluator, n: number): FlowCase[] {
  const ingressTargets = PODS.map((p) => p.ip).filter(
    (ip) => evaluator.policiesApplyingAt(ip, 'ingress').length > 0,
  );
  const egressTargets = PODS.map((p) => p.ip).filter(
    (ip) => evaluator.policiesApplyingAt(ip, 'egress').length > 0,
  );
  const out: FlowCase[] = [];
  while (out.length < n) {
    const r = rng.next();
    let src: string;
    let dst: string;
    if (r < 0.4 && ingressTargets.length > 0) {
      dst = rng.pick(ingressTargets);
      src = rng.pick(SOURCES);
    } else if (r < 0.8 && egressTargets.length > 0) {
      src = rng.pick(egressTargets);
      dst = rng.pick(DESTINATIONS);
    } else {
      src = rng.pick(SOURCES);
      dst = rng.pick(DESTINATIONS);
    }
    // Traffic that never passes the node (a pod to itself, ext to ext) is not judged.
    if (src === dst || (!isPod(src) && !isPod(dst))) continue;
    let protocol: FlowProtocol = rng.pick(['tcp', 'udp'] as const);
    let dstPort = rng.pick(AGENT_PORTS);
    const svc = SERVICES.find((s) => s.spec?.clusterIP === dst);
    if (svc && rng.bool(0.7)) {
      const p = rng.pick(svc.spec!.ports!);
      protocol = (p.protocol ?? 'TCP').toLowerCase() as FlowProtocol;
      dstPort = p.port;
    }
    out.push({
      from: isPod(src) ? podByIP(src)!.name : EXT,
      srcIP: src,
      dstIP: dst,
      protocol,
      srcPort: ports.next(),
      dstPort,
    });
  }
  return out;
}

/** Probes the flows in parallel (one command per sending agent); 'ok', 'timeout' or an error code each. */
async function probeAll(lab: FuzzLab, flows: readonly FlowCase[], ms: number): Promise<string[]> {
  const byAgent = new Map<string, number[]>();
  flows.forEach((f, i) => {
    const list = byAgent.get(f.from);
    if (list) list.push(i);
    else byAgent.set(f.from, [i]);
  });
  const results: string[] = new Array(flows.length);
  await Promise.all(
    [...byAgent].map(async ([agent, idx]) => {
      const probes = idx.map((i): Probe => {
        const f = flows[i]!;
        return {
          proto: f.protocol,
          host: f.dstIP,
          port: f.dstPort,
          sport: f.srcPort,
          ...(agent === EXT ? { src: f.srcIP } : {}),
          ms,
        };
      });
      const r = await lab.agents.get(agent)!.probe(probes);
      idx.forEach((i, k) => {
        results[i] = r[k]!;
      });
    }),
  );
  return results;
}

function explain(v: Verdict): string {
  const parts: string[] = [`${v.allowed ? 'allowed' : 'denied'}`];
  if (v.egress)
    parts.push(`egress of ${v.egress.endpoint}: ${v.egress.allowed ? 'allow' : 'deny'} (${v.egress.reason})`);
  if (v.ingress) {
    parts.push(
      `ingress of ${v.ingress.endpoint}: ${v.ingress.allowed ? 'allow' : 'deny'} (${v.ingress.reason})`,
    );
  }
  return parts.join('\n    ');
}

// ---------------------------------------------------------------------------------------------
// The test

const RULES_CONFIG: RulesConfig = { ...DEFAULT_RULES_CONFIG, ipv6Support: false };

function evaluatorFor(
  policies: readonly AnyPolicy[],
  staged: readonly AnyStagedPolicy[] = [],
): PolicyEvaluator {
  return new PolicyEvaluator({
    workloadEndpoints: PODS.map(workloadEndpoint),
    profiles: profiles(),
    tiers: TIERS,
    networkPolicies: policies.filter((p): p is NetworkPolicy => p.kind === 'NetworkPolicy'),
    globalNetworkPolicies: policies.filter((p): p is GlobalNetworkPolicy => p.kind === 'GlobalNetworkPolicy'),
    stagedNetworkPolicies: staged.filter((p): p is StagedNetworkPolicy => p.kind === 'StagedNetworkPolicy'),
    stagedGlobalNetworkPolicies: staged.filter(
      (p): p is StagedGlobalNetworkPolicy => p.kind === 'StagedGlobalNetworkPolicy',
    ),
    services: SERVICES,
    endpointSlices: SLICES,
  });
}

function seedOfRun(): number {
  const env = process.env.POLICY_FUZZ_SEED;
  if (env !== undefined && env !== '') {
    const n = Number(env);
    if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) {
      throw new Error(`POLICY_FUZZ_SEED must be an integer from 0 to 4294967295, not ${env}`);
    }
    return n;
  }
  return randomInt(0, 0xffffffff);
}

describe.skipIf(missing.length > 0)('randomised policy on real traffic', () => {
  const lab = new FuzzLab();

  beforeAll(async () => {
    await lab.start();
  }, 60_000);

  afterAll(async () => {
    await lab.close();
  });

  it(`agrees with the reference evaluator for ${POLICY_TARGET}+ random policies`, async () => {
    const seed = seedOfRun();
    console.log(`policy-fuzz: seed ${seed} (replay with POLICY_FUZZ_SEED=${seed})`);
    const rng = new Rng(seed);
    const ports = new SourcePorts(rng);
    const started = performance.now();

    const graph = new CalcGraph({ hostname: NODE });
    const base = baseResources();
    for (const r of base) graph.onUpdate({ kind: 'set', resource: r });
    graph.onUpdate({ kind: 'in-sync' });
    graph.flush();
    await lab.dataplane.apply(renderRuleset(graph.state(), RULES_CONFIG));

    // Before any policy every flow passes (the namespace profiles allow): the lab works, and the
    // neighbours and routes are warm.
    const everyPair: FlowCase[] = [];
    for (const src of SOURCES) {
      for (const dst of DESTINATIONS) {
        if (src === dst || (!isPod(src) && !isPod(dst))) continue;
        for (const protocol of ['tcp', 'udp'] as const) {
          everyPair.push({
            from: isPod(src) ? podByIP(src)!.name : EXT,
            srcIP: src,
            dstIP: dst,
            protocol,
            srcPort: ports.next(),
            dstPort: 80,
          });
        }
      }
    }
    const baseline = await probeAll(lab, everyPair, 3_000);
    const broken = everyPair
      .map((f, i) => (baseline[i] === 'ok' ? '' : `${describeFlow(f)}: ${baseline[i]}`))
      .filter((x) => x !== '');
    expect(broken, 'without policy every flow must pass').toEqual([]);

    const features: Features = {};
    const discarded: Features = {};
    let policies = 0;
    let denyWithHttp = 0;
    let probes = 0;
    let agreements = 0;
    let rechecked = 0;
    let observedAllowed = 0;
    let observedDenied = 0;
    let previous: (AnyPolicy | AnyStagedPolicy)[] = [];
    let stagedWritten = 0;
    let stagedFlips = 0;

    for (let round = 1; policies < POLICY_TARGET; round++) {
      const generated: Generated[] = [];
      const want = rng.int(1, 3);
      for (let i = 0; generated.length < want; i++) {
        const g = validPolicy(rng, `fz${round}-${i}`, discarded);
        if (g) generated.push(g);
      }
      for (const p of previous) {
        graph.onUpdate({
          kind: 'delete',
          resource: { kind: p.kind, metadata: { name: p.metadata.name, namespace: p.metadata.namespace } },
        });
      }
      const staged = stagedPolicy(rng, round, generated, discarded);
      for (const g of generated) graph.onUpdate({ kind: 'set', resource: g.stored });
      if (staged) {
        graph.onUpdate({ kind: 'set', resource: staged.stored });
        stagedWritten++;
      }
      graph.flush();
      const desired = renderRuleset(graph.state(), RULES_CONFIG);
      await lab.dataplane.apply(desired);
      previous = [...generated.map((g) => g.stored), ...(staged ? [staged.stored] : [])];
      policies += generated.length;
      for (const g of generated) {
        tallyFeatures(g.written, features);
        if (g.denyWithHttp) denyWithHttp++;
      }

      const stagedList = staged ? [staged.written] : [];
      const evaluator = evaluatorFor(
        generated.map((g) => g.written),
        stagedList,
      );
      // The policies as the datastore stores them (defaulted), which is what `calicoctl policy
      // explain` reads: the same evaluator must give the same verdicts on them.
      const asStored = evaluatorFor(
        generated.map((g) => g.stored),
        staged ? [staged.stored] : [],
      );
      const flows = pickFlows(rng, ports, evaluator, FLOWS_PER_ROUND);
      const verdicts = flows.map((f) => evaluator.evaluate(f));
      const storedVerdicts = flows.map((f) => asStored.evaluate(f));
      for (const v of verdicts) if (v.stagedAllowed !== v.allowed) stagedFlips++;
      let results = await probeAll(lab, flows, PROBE_MS);
      // A flow the evaluator allows that got no answer may only have been slow: ask again (with
      // fresh source ports), more patiently. A flow that got through can never be "slow".
      for (const ms of RECHECK_MS) {
        const again = flows
          .map((f, i) => ({ f, i }))
          .filter(({ i }) => verdicts[i]!.allowed && results[i] === 'timeout');
        if (again.length === 0) break;
        rechecked += again.length;
        const retried = again.map(({ f }) => ({ ...f, srcPort: ports.next() }));
        const r = await probeAll(lab, retried, ms);
        results = [...results];
        again.forEach(({ i }, k) => {
          results[i] = r[k]!;
        });
      }
      probes += flows.length;

      const problems: string[] = [];
      flows.forEach((f, i) => {
        const res = results[i]!;
        if (res !== 'ok' && res !== 'timeout') {
          problems.push(
            `  ${describeFlow(f)}: the probe failed (${res}), which a dropped packet cannot cause`,
          );
          return;
        }
        const observed = res === 'ok';
        if (observed) observedAllowed++;
        else observedDenied++;
        if (observed === verdicts[i]!.allowed && observed === storedVerdicts[i]!.allowed) {
          agreements++;
          return;
        }
        problems.push(
          [
            `  flow: ${describeFlow(f)}`,
            `  evaluator: ${explain(verdicts[i]!)}`,
            `  evaluator on the stored policies: ${explain(storedVerdicts[i]!)}`,
            `  traffic: ${observed ? 'answered (allowed)' : `no answer within ${RECHECK_MS.at(-1)} ms (denied)`}`,
          ].join('\n'),
        );
      });
      if (problems.length > 0) {
        // Is it the incremental path? A fresh graph fed the same resources renders this.
        const fresh = new CalcGraph({ hostname: NODE });
        for (const r of [...base, ...previous]) fresh.onUpdate({ kind: 'set', resource: r });
        fresh.onUpdate({ kind: 'in-sync' });
        fresh.flush();
        const sameAsFresh =
          JSON.stringify(renderRuleset(fresh.state(), RULES_CONFIG)) === JSON.stringify(desired);
        const ruleset = lab.ruleset().split('\n');
        throw new Error(
          [
            `policy-fuzz: the dataplane and the reference evaluator disagree (seed ${seed}, round ${round};` +
              ` replay with POLICY_FUZZ_SEED=${seed})`,
            'policies of this round, as written:',
            ...generated.map((g) => `  ${JSON.stringify(g.written)}`),
            ...stagedList.map((p) => `  staged: ${JSON.stringify(p)}`),
            ...problems,
            `a fresh calculation graph renders ${sameAsFresh ? 'the same' : 'a DIFFERENT'} ruleset`,
            `node ruleset (nft list table ip calico${ruleset.length > 600 ? ', first 600 lines' : ''}):`,
            ...ruleset.slice(0, 600),
          ].join('\n'),
        );
      }
    }

    const elapsed = ((performance.now() - started) / 1000).toFixed(1);
    const nDiscarded = Object.values(discarded).reduce((a, b) => a + b, 0);
    console.log(
      `policy-fuzz: seed ${seed}: ${policies} policies (${features.NetworkPolicy ?? 0} NP, ` +
        `${features.GlobalNetworkPolicy ?? 0} GNP; ${nDiscarded} invalid discarded; ${denyWithHttp} with http on Deny), ` +
        `${probes} probes (${observedAllowed} passed, ${observedDenied} dropped, ${rechecked} rechecked), ` +
        `${agreements} agreements, ${elapsed} s; ${stagedWritten} staged policies beside them ` +
        `(${stagedFlips} probes whose would-be verdict differs)`,
    );
    console.log(
      `policy-fuzz: features used: ${Object.entries(features)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}`,
    );
    if (nDiscarded > 0) {
      console.log(
        `policy-fuzz: discarded as invalid: ${Object.entries(discarded)
          .map(([k, v]) => `${v}× ${k}`)
          .join('; ')}`,
      );
    }
    expect(agreements).toBe(probes);
    // Staged policies were in the mix, and the enforced verdicts above held with them.
    expect(stagedWritten).toBeGreaterThan(0);
    // Both outcomes were seen, so the comparison could have failed either way.
    expect(observedAllowed).toBeGreaterThan(probes / 10);
    expect(observedDenied).toBeGreaterThan(probes / 10);
  }, 300_000);
});
