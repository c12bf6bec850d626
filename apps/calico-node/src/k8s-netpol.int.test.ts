/**
 * Kubernetes NetworkPolicy semantics on the real dataplane, in the manner of the upstream
 * Kubernetes network-policy conformance suite: namespaces x, y, z with pods a, b, c each, every pod
 * serving TCP and UDP echo on ports 80 and 81. Each case writes `networking.k8s.io/v1`
 * NetworkPolicies through `convertK8sNetworkPolicy` (as kube-controllers would), waits until the
 * bundled `calico-node -felix` has reprogrammed nftables, then probes the full 9×9 reachability matrix
 * for the port and protocol under test and compares it with the expected truth table (the
 * diagonal — a pod to itself — is ignored, as upstream ignores loopback).
 *
 * One Felix and one set of pods serve every case; each case removes its policies and restores
 * labels afterwards and waits until the node's ruleset is back to the policy-free baseline, so
 * cases are independent. Probes run from one long-lived agent per pod (also the echo server),
 * driven over a unix socket, all sources in parallel. Needs root, etcd, nft, nsenter.
 */
import { spawnSync } from 'node:child_process';
import { createConnection, type Socket } from 'node:net';
import { join } from 'node:path';
import {
  convertK8sNetworkPolicy,
  type K8sLabelSelector,
  type K8sNetworkPolicy,
  type K8sNetworkPolicyPeer,
  type K8sNetworkPolicySpec,
  type Resource,
} from '@calico-ts/api';
import { etcdAvailable } from '@calico-ts/datastore/testing';
import { afterAll, afterEach, beforeAll, describe, it } from 'vitest';
import { bundleFelix, FELIX_ARGS } from './testing-internal/felix-executable.js';
import { collectLines, FelixLab, logFile, type Pod } from './testing-internal/felix-lab.js';

