/**
 * A restart loses nothing: calico-kube-controllers (etcd mode, every controller upstream's etcd
 * manifest enables) is killed with SIGKILL in the middle of a burst of Namespaces, ServiceAccounts,
 * Pods and NetworkPolicies, the burst goes on while it is down (with relabels, a policy changed, a
 * policy and a ServiceAccount deleted), and it is started again. Its etcd must end exactly as the
 * etcd of a second instance that watched the same API server and never stopped, and both as
 * Kubernetes implies: a kns. Profile per Namespace, a ksa. Profile per ServiceAccount, a
 * knp.default. policy per NetworkPolicy, every WorkloadEndpoint with its Pod's labels, nothing stale.
 *
 *   kubectl ─► kube-apiserver ─┬─► reference kube-controllers ─► etcd A
 *                              └─► victim (SIGKILL, restart) ─► etcd B      A ≡ B ≡ expected
 *   the CNI plugin's part: each Pod's WorkloadEndpoint written to both etcds
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { KVDatastore } from '@calico-ts/datastore';
import { EtcdKVStore } from '@calico-ts/datastore/etcd3';
import {
  type EtcdServer,
  findKubectl,
  type KubeApiServer,
  missingKubePrerequisites,
  startEtcd,
  startKubeApiServer,
} from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const BIN = join(here, '../bin/calico-kube-controllers');
const CRDS = join(here, '../../../deploy/crds/calico-crds.yaml');
const RESOURCES = '/calico/resources/v3/projectcalico.org/';
const NAMESPACES = 12;
const KILL_AFTER = 4;

const missing = missingKubePrerequisites({
  crds: CRDS,
  files: [[join(here, '../dist/main.js'), 'the built program (pnpm build)']],
});
if (missing.length > 0) {
  describe('calico-kube-controllers restart', () => {
    it.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

interface Instance {
  readonly name: string;
  readonly etcd: EtcdServer;
  readonly kv: EtcdKVStore;
  readonly env: Record<string, string>;
  readonly log: string[];
  child?: ChildProcess;
}

/** JSON with object keys sorted, so equal data compares equal whatever order it was written in. */
function canon(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)))
      : x,
  );
}

/** The controllers' output in an etcd, by key, without what only says when and by whom it was written. */
async function dump(kv: EtcdKVStore): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const kind of ['profiles/', 'networkpolicies/', 'workloadendpoints/']) {
    for (const { key, value } of (await kv.list(`${RESOURCES}${kind}`)).kvs) {
      const r = JSON.parse(value) as { metadata: Record<string, unknown> };
      const { uid: _u, creationTimestamp: _c, resourceVersion: _r, generation: _g, ...metadata } = r.metadata;
      out[key.slice(RESOURCES.length)] = { ...r, metadata };
    }
  }
  return out;
}

describe.skipIf(missing.length > 0)('calico-kube-controllers killed in the middle of a burst', () => {
  let api: KubeApiServer;
  let dir: string;
  let ref: Instance;
  let victim: Instance;

  const kubectl = async (args: string[], input?: string): Promise<string> =>
    new Promise((resolve, reject) => {
      const child = execFile(
        findKubectl()!,
        ['--kubeconfig', api.kubeconfigPath, ...args],
        (err, stdout, stderr) =>
          err ? reject(new Error(`kubectl ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout),
      );
      child.stdin!.end(input ?? '');
    });
  const apply = (items: object[]) =>
    kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));

  const start = (i: Instance) => {
    const child = spawn(process.execPath, [BIN], { env: i.env, stdio: ['ignore', 'pipe', 'pipe'] });
    for (const s of [child.stdout, child.stderr])
      s.on('data', (d: Buffer) => i.log.push(...d.toString().split('\n').filter(Boolean)));
    i.child = child;
  };
  const until = async (what: string, f: () => Promise<boolean>, ms = 30_000) => {
    const end = Date.now() + ms;
    while (!(await f())) {
      if (Date.now() > end) {
        const tail = (i: Instance) => `${i.name}:\n${i.log.slice(-15).join('\n')}`;
        throw new Error(`timed out waiting for ${what}\n${tail(ref)}\n${tail(victim)}`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  const ready = (i: Instance) =>
    run(process.execPath, [BIN, '-r'], { env: i.env }).then(
      () => true,
      () => false,
    );

  beforeAll(async () => {
    const [server, etcdA, etcdB] = await Promise.all([startKubeApiServer(), startEtcd(), startEtcd()]);
    api = server;
    dir = await mkdtemp(join(tmpdir(), 'kube-controllers-restart-'));
    await kubectl(['apply', '--server-side', '-f', CRDS]);
    const instance = (name: string, etcd: EtcdServer): Instance => ({
      name,
      etcd,
      kv: new EtcdKVStore({ endpoints: etcd.endpoints }),
      log: [],
      env: {
        PATH: process.env.PATH ?? '',
        DATASTORE_TYPE: 'etcdv3',
        ETCD_ENDPOINTS: etcd.endpoints.join(','),
        KUBECONFIG: api.kubeconfigPath,
        ENABLED_CONTROLLERS: 'policy,namespace,serviceaccount,workloadendpoint,node',
        STATUS_FILE: join(dir, `${name}-status.json`),
        LOG_LEVEL: 'info',
      },
    });
    ref = instance('reference', etcdA);
    victim = instance('victim', etcdB);
    for (const i of [ref, victim]) {
      // Metrics off: two instances, and no fixed port on a shared machine.
      await new KVDatastore(i.kv, { backend: 'etcdv3' }).create({
        apiVersion: 'projectcalico.org/v3',
        kind: 'KubeControllersConfiguration',
        metadata: { name: 'default' },
        spec: { prometheusMetricsPort: 0, controllers: {} },
      });
      start(i);
    }
    await until('both instances ready', async () => (await ready(ref)) && (await ready(victim)));
  }, 120_000);

  afterAll(async () => {
    for (const i of [ref, victim]) {
      const c = i?.child;
      if (c && c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      await i?.kv.close();
    }
    await Promise.all([api?.stop(), ref?.etcd.stop(), victim?.etcd.stop()]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('restarted, it ends exactly where an instance that never stopped is, and where Kubernetes says', async () => {
    const wep = (ns: string, pod: string) => ({
      apiVersion: 'projectcalico.org/v3' as const,
      kind: 'WorkloadEndpoint' as const,
      metadata: { name: `n1-k8s-${pod}-eth0`, namespace: ns },
      spec: {
        orchestrator: 'k8s',
        node: 'n1',
        pod,
        endpoint: 'eth0',
        containerID: `c-${ns}-${pod}`,
        ipNetworks: [],
        interfaceName: `cali${ns}${pod}`.slice(0, 15),
        profiles: [`kns.${ns}`],
      },
    });
    const burst = async (i: number, applied?: () => Promise<void>) => {
      const ns = `b${i}`;
      const pods = ['web', 'db'].map((app, k) => ({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: app, namespace: ns, labels: { app, tier: `t${i % 3}` } },
        spec: {
          nodeName: 'n1',
          serviceAccountName: k === 0 ? 'sa-a' : 'sa-b',
          containers: [{ name: 'c', image: 'none' }],
        },
      }));
      await apply([
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, labels: { team: `t${i % 3}` } } },
        ...['sa-a', 'sa-b'].map((name) => ({
          apiVersion: 'v1',
          kind: 'ServiceAccount',
          metadata: { name, namespace: ns },
        })),
        ...pods,
        {
          apiVersion: 'networking.k8s.io/v1',
          kind: 'NetworkPolicy',
          metadata: { name: 'web-from-team', namespace: ns },
          spec: {
            podSelector: { matchLabels: { app: 'web' } },
            ingress: [
              {
                from: [{ namespaceSelector: { matchLabels: { team: `t${i % 3}` } } }],
                ports: [{ port: 80, protocol: 'TCP' }],
              },
            ],
            policyTypes: ['Ingress'],
          },
        },
        {
          apiVersion: 'networking.k8s.io/v1',
          kind: 'NetworkPolicy',
          metadata: { name: 'deny-egress', namespace: ns },
          spec: { podSelector: {}, policyTypes: ['Egress'] },
        },
      ]);
      await applied?.();
      // The CNI plugin's part: each Pod's endpoint, in both datastores.
      for (const inst of [ref, victim]) {
        const ds = new KVDatastore(inst.kv, { backend: 'etcdv3' });
        for (const p of ['web', 'db']) await ds.create(wep(ns, p));
      }
    };

    for (let i = 0; i < KILL_AFTER; i++) await burst(i);
    // What it wrote before the kill is what the changes below must not leave stale.
    const written = Array.from({ length: KILL_AFTER }, (_, i) => [
      `profiles/kns.b${i}`,
      `profiles/ksa.b${i}.sa-b`,
      `networkpolicies/b${i}/knp.default.deny-egress`,
    ]).flat();
    await until('the victim mirroring the first namespaces', async () => {
      const keys = Object.keys(await dump(victim.kv));
      return written.every((k) => keys.includes(k));
    });
    // Killed the moment the API server has stored the next namespace's objects: while its watch
    // events are being turned into writes, before their endpoints exist.
    await burst(KILL_AFTER, async () => {
      const killed = new Promise((r) => victim.child!.once('exit', r));
      victim.child!.kill('SIGKILL');
      await killed;
    });
    const t = Date.now();
    for (let i = KILL_AFTER + 1; i < NAMESPACES; i++) await burst(i);
    // Changes to what it had already written, while it is down.
    await kubectl(['label', 'namespace', 'b1', 'team=other', '--overwrite']);
    await kubectl(['label', 'pod', 'web', '-n', 'b2', 'app=web2', 'extra=yes', '--overwrite']);
    await kubectl(['delete', 'networkpolicy', 'deny-egress', '-n', 'b3']);
    await kubectl(['delete', 'serviceaccount', 'sa-b', '-n', 'b0']);
    await apply([
      {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: 'deny-egress', namespace: 'b5' },
        spec: { podSelector: { matchLabels: { app: 'db' } }, policyTypes: ['Egress'] },
      },
    ]);
    console.log(`burst and changes made in ${Date.now() - t} ms while the victim was down`);

    // What Kubernetes implies, from Kubernetes itself.
    const list = async (what: string) =>
      (
        JSON.parse(await kubectl(['get', what, '-A', '-o', 'json'])) as {
          items: {
            metadata: { name: string; namespace?: string; labels?: Record<string, string> };
            spec?: { serviceAccountName?: string };
          }[];
        }
      ).items;
    const expectedKeys = [
      ...(await list('namespaces')).map((n) => `profiles/kns.${n.metadata.name}`),
      ...(await list('serviceaccounts')).map(
        (s) => `profiles/ksa.${s.metadata.namespace}.${s.metadata.name}`,
      ),
      ...(await list('networkpolicies.networking.k8s.io')).map(
        (p) => `networkpolicies/${p.metadata.namespace}/knp.default.${p.metadata.name}`,
      ),
      ...(await list('pods')).map(
        (p) => `workloadendpoints/${p.metadata.namespace}/n1-k8s-${p.metadata.name}-eth0`,
      ),
    ].sort();
    const pods = await list('pods');
    const labelsRight = (d: Record<string, unknown>) =>
      pods.every((p) => {
        const w = d[`workloadendpoints/${p.metadata.namespace}/n1-k8s-${p.metadata.name}-eth0`] as
          | { metadata: { labels?: Record<string, string> } }
          | undefined;
        return (
          canon(w?.metadata.labels) ===
          canon({
            ...p.metadata.labels,
            'projectcalico.org/namespace': p.metadata.namespace,
            'projectcalico.org/orchestrator': 'k8s',
            'projectcalico.org/serviceaccount': p.spec?.serviceAccountName,
          })
        );
      });
    // The reference, which never stopped, got there; the victim, down, did not.
    await until(
      'the reference converged',
      async () => {
        const d = await dump(ref.kv);
        return canon(Object.keys(d).sort()) === canon(expectedKeys) && labelsRight(d);
      },
      60_000,
    );
    const before = await dump(victim.kv);
    expect(Object.keys(before)).not.toContain(`profiles/kns.b${NAMESPACES - 1}`);
    expect(Object.keys(before)).toContain('networkpolicies/b3/knp.default.deny-egress');
    expect(Object.keys(before)).toContain('profiles/ksa.b0.sa-b');

    const restartedAt = Date.now();
    const logFrom = victim.log.length;
    start(victim);
    await until('the restarted victim ends where the reference is', async () => {
      const [a, b] = await Promise.all([dump(ref.kv), dump(victim.kv)]);
      return canon(a) === canon(b);
    });
    console.log(`restarted victim converged in ${Date.now() - restartedAt} ms`);
    const after = await dump(victim.kv);
    expect(Object.keys(after).sort()).toEqual(expectedKeys);
    expect(labelsRight(after)).toBe(true);
    expect(after).toEqual(await dump(ref.kv));
    // Ready by its probe once this process says it runs (the killed one's status file said ready).
    await until('the restarted victim running', async () =>
      victim.log.slice(logFrom).some((l) => l.includes('"msg":"controllers running"')),
    );
    await until('the restarted victim ready', () => ready(victim));
    // Nothing it planned was already done and taken for a failure (a pass that ran before the
    // watch brought back the previous pass's writes).
    expect(
      victim.log
        .slice(logFrom)
        .filter((l) => l.includes('cannot write') && /not found|already exist/i.test(l)),
    ).toEqual([]);
    // It stays there: no late write undoes it.
    await new Promise((r) => setTimeout(r, 1000));
    expect(await dump(victim.kv)).toEqual(await dump(ref.kv));
  }, 180_000);
});