function missingPrerequisites(): string[] {
  const missing: string[] = [];
  if (process.getuid?.() !== 0) missing.push('root');
  if (!etcdAvailable()) missing.push('etcd');
  for (const tool of ['ip', 'nsenter', 'nft']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) missing.push(tool);
  }
  return missing;
}
const missing = missingPrerequisites();
if (missing.length > 0) {
  describe('Kubernetes NetworkPolicy on the dataplane', () => {
    it.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

// ---------------------------------------------------------------------------------------------
// The model: namespaces × pods, and truth tables over them

const NAMESPACES = ['x', 'y', 'z'] as const;
const POD_NAMES = ['a', 'b', 'c'] as const;
type Ns = (typeof NAMESPACES)[number];
type PodName = (typeof POD_NAMES)[number];
/** `x/a` */
type PodKey = `${Ns}/${PodName}`;
const ALL: PodKey[] = NAMESPACES.flatMap((ns) => POD_NAMES.map((p) => `${ns}/${p}` as PodKey));
const NS_LABEL = 'kubernetes.io/metadata.name';

/** What a pod declares, as upstream's model names them: serve-<port>-<protocol>. */
const CONTAINER_PORTS = [80, 81].flatMap((port) =>
  (['TCP', 'UDP'] as const).map((protocol) => ({
    name: `serve-${port}-${protocol.toLowerCase()}`,
    protocol,
    port,
  })),
);

function namespaceLabels(ns: string): Record<string, string> {
  return { ns, [NS_LABEL]: ns };
}

interface Peer {
  ns?: Ns;
  pod?: PodName;
}

function peerMatches(peer: Peer, key: PodKey): boolean {
  const [ns, pod] = key.split('/');
  return (peer.ns === undefined || peer.ns === ns) && (peer.pod === undefined || peer.pod === pod);
}

function peerOf(key: PodKey): Peer {
  const [ns, pod] = key.split('/') as [Ns, PodName];
  return { ns, pod };
}

/** Who may reach whom: `allowed[from][to]`, rows are sources, columns are destinations. */
class Reachability {
  readonly allowed: boolean[][];

  constructor(initial = true) {
    this.allowed = ALL.map(() => ALL.map(() => initial));
  }

  /** Every (from, to) pair matching the two peers. */
  expectPeer(from: Peer, to: Peer, allowed: boolean): this {
    ALL.forEach((f, i) => {
      if (!peerMatches(from, f)) return;
      ALL.forEach((t, j) => {
        if (peerMatches(to, t)) this.allowed[i]![j] = allowed;
      });
    });
    return this;
  }

  expect(from: PodKey, to: PodKey, allowed: boolean): this {
    return this.expectPeer(peerOf(from), peerOf(to), allowed);
  }

  expectAllIngress(to: PodKey, allowed: boolean): this {
    return this.expectPeer({}, peerOf(to), allowed);
  }

  expectAllEgress(from: PodKey, allowed: boolean): this {
    return this.expectPeer(peerOf(from), {}, allowed);
  }
}

function table(cell: (i: number, j: number) => string): string {
  const head = ['     ', ...ALL.map((k) => k.padEnd(4))].join(' ');
  const rows = ALL.map((from, i) => [from.padEnd(5), ...ALL.map((_, j) => cell(i, j).padEnd(4))].join(' '));
  return [head, ...rows].map((l) => l.trimEnd()).join('\n');
}

/** Mismatches off the diagonal (a pod to itself is loopback, which upstream does not judge). */
function mismatches(expected: Reachability, observed: boolean[][]): number {
  let n = 0;
  ALL.forEach((_, i) => {
    ALL.forEach((_, j) => {
      if (i !== j && expected.allowed[i]![j] !== observed[i]![j]) n++;
    });
  });
  return n;
}

function report(what: string, expected: Reachability, observed: boolean[][]): string {
  const mark = (v: boolean) => (v ? '.' : 'X');
  return [
    `${what}: ${mismatches(expected, observed)} of ${ALL.length * (ALL.length - 1)} pairs differ`,
    'expected (rows: from, columns: to; . allowed, X denied):',
    table((i, j) => mark(expected.allowed[i]![j]!)),
    'observed:',
    table((i, j) => mark(observed[i]![j]!)),
    'comparison (. matches, X differs, - loopback not judged):',
    table((i, j) => (i === j ? '-' : expected.allowed[i]![j] === observed[i]![j] ? '.' : 'X')),
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------
// The pod agent: TCP and UDP echo on 80 and 81, and a prober driven over a unix socket

/**
 * argv: socket path. A command line `{"id":1,"proto":"tcp","port":80,"ms":900,"hosts":[...]}`
 * is answered with `{"id":1,"ok":[true,false,...]}` once every host is probed (in parallel).
 */
const AGENT_SRC = `
const net = require('node:net'); const dgram = require('node:dgram');
const sock = process.argv[1];
let pending = 4;
const up = () => { if (--pending === 0) control(); };
for (const port of [80, 81]) {
  net.createServer((c) => { c.on('data', (d) => c.write(d)); c.on('error', () => {}); }).listen(port, '0.0.0.0', up);
  const u = dgram.createSocket('udp4');
  u.on('message', (m, r) => u.send(m, r.port, r.address));
  u.on('error', () => {});
  u.bind(port, '0.0.0.0', up);
}
function probe(proto, host, port, ms) {
  return new Promise((resolve) => {
    let cleanup = () => {};
    let done = false;
    const finish = (ok) => { if (done) return; done = true; clearTimeout(timer); cleanup(); resolve(ok); };
    const timer = setTimeout(() => finish(false), ms);
    if (proto === 'tcp') {
      const s = net.connect(port, host, () => s.write('x'));
      s.on('data', () => finish(true)); s.on('error', () => finish(false));
      cleanup = () => s.destroy();
    } else {
      const u = dgram.createSocket('udp4');
      let resend;
      u.on('message', () => finish(true)); u.on('error', () => finish(false));
      u.bind(0, () => { const send = () => u.send('x', port, host); send(); resend = setInterval(send, 200); });
      cleanup = () => { clearInterval(resend); try { u.close(); } catch {} };
    }
  });
}
function control() {
  net.createServer((c) => {
    let buf = '';
    c.on('error', () => {});
    c.on('data', async (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf('\\n')) >= 0) {
        const cmd = JSON.parse(buf.slice(0, i)); buf = buf.slice(i + 1);
        Promise.all(cmd.hosts.map((h) => probe(cmd.proto, h, cmd.port, cmd.ms)))
          .then((ok) => c.write(JSON.stringify({ id: cmd.id, ok }) + '\\n'));
      }
    });
  }).listen(sock, () => process.stdout.write('ready\\n'));
}
`;

/** One connection to a pod's agent; `probe` sends a command and resolves with its answer. */
class AgentClient {
  readonly #sock: Socket;
  readonly #waiting = new Map<number, (ok: boolean[]) => void>();
  #seq = 0;

  private constructor(sock: Socket) {
    this.#sock = sock;
    let buf = '';
    sock.on('data', (d) => {
      buf += d.toString('utf8');
      let i = buf.indexOf('\n');
      while (i >= 0) {
        const msg = JSON.parse(buf.slice(0, i)) as { id: number; ok: boolean[] };
        buf = buf.slice(i + 1);
        this.#waiting.get(msg.id)?.(msg.ok);
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

  probe(proto: 'tcp' | 'udp', port: number, ms: number, hosts: string[]): Promise<boolean[]> {
    const id = ++this.#seq;
    return new Promise((resolve) => {
      this.#waiting.set(id, resolve);
      this.#sock.write(`${JSON.stringify({ id, proto, port, ms, hosts })}\n`);
    });
  }

  close(): void {
    this.#sock.destroy();
  }
}

// ---------------------------------------------------------------------------------------------
// Policies

function knp(namespace: Ns, name: string, spec: K8sNetworkPolicySpec): K8sNetworkPolicy {
  return { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name, namespace }, spec };
}

const podLabel = (pod: PodName): K8sLabelSelector => ({ matchLabels: { pod } });
const nsNamed = (ns: Ns): K8sLabelSelector => ({ matchLabels: { [NS_LABEL]: ns } });
const nsNotIn = (...ns: Ns[]): K8sLabelSelector => ({
  matchExpressions: [{ key: NS_LABEL, operator: 'NotIn', values: ns }],
});
/** A policy selecting `pod` (all pods when undefined) that only isolates: no rules. */
const denyIngress = (pod?: PodName): K8sNetworkPolicySpec => ({
  podSelector: pod ? podLabel(pod) : {},
  policyTypes: ['Ingress'],
});
const allowIngressFrom = (
  pod: PodName | undefined,
  ...from: K8sNetworkPolicyPeer[]
): K8sNetworkPolicySpec => ({
  podSelector: pod ? podLabel(pod) : {},
  ingress: [{ from }],
});

const DROP_TIMEOUT_MS = 900;
const PROGRAMMING_TIMEOUT_MS = 15_000;

describe.skipIf(missing.length > 0)('Kubernetes NetworkPolicy on the dataplane (9×9 truth tables)', () => {
  const lab = new FelixLab();
  const pods = new Map<PodKey, Pod>();
  const agents = new Map<PodKey, AgentClient>();
  let felixLines: string[] = [];
  let baseline = '';
  /** What the running case wrote, so afterEach can undo it. */
  const applied = new Map<string, { namespace: string; name: string }>();
  const relabelledPods = new Set<PodKey>();
  const relabelledNamespaces = new Set<Ns>();

  const ip = (key: PodKey) => pods.get(key)!.ip;
  /** The node's whole ruleset without counters: changes exactly when Felix reprograms. */
  const ruleset = () => lab.nft(['-s', 'list', 'ruleset']);

  async function until(what: string, f: () => boolean | Promise<boolean>, ms = PROGRAMMING_TIMEOUT_MS) {
    const end = Date.now() + ms;
    for (;;) {
      if (await f()) return;
      if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting until ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Waits until two reads 200 ms apart agree. */
  async function settled(): Promise<string> {
    let last = ruleset();
    for (;;) {
      await new Promise((r) => setTimeout(r, 200));
      const now = ruleset();
      if (now === last) return now;
      last = now;
    }
  }

  /**
   * Runs `change` and waits until Felix has reprogrammed the node because of it: the ruleset
   * differs from before and has settled. Every step of every case changes the ruleset (a policy
   * chain, an endpoint's policy list or an IP set's members), so a probe never runs against the
   * state before the change.
   */
  async function reprogrammed(what: string, change: () => Promise<void>): Promise<void> {
    const before = ruleset();
    await change();
    await until(`Felix reprograms the node after: ${what}`, () => ruleset() !== before);
    await settled();
  }

  /** Converts and writes (create or replace) the policies, as kube-controllers would. */
  async function write(...policies: K8sNetworkPolicy[]): Promise<void> {
    for (const p of policies) {
      const calico = convertK8sNetworkPolicy(p);
      await lab.ds.apply(calico as Resource & { kind: 'NetworkPolicy' });
      applied.set(`${calico.metadata.namespace}/${calico.metadata.name}`, {
        namespace: calico.metadata.namespace!,
        name: calico.metadata.name,
      });
    }
  }

  /** `write`, then wait until Felix has programmed the change. */
  async function apply(...policies: K8sNetworkPolicy[]): Promise<void> {
    await reprogrammed(`apply ${policies.map((p) => p.metadata.name).join(', ')}`, () => write(...policies));
  }

  async function deleteAllPolicies(): Promise<void> {
    for (const { namespace, name } of applied.values()) {
      await lab.ds.delete('NetworkPolicy', name, { namespace });
    }
    applied.clear();
  }

  function setPodLabels(
    key: PodKey,
    extra: Record<string, string>,
    ports: typeof CONTAINER_PORTS = CONTAINER_PORTS,
  ): Promise<void> {
    relabelledPods.add(key);
    return lab.setPodLabels(pods.get(key)!, { pod: peerOf(key).pod!, ...extra }, ports);
  }

  function setNamespaceLabels(ns: Ns, extra: Record<string, string>): Promise<void> {
    relabelledNamespaces.add(ns);
    return lab.putNamespace(ns, { ...namespaceLabels(ns), ...extra });
  }

  async function observe(proto: 'tcp' | 'udp', port: number): Promise<boolean[][]> {
    const hosts = ALL.map(ip);
    return Promise.all(ALL.map((from) => agents.get(from)!.probe(proto, port, DROP_TIMEOUT_MS, hosts)));
  }

  /**
   * Probes the full matrix until it equals the truth table (a few tries: a connection that was
   * slow under load is not a drop), and fails with the tables when it never does.
   */
  async function validate(proto: 'tcp' | 'udp', port: 80 | 81, expected: Reachability): Promise<void> {
    const end = Date.now() + 6_000;
    for (;;) {
      const observed = await observe(proto, port);
      if (mismatches(expected, observed) === 0) return;
      if (Date.now() > end)
        throw new Error(report(`${proto.toUpperCase()} port ${port}`, expected, observed));
    }
  }

  const allAllowed = () => new Reachability(true);

  beforeAll(async () => {
    await lab.start();
    // @ts-expect-error: a plain .mjs build script without type declarations
    const { bundle: bundleCni } = await import('../../../packages/cni-plugin/scripts/bundle.mjs');
    const cniBin = join(lab.tmp, 'cni-bin');
    await bundleCni(cniBin);
    const felixBin: string = await bundleFelix();
    await lab.seed(Object.fromEntries(NAMESPACES.map((ns) => [ns, namespaceLabels(ns)])));

    const felix = lab.spawnIn(lab.node, felixBin, [...FELIX_ARGS], {
      PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin',
      FELIX_FELIXHOSTNAME: lab.nodeName,
      FELIX_ETCDENDPOINTS: 'http://127.0.0.1:2379',
      FELIX_HEALTHENABLED: 'false',
      FELIX_MTUFILEPATH: join(lab.tmp, 'mtu'),
    });
    felixLines = [];
    collectLines(felix, felixLines, logFile(join(lab.tmp, 'felix.log')));

    for (const key of ALL) {
      const { ns, pod } = peerOf(key);
      pods.set(key, await lab.addPod(cniBin, ns!, pod!));
    }
    await Promise.all(
      ALL.map(async (key) => {
        await lab.setPodLabels(pods.get(key)!, { pod: peerOf(key).pod! }, CONTAINER_PORTS);
        const sock = join(lab.tmp, `agent-${key.replace('/', '-')}.sock`);
        const child = lab.spawnIn(pods.get(key)!.netns, process.execPath, ['-e', AGENT_SRC, sock]);
        await new Promise<void>((resolve, reject) => {
          child.stdout!.on('data', (b: Buffer) => {
            if (b.toString().includes('ready')) resolve();
          });
          child.once('exit', (code) => reject(new Error(`agent in ${key} exited (${code})`)));
        });
        agents.set(key, await AgentClient.connect(sock));
      }),
    );
    // Everything reaches everything through the namespace profiles before any policy exists.
    await until(
      'every pod reaches every pod',
      async () => {
        const m = await observe('tcp', 80);
        return mismatches(allAllowed(), m) === 0;
      },
      60_000,
    );
    for (const [proto, port] of [
      ['tcp', 81],
      ['udp', 80],
      ['udp', 81],
    ] as const)
      await validate(proto, port, allAllowed());
    baseline = await settled();
  }, 240_000);

  afterEach(async () => {
    await deleteAllPolicies();
    for (const key of relabelledPods) {
      await lab.setPodLabels(pods.get(key)!, { pod: peerOf(key).pod! }, CONTAINER_PORTS);
    }
    relabelledPods.clear();
    for (const ns of relabelledNamespaces) await lab.putNamespace(ns, namespaceLabels(ns));
    relabelledNamespaces.clear();
    await until('the ruleset is back to the policy-free baseline', () => ruleset() === baseline);
  }, 30_000);

  afterAll(async () => {
    if (process.env.FELIX_IT_DEBUG) console.log(felixLines.slice(-40).join('\n'));
    for (const a of agents.values()) a.close();
    await lab.close();
  }, 60_000);

  // -------------------------------------------------------------------------------------------
  // Isolation by ingress and egress defaults

  it("supports a 'default-deny-ingress' policy (TCP and UDP)", async () => {
    await apply(knp('x', 'deny-ingress', denyIngress()));
    const r = allAllowed().expectPeer({}, { ns: 'x' }, false);
    await validate('tcp', 80, r);
    await validate('udp', 80, r);
  });

  it("supports a 'default-deny-all' policy", async () => {
    await apply(knp('x', 'deny-all', { podSelector: {}, policyTypes: ['Ingress', 'Egress'] }));
    await validate(
      'tcp',
      80,
      allAllowed().expectPeer({}, { ns: 'x' }, false).expectPeer({ ns: 'x' }, {}, false),
    );
  });

  it('supports an allow-all policy', async () => {
    await apply(knp('x', 'allow-all', { podSelector: {}, ingress: [{}] }));
    await validate('tcp', 80, allAllowed());
    await validate('tcp', 81, allAllowed());
  });

  it('denies all in a namespace but allows ingress to one target from every pod', async () => {
    await apply(
      knp('x', 'deny-all', denyIngress()),
      knp('x', 'allow-all-to-a', allowIngressFrom('a', { podSelector: {}, namespaceSelector: {} })),
    );
    await validate('tcp', 80, allAllowed().expectPeer({}, { ns: 'x' }, false).expectAllIngress('x/a', true));
  });

  // -------------------------------------------------------------------------------------------
  // Peers: podSelector, namespaceSelector, both

  it('allows traffic from pods within the server namespace based on PodSelector', async () => {
    await apply(knp('x', 'x-a-allows-x-b', allowIngressFrom('a', { podSelector: podLabel('b') })));
    await validate('tcp', 80, allAllowed().expectAllIngress('x/a', false).expect('x/b', 'x/a', true));
  });

  it('allows ingress from the same namespace only (empty podSelector peer)', async () => {
    await apply(knp('x', 'same-ns-only', allowIngressFrom(undefined, { podSelector: {} })));
    await validate(
      'tcp',
      80,
      allAllowed().expectPeer({ ns: 'y' }, { ns: 'x' }, false).expectPeer({ ns: 'z' }, { ns: 'x' }, false),
    );
  });

  it('allows ingress from pods in all namespaces (empty namespaceSelector)', async () => {
    await apply(knp('x', 'from-all-ns', allowIngressFrom('a', { namespaceSelector: {} })));
    await validate('tcp', 80, allAllowed());
  });

  it('allows traffic only from a different namespace, based on NamespaceSelector (matchLabels)', async () => {
    await apply(
      knp('x', 'from-ns-y', allowIngressFrom('a', { namespaceSelector: { matchLabels: { ns: 'y' } } })),
    );
    await validate(
      'tcp',
      80,
      allAllowed()
        .expectPeer({ ns: 'x' }, { ns: 'x', pod: 'a' }, false)
        .expectPeer({ ns: 'z' }, { ns: 'x', pod: 'a' }, false),
    );
  });

  it('uses the kubernetes.io/metadata.name namespace label in NamespaceSelector matchLabels', async () => {
    await apply(knp('x', 'from-ns-y-by-name', allowIngressFrom('a', { namespaceSelector: nsNamed('y') })));
    await validate(
      'tcp',
      80,
      allAllowed()
        .expectPeer({ ns: 'x' }, { ns: 'x', pod: 'a' }, false)
        .expectPeer({ ns: 'z' }, { ns: 'x', pod: 'a' }, false),
    );
  });

  it('enforces PodSelector with matchExpressions (In)', async () => {
    await apply(
      knp(
        'x',
        'x-a-allows-x-b',
        allowIngressFrom('a', {
          podSelector: { matchExpressions: [{ key: 'pod', operator: 'In', values: ['b'] }] },
        }),
      ),
    );
    await validate('tcp', 80, allAllowed().expectAllIngress('x/a', false).expect('x/b', 'x/a', true));
  });

  it('enforces NamespaceSelector with matchExpressions (In)', async () => {
    await apply(
      knp(
        'x',
        'ns-in-y',
        allowIngressFrom('a', {
          namespaceSelector: { matchExpressions: [{ key: 'ns', operator: 'In', values: ['y'] }] },
        }),
      ),
    );
    await validate(
      'tcp',
      80,
      allAllowed()
        .expectPeer({ ns: 'x' }, { ns: 'x', pod: 'a' }, false)
        .expectPeer({ ns: 'z' }, { ns: 'x', pod: 'a' }, false),
    );
  });

  it('enforces PodSelector OR NamespaceSelector (two peers)', async () => {
    await apply(
      knp(
        'x',
        'ns-not-x-or-pod-b',
        allowIngressFrom('a', { namespaceSelector: nsNotIn('x') }, { podSelector: podLabel('b') }),
      ),
    );
    await validate('tcp', 80, allAllowed().expect('x/c', 'x/a', false));
  });

  it('enforces PodSelector AND NamespaceSelector (one peer)', async () => {
    await apply(
      knp(
        'x',
        'ns-not-x-and-pod-b',
        allowIngressFrom('a', { namespaceSelector: nsNotIn('x'), podSelector: podLabel('b') }),
      ),
    );
    await validate(
      'tcp',
      80,
      allAllowed().expectAllIngress('x/a', false).expect('y/b', 'x/a', true).expect('z/b', 'x/a', true),
    );
  });

  it('enforces multiple PodSelectors and NamespaceSelectors (NotIn namespaces, In pods)', async () => {
    await apply(
      knp(
        'x',
        'ns-not-x-pods-b-c',
        allowIngressFrom('a', {
          namespaceSelector: nsNotIn('x'),
          podSelector: { matchExpressions: [{ key: 'pod', operator: 'In', values: ['b', 'c'] }] },
        }),
      ),
    );
    await validate(
      'tcp',
      80,
      allAllowed()
        .expectAllIngress('x/a', false)
        .expectPeer({ ns: 'y', pod: 'b' }, { ns: 'x', pod: 'a' }, true)
        .expectPeer({ ns: 'y', pod: 'c' }, { ns: 'x', pod: 'a' }, true)
        .expectPeer({ ns: 'z', pod: 'b' }, { ns: 'x', pod: 'a' }, true)
        .expectPeer({ ns: 'z', pod: 'c' }, { ns: 'x', pod: 'a' }, true),
    );
  });

  it('NotIn matches pods without the label, Exists only pods with it', async () => {
    await setPodLabels('x/b', { tier: 'db' });
    await setPodLabels('y/c', { tier: 'web' });
    const policy = (podSelector: K8sLabelSelector) =>
      knp('x', 'by-tier', allowIngressFrom('a', { namespaceSelector: {}, podSelector }));
    await apply(policy({ matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['db'] }] }));
    await validate('tcp', 80, allAllowed().expect('x/b', 'x/a', false));
    await apply(policy({ matchExpressions: [{ key: 'tier', operator: 'Exists' }] }));
    await validate(
      'tcp',
      80,
      allAllowed().expectAllIngress('x/a', false).expect('x/b', 'x/a', true).expect('y/c', 'x/a', true),
    );
  });

  it('enforces any of several PodSelectors', async () => {
    await apply(
      knp(
        'x',
        'pod-b-or-c',
        allowIngressFrom('a', { podSelector: podLabel('b') }, { podSelector: podLabel('c') }),
      ),
    );
    await validate(
      'tcp',
      80,
      allAllowed().expectAllIngress('x/a', false).expect('x/b', 'x/a', true).expect('x/c', 'x/a', true),
    );
  });

  it('enforces Exists and DoesNotExist, and NotIn on pods', async () => {
    // Pods a, b, c in every namespace that has an `ns` label, but not pods named a.
    await apply(
      knp(
        'x',
        'exists-notin',
        allowIngressFrom('a', {
          namespaceSelector: { matchExpressions: [{ key: 'ns', operator: 'Exists' }] },
          podSelector: { matchExpressions: [{ key: 'pod', operator: 'NotIn', values: ['a'] }] },
        }),
      ),
    );
    await validate(
      'tcp',
      80,
      allAllowed()
        .expectAllIngress('x/a', false)
        .expectPeer({ pod: 'b' }, { ns: 'x', pod: 'a' }, true)
        .expectPeer({ pod: 'c' }, { ns: 'x', pod: 'a' }, true),
    );
    await deleteAllPolicies();
    // Isolates every pod of x that lacks an `open` label; labelling x/b lets it go.
    await apply(
      knp('x', 'isolate-unless-open', {
        podSelector: { matchExpressions: [{ key: 'open', operator: 'DoesNotExist' }] },
        policyTypes: ['Ingress'],
      }),
    );
    await validate('tcp', 80, allAllowed().expectPeer({}, { ns: 'x' }, false));
    await reprogrammed('label x/b open', () => setPodLabels('x/b', { open: 'yes' }));
    await validate('tcp', 80, allAllowed().expectPeer({}, { ns: 'x' }, false).expectAllIngress('x/b', true));
  });

  it('allows traffic only from one pod in a different namespace (PodSelector and NamespaceSelector)', async () => {
    await apply(
      knp(
        'x',
        'from-y-a',
        allowIngressFrom('a', { namespaceSelector: nsNamed('y'), podSelector: podLabel('a') }),
      ),
    );
    await validate('tcp', 80, allAllowed().expectAllIngress('x/a', false).expect('y/a', 'x/a', true));
  });

  // -------------------------------------------------------------------------------------------
  // Ports and protocols

  it('enforces Ports: 81 allowed from y, 80 denied; a stacked policy then opens 80', async () => {
    const port81 = knp('x', 'allow-81-from-y', {
      podSelector: podLabel('a'),
      ingress: [{ from: [{ namespaceSelector: nsNamed('y') }], ports: [{ port: 81, protocol: 'TCP' }] }],
    });
    await apply(port81);
    const fromY = allAllowed()
      .expectPeer({ ns: 'x' }, { ns: 'x', pod: 'a' }, false)
      .expectPeer({ ns: 'z' }, { ns: 'x', pod: 'a' }, false);
    await validate('tcp', 81, fromY);
    await validate('tcp', 80, allAllowed().expectAllIngress('x/a', false));
    await apply(
      knp('x', 'allow-80-from-y', {
        podSelector: podLabel('a'),
        ingress: [{ from: [{ namespaceSelector: nsNamed('y') }], ports: [{ port: 80, protocol: 'TCP' }] }],
      }),
    );
    await validate('tcp', 80, fromY);
    await validate('tcp', 81, fromY);
  });

  it('enforces an endPort range', async () => {
    await apply(
      knp('x', 'range-81-90', {
        podSelector: podLabel('a'),
        ingress: [{ from: [{ namespaceSelector: nsNamed('y') }], ports: [{ port: 81, endPort: 90 }] }],
      }),
    );
    const fromY = allAllowed()
      .expectPeer({ ns: 'x' }, { ns: 'x', pod: 'a' }, false)
      .expectPeer({ ns: 'z' }, { ns: 'x', pod: 'a' }, false);
    await validate('tcp', 81, fromY);
    await validate('tcp', 80, allAllowed().expectAllIngress('x/a', false));
    // Widened to start at 80: both ports follow the namespace rule.
    await apply(
      knp('x', 'range-81-90', {
        podSelector: podLabel('a'),
        ingress: [{ from: [{ namespaceSelector: nsNamed('y') }], ports: [{ port: 80, endPort: 81 }] }],
      }),
    );
    await validate('tcp', 80, fromY);
    await validate('tcp', 81, fromY);
  });

  it('merges overlapping and adjacent ports of one rule', async () => {
    await apply(
      knp('x', 'overlapping-ports', {
        podSelector: podLabel('a'),
        ingress: [
          {
            from: [{ namespaceSelector: nsNamed('y') }],
            ports: [{ port: 81 }, { port: 80, endPort: 81 }, { port: 80, protocol: 'TCP' }],
          },
        ],
      }),
    );
    const fromY = allAllowed()
      .expectPeer({ ns: 'x' }, { ns: 'x', pod: 'a' }, false)
      .expectPeer({ ns: 'z' }, { ns: 'x', pod: 'a' }, false);
    await validate('tcp', 80, fromY);
    await validate('tcp', 81, fromY);
    await validate('udp', 80, allAllowed().expectAllIngress('x/a', false));
  });

  it('allows ingress on one named port', async () => {
    await apply(knp('x', 'named-81', { podSelector: {}, ingress: [{ ports: [{ port: 'serve-81-tcp' }] }] }));
    await validate('tcp', 81, allAllowed());
    await validate('tcp', 80, allAllowed().expectPeer({}, { ns: 'x' }, false));
  });

  it('allows ingress from a namespace on one named port', async () => {
    await apply(
      knp('x', 'named-80-from-y', {
        podSelector: podLabel('a'),
        ingress: [
          { from: [{ namespaceSelector: nsNamed('y') }], ports: [{ port: 'serve-80-tcp', protocol: 'TCP' }] },
        ],
      }),
    );
    await validate(
      'tcp',
      80,
      allAllowed()
        .expectPeer({ ns: 'x' }, { ns: 'x', pod: 'a' }, false)
        .expectPeer({ ns: 'z' }, { ns: 'x', pod: 'a' }, false),
    );
    await validate('tcp', 81, allAllowed().expectAllIngress('x/a', false));
  });

  it('resolves a named port per destination pod', async () => {
    // x/b calls port 80 "web", x/c calls port 81 "web"; x/a declares no "web".
    await setPodLabels('x/b', {}, [...CONTAINER_PORTS, { name: 'web', protocol: 'TCP', port: 80 }]);
    await setPodLabels('x/c', {}, [...CONTAINER_PORTS, { name: 'web', protocol: 'TCP', port: 81 }]);
    await apply(knp('x', 'web-only', { podSelector: {}, ingress: [{ ports: [{ port: 'web' }] }] }));
    const deniedX = () => allAllowed().expectPeer({}, { ns: 'x' }, false);
    await validate('tcp', 80, deniedX().expectAllIngress('x/b', true));
    await validate('tcp', 81, deniedX().expectAllIngress('x/c', true));
  });

  it('mixes named and numeric ports of two protocols in one rule', async () => {
    await apply(
      knp('x', 'mixed-ports', {
        podSelector: podLabel('a'),
        ingress: [{ ports: [{ port: 'serve-81-udp', protocol: 'UDP' }, { port: 80 }] }],
      }),
    );
    const denied = () => allAllowed().expectAllIngress('x/a', false);
    await validate('tcp', 80, allAllowed());
    await validate('tcp', 81, denied());
    await validate('udp', 81, allAllowed());
    await validate('udp', 80, denied());
  });

  it('allows egress on one named port', async () => {
    await apply(
      knp('x', 'egress-named-80', {
        podSelector: {},
        policyTypes: ['Egress'],
        egress: [{ ports: [{ port: 'serve-80-tcp' }] }],
      }),
    );
    await validate('tcp', 80, allAllowed());
    await validate('tcp', 81, allAllowed().expectPeer({ ns: 'x' }, {}, false));
  });

  it('allows any port on one protocol (TCP) and not the other (UDP)', async () => {
    await apply(
      knp('x', 'tcp-only', { podSelector: podLabel('a'), ingress: [{ ports: [{ protocol: 'TCP' }] }] }),
    );
    await validate('tcp', 80, allAllowed());
    await validate('udp', 80, allAllowed().expectAllIngress('x/a', false));
  });

  it('a UDP-only allow does not allow TCP', async () => {
    await apply(
      knp('x', 'udp-81', {
        podSelector: podLabel('a'),
        ingress: [{ ports: [{ port: 81, protocol: 'UDP' }] }],
      }),
    );
    await validate('tcp', 81, allAllowed().expectAllIngress('x/a', false));
    await validate('udp', 81, allAllowed());
    await validate('udp', 80, allAllowed().expectAllIngress('x/a', false));
  });

  it('an SCTP-only allow is not treated as TCP', async () => {
    await apply(
      knp('x', 'deny-ingress', denyIngress()),
      knp('x', 'sctp-81', {
        podSelector: podLabel('a'),
        ingress: [{ ports: [{ port: 81, protocol: 'SCTP' }] }],
      }),
    );
    await validate('tcp', 81, allAllowed().expectPeer({}, { ns: 'x' }, false));
  });

  it('enforces Ports on UDP: 81 from namespace y only', async () => {
    await apply(
      knp('x', 'udp-81-from-y', {
        podSelector: podLabel('a'),
        ingress: [{ from: [{ namespaceSelector: nsNamed('y') }], ports: [{ port: 81, protocol: 'UDP' }] }],
      }),
    );
    await validate(
      'udp',
      81,
      allAllowed()
        .expectPeer({ ns: 'x' }, { ns: 'x', pod: 'a' }, false)
        .expectPeer({ ns: 'z' }, { ns: 'x', pod: 'a' }, false),
    );
  });

  it('allows UDP only from one pod in another namespace (PodSelector and NamespaceSelector)', async () => {
    await apply(
      knp(
        'x',
        'udp-from-y-a',
        allowIngressFrom('a', { namespaceSelector: nsNamed('y'), podSelector: podLabel('a') }),
      ),
    );
    await validate('udp', 80, allAllowed().expectAllIngress('x/a', false).expect('y/a', 'x/a', true));
  });

  // -------------------------------------------------------------------------------------------
  // Egress

  it('denies egress from pods based on PodSelector', async () => {
    await apply(knp('x', 'deny-egress-a', { podSelector: podLabel('a'), policyTypes: ['Egress'] }));
    await validate('tcp', 80, allAllowed().expectAllEgress('x/a', false));
  });

  it('denies egress from all pods in a namespace', async () => {
    await apply(knp('x', 'deny-egress-x', { podSelector: {}, policyTypes: ['Egress'] }));
    await validate('tcp', 80, allAllowed().expectPeer({ ns: 'x' }, {}, false));
  });

  it('allows egress to a namespace (NotIn on the namespace name label)', async () => {
    await apply(
      knp('x', 'egress-not-y', {
        podSelector: podLabel('a'),
        policyTypes: ['Egress'],
        egress: [{ to: [{ namespaceSelector: nsNotIn('y') }] }],
      }),
    );
    await validate('tcp', 80, allAllowed().expectPeer({ ns: 'x', pod: 'a' }, { ns: 'y' }, false));
  });

  it('allows egress to a pod in another namespace (PodSelector and NamespaceSelector)', async () => {
    await apply(
      knp('x', 'egress-to-y-a', {
        podSelector: podLabel('a'),
        policyTypes: ['Egress'],
        egress: [{ to: [{ namespaceSelector: nsNamed('y'), podSelector: podLabel('a') }] }],
      }),
    );
    await validate('tcp', 80, allAllowed().expectAllEgress('x/a', false).expect('x/a', 'y/a', true));
  });

  it('denies egress on the client side even when the server allows it', async () => {
    const fromXA: K8sNetworkPolicyPeer = { namespaceSelector: nsNamed('x'), podSelector: podLabel('a') };
    await apply(
      knp('x', 'egress-to-y-a', {
        podSelector: podLabel('a'),
        policyTypes: ['Egress'],
        egress: [{ to: [{ namespaceSelector: nsNamed('y'), podSelector: podLabel('a') }] }],
      }),
      knp('y', 'a-from-x-a', allowIngressFrom('a', fromXA)),
      knp('y', 'b-from-x-a', allowIngressFrom('b', fromXA)),
    );
    await validate(
      'tcp',
      80,
      allAllowed()
        .expectAllEgress('x/a', false)
        .expectAllIngress('y/a', false)
        .expect('x/a', 'y/a', true)
        .expectAllIngress('y/b', false),
    );
  });

  it('allows egress to a server by CIDR block', async () => {
    await apply(
      knp('x', 'egress-cidr', {
        podSelector: podLabel('a'),
        policyTypes: ['Egress'],
        egress: [{ to: [{ ipBlock: { cidr: `${ip('y/b')}/32` } }] }],
      }),
    );
    await validate('tcp', 80, allAllowed().expectAllEgress('x/a', false).expect('x/a', 'y/b', true));
  });

  it('enforces an except clause in an egress CIDR block; an IP in both cidr and except of an update is allowed', async () => {
    const policy = (cidr: string, except?: string[]) =>
      knp('x', 'egress-cidr-except', {
        podSelector: podLabel('a'),
        policyTypes: ['Egress'],
        egress: [{ to: [{ ipBlock: { cidr, ...(except ? { except } : {}) } }] }],
      });
    await apply(policy('198.19.0.0/16', [`${ip('x/b')}/32`]));
    await validate('tcp', 80, allAllowed().expect('x/a', 'x/b', false));
    await apply(policy(`${ip('x/b')}/32`));
    await validate('tcp', 80, allAllowed().expectAllEgress('x/a', false).expect('x/a', 'x/b', true));
  });

  it('egress rules without policyTypes isolate ingress too (the API server defaults Ingress in)', async () => {
    await apply(
      knp('x', 'egress-only-rules', {
        podSelector: podLabel('a'),
        egress: [{ to: [{ namespaceSelector: nsNamed('y'), podSelector: podLabel('a') }] }],
      }),
    );
    await validate(
      'tcp',
      80,
      allAllowed().expectAllEgress('x/a', false).expect('x/a', 'y/a', true).expectAllIngress('x/a', false),
    );
  });

  it('allows egress to a namespace on a named port only', async () => {
    await apply(
      knp('x', 'egress-y-named-81', {
        podSelector: podLabel('a'),
        policyTypes: ['Egress'],
        egress: [{ to: [{ namespaceSelector: nsNamed('y') }], ports: [{ port: 'serve-81-tcp' }] }],
      }),
    );
    await validate('tcp', 80, allAllowed().expectAllEgress('x/a', false));
    await validate(
      'tcp',
      81,
      allAllowed().expectAllEgress('x/a', false).expectPeer({ ns: 'x', pod: 'a' }, { ns: 'y' }, true),
    );
  });

  it('denies egress to every pod with 0.0.0.0/0 except the pod pool', async () => {
    await apply(
      knp('x', 'egress-world-not-pods', {
        podSelector: podLabel('a'),
        policyTypes: ['Egress'],
        egress: [{ to: [{ ipBlock: { cidr: '0.0.0.0/0', except: ['198.19.0.0/16'] } }] }],
      }),
    );
    await validate('tcp', 80, allAllowed().expectAllEgress('x/a', false));
  });

  it('ORs an ingress ipBlock with except and a podSelector peer', async () => {
    await apply(
      knp(
        'x',
        'cidr-or-pod',
        allowIngressFrom(
          'a',
          {
            ipBlock: {
              cidr: '198.19.0.0/16',
              except: [`${ip('y/a')}/32`, `${ip('y/b')}/32`, `${ip('x/b')}/32`],
            },
          },
          { podSelector: podLabel('b') },
        ),
      ),
    );
    // x/b is carved out of the block but matched by the podSelector; y/b only by the block.
    await validate('tcp', 80, allAllowed().expect('y/a', 'x/a', false).expect('y/b', 'x/a', false));
  });

  it('selects pods by label in every namespace (empty namespaceSelector and a podSelector)', async () => {
    await apply(
      knp(
        'x',
        'pods-b-anywhere',
        allowIngressFrom('a', { namespaceSelector: {}, podSelector: podLabel('b') }),
      ),
    );
    await validate(
      'tcp',
      80,
      allAllowed().expectAllIngress('x/a', false).expectPeer({ pod: 'b' }, { ns: 'x', pod: 'a' }, true),
    );
  });

  it('works with Ingress and Egress specified together', async () => {
    await apply(
      knp('x', 'in-and-out', {
        podSelector: podLabel('a'),
        ingress: [{ from: [{ podSelector: podLabel('b') }] }],
        egress: [{ ports: [{ port: 80 }] }],
        policyTypes: ['Egress', 'Ingress'],
      }),
    );
    await validate('tcp', 80, allAllowed().expectAllIngress('x/a', false).expect('x/b', 'x/a', true));
    await validate(
      'tcp',
      81,
      allAllowed().expectAllIngress('x/a', false).expectAllEgress('x/a', false).expect('x/b', 'x/a', true),
    );
  });

  it('ignores ingress rules of a policy whose policyTypes is Egress only', async () => {
    await apply(
      knp('x', 'egress-type-only', {
        podSelector: podLabel('a'),
        policyTypes: ['Egress'],
        ingress: [{ from: [{ podSelector: podLabel('b') }] }],
        egress: [{ ports: [{ port: 80 }] }],
      }),
    );
    await validate('tcp', 80, allAllowed());
    await validate('tcp', 81, allAllowed().expectAllEgress('x/a', false));
  });

  it('controls ingress and egress independently', async () => {
    await apply(
      knp('x', 'allow-egress-a', { podSelector: podLabel('a'), policyTypes: ['Egress'], egress: [{}] }),
    );
    await validate('tcp', 80, allAllowed());
    await apply(knp('x', 'deny-ingress-a', denyIngress('a')));
    await validate('tcp', 80, allAllowed().expectAllIngress('x/a', false));
  });

  // -------------------------------------------------------------------------------------------
  // Several policies, updates, deletes, label changes

  it('takes the union of ingress policies: allow-all after a port-80-only policy', async () => {
    await apply(knp('x', 'allow-80', { podSelector: {}, ingress: [{ ports: [{ port: 80 }] }] }));
    await validate('tcp', 81, allAllowed().expectPeer({}, { ns: 'x' }, false));
    await apply(knp('x', 'allow-all', { podSelector: {}, ingress: [{}] }));
    await validate('tcp', 81, allAllowed());
  });

  it('takes the union of egress policies: allow-all after a port-80-only policy', async () => {
    await apply(
      knp('x', 'egress-80', {
        podSelector: {},
        policyTypes: ['Egress'],
        egress: [{ ports: [{ port: 80 }] }],
      }),
    );
    await validate('tcp', 81, allAllowed().expectPeer({ ns: 'x' }, {}, false));
    await apply(knp('x', 'egress-all', { podSelector: {}, policyTypes: ['Egress'], egress: [{}] }));
    await validate('tcp', 81, allAllowed());
  });

  it('enforces an updated policy (allow-all becomes deny-all), and a changed podSelector', async () => {
    await apply(knp('x', 'mutating', { podSelector: {}, ingress: [{}] }));
    await validate('tcp', 81, allAllowed());
    await apply(knp('x', 'mutating', { podSelector: {}, ingress: [] }));
    await validate('tcp', 81, allAllowed().expectPeer({}, { ns: 'x' }, false));
    await apply(knp('x', 'mutating', { podSelector: podLabel('c'), ingress: [] }));
    await validate('tcp', 81, allAllowed().expectAllIngress('x/c', false));
  });

  it('stops enforcing a policy once it is deleted', async () => {
    await apply(knp('x', 'deny-all', { podSelector: {}, policyTypes: ['Ingress', 'Egress'] }));
    await validate(
      'tcp',
      80,
      allAllowed().expectPeer({ ns: 'x' }, {}, false).expectPeer({}, { ns: 'x' }, false),
    );
    await reprogrammed('delete deny-all', deleteAllPolicies);
    await validate('tcp', 80, allAllowed());
  });

  it('allows ingress from an updated namespace (namespace label added)', async () => {
    await apply(
      knp(
        'x',
        'from-ns2-updated',
        allowIngressFrom('a', { namespaceSelector: { matchLabels: { ns2: 'updated' } } }),
      ),
    );
    await validate('tcp', 80, allAllowed().expectAllIngress('x/a', false));
    await reprogrammed('label namespace y ns2=updated', () => setNamespaceLabels('y', { ns2: 'updated' }));
    await validate(
      'tcp',
      80,
      allAllowed().expectAllIngress('x/a', false).expectPeer({ ns: 'y' }, { ns: 'x', pod: 'a' }, true),
    );
  });

  it('allows ingress from an updated pod (pod label added)', async () => {
    await apply(
      knp(
        'x',
        'from-pod2-updated',
        allowIngressFrom('a', { podSelector: { matchLabels: { pod: 'b', pod2: 'updated' } } }),
      ),
    );
    await validate('tcp', 80, allAllowed().expectAllIngress('x/a', false));
    await reprogrammed('label x/b pod2=updated', () => setPodLabels('x/b', { pod2: 'updated' }));
    await validate('tcp', 80, allAllowed().expectAllIngress('x/a', false).expect('x/b', 'x/a', true));
  });

  it('follows namespace labels both ways (DoesNotExist on a namespace label)', async () => {
    await apply(
      knp(
        'x',
        'not-quarantined',
        allowIngressFrom('a', {
          namespaceSelector: { matchExpressions: [{ key: 'quarantine', operator: 'DoesNotExist' }] },
        }),
      ),
    );
    // Every namespace lacks the label: x/a is isolated but everyone is allowed in.
    await validate('tcp', 80, allAllowed());
    await reprogrammed('label namespace z quarantine=yes', () =>
      setNamespaceLabels('z', { quarantine: 'yes' }),
    );
    await validate('tcp', 80, allAllowed().expectPeer({ ns: 'z' }, { ns: 'x', pod: 'a' }, false));
    await reprogrammed('unlabel namespace z', () => setNamespaceLabels('z', {}));
    await validate('tcp', 80, allAllowed());
  });

  it('keeps a selector shared by two policies when one of them is deleted', async () => {
    await apply(
      knp('x', 'a-from-b', allowIngressFrom('a', { podSelector: podLabel('b') })),
      knp('x', 'c-from-b', allowIngressFrom('c', { podSelector: podLabel('b') })),
    );
    await validate(
      'tcp',
      80,
      allAllowed()
        .expectAllIngress('x/a', false)
        .expectAllIngress('x/c', false)
        .expect('x/b', 'x/a', true)
        .expect('x/b', 'x/c', true),
    );
    await reprogrammed('delete a-from-b', () =>
      lab.ds.delete('NetworkPolicy', 'knp.default.a-from-b', { namespace: 'x' }).then(() => {}),
    );
    applied.delete('x/knp.default.a-from-b');
    await validate('tcp', 80, allAllowed().expectAllIngress('x/c', false).expect('x/b', 'x/c', true));
  });

  it('keeps policies of the same name in two namespaces apart', async () => {
    await apply(knp('x', 'same-name', denyIngress()), knp('y', 'same-name', denyIngress()));
    await validate(
      'tcp',
      80,
      allAllowed().expectPeer({}, { ns: 'x' }, false).expectPeer({}, { ns: 'y' }, false),
    );
    await reprogrammed('delete x/same-name', () =>
      lab.ds.delete('NetworkPolicy', 'knp.default.same-name', { namespace: 'x' }).then(() => {}),
    );
    applied.delete('x/knp.default.same-name');
    await validate('tcp', 80, allAllowed().expectPeer({}, { ns: 'y' }, false));
  });

  it('follows a named port renumbered on a live pod', async () => {
    await setPodLabels('x/b', {}, [...CONTAINER_PORTS, { name: 'web', protocol: 'TCP', port: 80 }]);
    await apply(
      knp('x', 'web-only', { podSelector: podLabel('b'), ingress: [{ ports: [{ port: 'web' }] }] }),
    );
    await validate('tcp', 81, allAllowed().expectAllIngress('x/b', false));
    await validate('tcp', 80, allAllowed());
    await reprogrammed('renumber x/b web to 81', () =>
      setPodLabels('x/b', {}, [...CONTAINER_PORTS, { name: 'web', protocol: 'TCP', port: 81 }]),
    );
    await validate('tcp', 80, allAllowed().expectAllIngress('x/b', false));
    await validate('tcp', 81, allAllowed());
  });

  it('moves a pod from one policy to another when its label changes', async () => {
    // Neither selects a pod yet: nothing to program until the relabel.
    await write(
      knp('x', 'role-db', {
        podSelector: { matchLabels: { role: 'db' } },
        ingress: [{ from: [{ podSelector: podLabel('a') }] }],
      }),
      knp('x', 'role-web', {
        podSelector: { matchLabels: { role: 'web' } },
        ingress: [{ from: [{ namespaceSelector: nsNamed('y') }] }],
      }),
    );
    await reprogrammed('label x/c role=db', () => setPodLabels('x/c', { role: 'db' }));
    await validate('tcp', 80, allAllowed().expectAllIngress('x/c', false).expect('x/a', 'x/c', true));
    await reprogrammed('label x/c role=web', () => setPodLabels('x/c', { role: 'web' }));
    await validate(
      'tcp',
      80,
      allAllowed().expectAllIngress('x/c', false).expectPeer({ ns: 'y' }, { ns: 'x', pod: 'c' }, true),
    );
  });

  it('denies ingress to an updated pod (label makes it selected)', async () => {
    // Selecting no pod yet, the policy has nothing to program.
    await write(
      knp('x', 'isolate-target', {
        podSelector: { matchLabels: { target: 'isolated' } },
        policyTypes: ['Ingress'],
      }),
    );
    await validate('tcp', 80, allAllowed());
    await reprogrammed('label x/a target=isolated', () => setPodLabels('x/a', { target: 'isolated' }));
    await validate('tcp', 80, allAllowed().expectAllIngress('x/a', false));
  });
});
