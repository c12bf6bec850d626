/**
 * kube-controllers in etcd mode against a real kube-apiserver and a real etcd: Namespaces,
 * ServiceAccounts and Kubernetes NetworkPolicies become kns.*, ksa.* Profiles and knp.default.*
 * policies in etcd (at upstream's keys), WorkloadEndpoint labels follow their Pods, drift in etcd
 * is repaired, and a restart loses nothing.
 */

import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NOOP_LOGGER } from '@calico-ts/api/log';

import { createKVStore, KVDatastore, type KVStore } from '@calico-ts/datastore';
import { EtcdKVStore } from '@calico-ts/datastore/etcd3';
import {
  type EtcdServer,
  findKubectl,
  type KubeApiServer,
  missingKubePrerequisites,
  startEtcd,
  startKubeApiServer,
} from '@calico-ts/datastore/testing';
import { IpamClient, IpamStore } from '@calico-ts/ipam';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeControllers } from './kube-controllers.js';
import { serveMetrics } from './metrics-server.js';

const CRDS = join(dirname(fileURLToPath(import.meta.url)), '../../../deploy/crds/calico-crds.yaml');

const missing = missingKubePrerequisites({ crds: CRDS });
if (missing.length > 0) {
  describe('kube-controllers', () => {
    it.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

async function until<T>(what: string, f: () => Promise<T | undefined | false>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await f();
      if (v) return v as T;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end)
      throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.skipIf(missing.length > 0)(
  'kube-controllers on a real kube-apiserver, writing to a real etcd',
  () => {
    let api: KubeApiServer;
    let etcd: EtcdServer;
    let kubeKv: KVStore;
    let kube: KVDatastore;
    let calicoKv: EtcdKVStore;
    let calico: KVDatastore;
    let controllers: KubeControllers | undefined;

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
    const apply = (doc: object) => kubectl(['apply', '-f', '-'], JSON.stringify(doc));
    const start = async (extra: { autoHostEndpoints?: boolean } = { autoHostEndpoints: true }) => {
      controllers = new KubeControllers({
        ...extra,
        enabled: ['namespace', 'serviceaccount', 'policy', 'workloadendpoint', 'node'],
        kubernetes: { datastore: kube, kv: kubeKv },
        calico,
        ipam: new IpamClient(calico, new IpamStore(calicoKv)),
        leakGracePeriodMs: 1,
        ipamBlocks: async () => (await new IpamStore(calicoKv).listBlocks()).items.map((b) => b.value),
        reconcilePeriodMs: 300,
        log: NOOP_LOGGER,
        debounceMs: 20,
      });
      await controllers.start();
    };
    const etcdGet = async (key: string) => {
      const r = await etcd.etcdctl(['get', key, '--print-value-only']);
      return r.stdout.trim() === '' ? undefined : JSON.parse(r.stdout);
    };

    beforeAll(async () => {
      [api, etcd] = await Promise.all([startKubeApiServer(), startEtcd()]);
      await kubectl(['apply', '--server-side', '-f', CRDS]);
      kubeKv = await createKVStore({
        datastoreType: 'kubernetes',
        etcdEndpoints: [],
        kubeconfig: api.kubeconfigPath,
      });
      kube = new KVDatastore(kubeKv, { backend: 'kubernetes' });
      calicoKv = new EtcdKVStore({ endpoints: etcd.endpoints });
      calico = new KVDatastore(calicoKv, { backend: 'etcdv3' });
      await apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop', labels: { team: 'a' } } });
      await apply({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'api', namespace: 'shop' } });
      await start();
    }, 120_000);

    afterAll(async () => {
      await controllers?.stop();
      await kube?.close();
      await calico?.close();
      await Promise.all([api?.stop(), etcd?.stop()]);
    });

    it('writes kns.* and ksa.* Profiles at upstream’s etcd keys, and follows label changes', async () => {
      const kns = await until('kns.shop in etcd', () =>
        etcdGet('/calico/resources/v3/projectcalico.org/profiles/kns.shop'),
      );
      expect(kns.spec).toEqual({
        ingress: [{ action: 'Allow' }],
        egress: [{ action: 'Allow' }],
        labelsToApply: {
          'pcns.kubernetes.io/metadata.name': 'shop',
          'pcns.projectcalico.org/name': 'shop',
          'pcns.team': 'a',
        },
      });
      const ksa = await until('ksa.shop.api', () =>
        etcdGet('/calico/resources/v3/projectcalico.org/profiles/ksa.shop.api'),
      );
      expect(ksa.spec.labelsToApply).toEqual({ 'pcsa.projectcalico.org/name': 'api' });

      await kubectl(['label', 'namespace', 'shop', 'team=b', '--overwrite']);
      await until(
        'relabelled kns.shop',
        async () => (await calico.get('Profile', 'kns.shop')).spec.labelsToApply?.['pcns.team'] === 'b',
      );
      await kubectl(['delete', 'serviceaccount', 'api', '-n', 'shop']);
      await until(
        'ksa.shop.api gone',
        async () =>
          (await etcdGet('/calico/resources/v3/projectcalico.org/profiles/ksa.shop.api')) === undefined,
      );
    });

    it('repairs a Profile deleted or changed by hand in etcd', async () => {
      await until('kns.shop', () => etcdGet('/calico/resources/v3/projectcalico.org/profiles/kns.shop'));
      await calico.delete('Profile', 'kns.shop');
      await until('kns.shop back', () => etcdGet('/calico/resources/v3/projectcalico.org/profiles/kns.shop'));
      const p = await calico.get('Profile', 'kns.shop');
      await calico.update({ ...p, spec: { ...p.spec, ingress: [{ action: 'Deny' }] } });
      await until(
        'kns.shop allows again',
        async () => (await calico.get('Profile', 'kns.shop')).spec.ingress?.[0]?.action === 'Allow',
      );
    });

    it('mirrors Kubernetes NetworkPolicies as knp.default.* policies, and removes them with the original', async () => {
      await apply({
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: 'web-in', namespace: 'shop' },
        spec: {
          podSelector: { matchLabels: { app: 'web' } },
          ingress: [{ ports: [{ port: 80, protocol: 'TCP' }] }],
          policyTypes: ['Ingress'],
        },
      });
      const key = '/calico/resources/v3/projectcalico.org/networkpolicies/shop/knp.default.web-in';
      const stored = await until('knp.default.web-in in etcd', () => etcdGet(key));
      expect(stored.spec).toMatchObject({
        order: 1000,
        selector: "projectcalico.org/orchestrator == 'k8s' && app == 'web'",
        types: ['Ingress'],
        ingress: [{ action: 'Allow', protocol: 'TCP', destination: { ports: [80] } }],
      });
      await kubectl(['delete', 'networkpolicy', 'web-in', '-n', 'shop']);
      await until('knp.default.web-in gone', async () => (await etcdGet(key)) === undefined);
    });

    it('keeps WorkloadEndpoint labels in step with the Pod, never creating endpoints', async () => {
      await apply({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'web-1', namespace: 'shop', labels: { app: 'web' } },
        spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'none' }] },
      });
      await apply({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'no-wep', namespace: 'shop', labels: { app: 'db' } },
        spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'none' }] },
      });
      // The endpoint as the CNI plugin writes it in etcd mode: only Calico's own labels.
      await calico.create({
        apiVersion: 'projectcalico.org/v3',
        kind: 'WorkloadEndpoint',
        metadata: { name: 'n1-k8s-web--1-eth0', namespace: 'shop' },
        spec: {
          orchestrator: 'k8s',
          node: 'n1',
          pod: 'web-1',
          endpoint: 'eth0',
          containerID: 'c1',
          ipNetworks: ['198.19.0.5/32'],
          interfaceName: 'cali12345678901',
          profiles: ['kns.shop'],
        },
      });
      const labelsOf = async () =>
        (await calico.get('WorkloadEndpoint', 'n1-k8s-web--1-eth0', { namespace: 'shop' })).metadata.labels ??
        {};
      await until('pod labels on the WEP', async () => (await labelsOf()).app === 'web');
      expect(await labelsOf()).toEqual({
        app: 'web',
        'projectcalico.org/namespace': 'shop',
        'projectcalico.org/orchestrator': 'k8s',
        'projectcalico.org/serviceaccount': 'default',
      });
      await kubectl(['label', 'pod', 'web-1', '-n', 'shop', 'app=web2', '--overwrite']);
      await until('new label', async () => (await labelsOf()).app === 'web2');
      expect(
        (await calico.list('WorkloadEndpoint', { namespace: 'shop' })).items.map((w) => w.metadata.name),
      ).toEqual(['n1-k8s-web--1-eth0']);
    });

    it('a restart loses nothing: changes made while it was down are reconciled on start', async () => {
      await controllers!.stop();
      controllers = undefined;
      await apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'later', labels: { t: '1' } } });
      await apply({
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: 'deny', namespace: 'later' },
        spec: { podSelector: {}, policyTypes: ['Ingress'] },
      });
      await calico.delete('Profile', 'kns.shop');
      await start();
      expect((await calico.get('Profile', 'kns.later')).spec.labelsToApply?.['pcns.t']).toBe('1');
      expect((await calico.get('Profile', 'kns.shop')).metadata.name).toBe('kns.shop');
      expect(
        (await calico.get('NetworkPolicy', 'knp.default.deny', { namespace: 'later' })).spec.types,
      ).toEqual(['Ingress']);
      const status = controllers!.status();
      expect(status.map((s) => s.name).sort()).toEqual([
        'namespace',
        'node',
        'policy',
        'serviceaccount',
        'workloadendpoint',
      ]);
      expect(status.every((s) => s.lastReconciled !== undefined && s.lastReport?.failed.length === 0)).toBe(
        true,
      );
    });

    it('releases an address whose pod is gone, keeps one whose pod exists, and follows a deleted Kubernetes Node', async () => {
      const ipam = new IpamClient(calico, new IpamStore(calicoKv));
      await calico.apply({
        apiVersion: 'projectcalico.org/v3',
        kind: 'IPPool',
        metadata: { name: 'pool' },
        spec: { cidr: '198.19.0.0/16', blockSize: 26, nodeSelector: 'all()' },
      });
      for (const n of ['n1', 'n2']) {
        await apply({ apiVersion: 'v1', kind: 'Node', metadata: { name: n } });
        await calico.apply({
          apiVersion: 'projectcalico.org/v3',
          kind: 'Node',
          metadata: { name: n },
          spec: {},
        });
      }
      await apply({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'alive', namespace: 'shop' },
        spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'none' }] },
      });
      const attrs = (pod: string, node: string) => ({
        namespace: 'shop',
        pod,
        node,
        timestamp: '2026-11-26 00:00:00 +0000 UTC',
      });
      const assign = (pod: string, node: string) =>
        ipam.autoAssign({
          num4: 1,
          num6: 0,
          handleId: `k8s-pod-network.${pod}`,
          hostname: node,
          attrs: attrs(pod, node),
        });
      const kept = await assign('alive', 'n1');
      const leaked = await assign('gone', 'n1');
      const onN2 = await assign('n2pod', 'n2');
      await calico.create({
        apiVersion: 'projectcalico.org/v3',
        kind: 'WorkloadEndpoint',
        metadata: { name: 'n2-k8s-n2pod-eth0', namespace: 'shop' },
        spec: {
          orchestrator: 'k8s',
          node: 'n2',
          pod: 'n2pod',
          endpoint: 'eth0',
          ipNetworks: [`${onN2.ipv4[0]!.address}/32`],
          interfaceName: 'cali0000000000a',
        },
      });
      const owned = (ip: string) =>
        ipam.getAssignmentAttributes(ip).then(
          () => true,
          () => false,
        );
      await until('the leaked address released', async () => !(await owned(leaked.ipv4[0]!.address)));
      expect(await owned(kept.ipv4[0]!.address)).toBe(true);

      await kubectl(['delete', 'node', 'n2']);
      await until(
        'Calico Node n2 gone',
        async () => !(await calico.list('Node')).items.some((n) => n.metadata.name === 'n2'),
      );
      const weps = await calico.list('WorkloadEndpoint', { namespace: 'shop' });
      expect(weps.items.map((w) => w.metadata.name)).not.toContain('n2-k8s-n2pod-eth0');
      expect((await new IpamStore(calicoKv).listAffinities('n2')).items).toEqual([]);
      await until('n2’s pod address released', async () => !(await owned(onN2.ipv4[0]!.address)));
      expect(await owned(kept.ipv4[0]!.address)).toBe(true);

      // What Prometheus scrapes: upstream's IPAM series, and the controllers' own counters.
      const server = await serveMetrics(controllers!.metrics, { port: 0, host: '127.0.0.1' });
      try {
        const scrape = async () => {
          const res = await fetch(`http://127.0.0.1:${server.port}/metrics`);
          expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
          return res.text();
        };
        const value = (text: string, series: string) => {
          const line = text.split('\n').find((l) => l.startsWith(`${series} `));
          return line === undefined ? undefined : Number(line.slice(series.length + 1));
        };
        // Reclamations: the leaked n1 address and n2's pod address, counted once each, by node.
        const text = await until('both reclamations counted and n1 in use', async () => {
          const t = await scrape();
          return value(t, 'ipam_allocations_gc_reclamations{ippool="pool",node="n1"}') === 1 &&
            value(t, 'ipam_allocations_gc_reclamations{ippool="pool",node="n2"}') === 1 &&
            value(t, 'ipam_allocations_in_use{ippool="pool",node="n1"}') === 1
            ? t
            : undefined;
        });
        expect(value(text, 'ipam_blocks{ippool="pool",node="n1"}')).toBe(1);
        expect(value(text, 'ipam_ippool_size{ippool="pool"}')).toBe(65536);
        expect(value(text, 'ipam_allocations_gc_candidates{ippool="pool",node="n1"}')).toBe(0);
        expect(value(text, 'ipam_allocations_in_use{ippool="pool",node="n2"}')).toBeUndefined();
        expect(value(text, 'kube_controllers_reconciles_total{controller="namespace"}')).toBeGreaterThan(0);
        expect(value(text, 'kube_controllers_reconcile_errors_total{controller="namespace"}')).toBe(0);
        expect(
          value(text, 'kube_controllers_writes_total{controller="namespace",operation="create"}'),
        ).toBeGreaterThan(0);
        expect((await fetch(`http://127.0.0.1:${server.port}/other`)).status).toBe(404);
      } finally {
        await server.close();
      }
    }, 60_000);

    it('syncs Kubernetes Node labels onto the Calico Node and keeps an auto HostEndpoint per node, removed when turned off', async () => {
      await apply({
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name: 'n3', labels: { zone: 'a', gone: 'x' } },
      });
      await calico.apply({
        apiVersion: 'projectcalico.org/v3',
        kind: 'Node',
        metadata: { name: 'n3', labels: { 'set-by-calico': 'yes' } },
        spec: {
          bgp: { ipv4Address: '10.0.0.3/24', ipv6Address: 'fd00::3/64', ipv4IPIPTunnelAddr: '198.19.3.1' },
          ipv4VXLANTunnelAddr: '198.19.3.2',
          orchRefs: [{ orchestrator: 'k8s', nodeName: 'n3' }],
        },
      });
      const hepKey = '/calico/resources/v3/projectcalico.org/hostendpoints/n3-auto-hep';
      const hep = await until('n3-auto-hep in etcd with the synced labels', async () => {
        const h = await etcdGet(hepKey);
        return h?.metadata.labels?.zone === 'a' ? h : undefined;
      });
      expect(hep.metadata.labels).toEqual({
        zone: 'a',
        gone: 'x',
        'set-by-calico': 'yes',
        'projectcalico.org/created-by': 'calico-kube-controllers',
      });
      expect(hep.spec).toEqual({
        node: 'n3',
        interfaceName: '*',
        expectedIPs: ['10.0.0.3', 'fd00::3', '198.19.3.1', '198.19.3.2'],
        profiles: ['projectcalico-default-allow'],
      });
      const node = await calico.get('Node', 'n3');
      expect(node.metadata.labels).toEqual({ zone: 'a', gone: 'x', 'set-by-calico': 'yes' });
      expect(JSON.parse(node.metadata.annotations?.['projectcalico.org/kube-labels'] ?? '{}')).toEqual({
        gone: 'x',
        zone: 'a',
      });

      // Kubernetes drops one label and changes another: both follow, Calico's own label stays.
      await kubectl(['label', 'node', 'n3', 'gone-', 'zone=b', '--overwrite']);
      await until('relabelled HEP', async () => (await etcdGet(hepKey))?.metadata.labels?.zone === 'b');
      expect((await calico.get('Node', 'n3')).metadata.labels).toEqual({ zone: 'b', 'set-by-calico': 'yes' });
      expect((await etcdGet(hepKey)).metadata.labels.gone).toBeUndefined();

      // A new address on the Calico Node (calico-node writes it) reaches the HEP.
      const n3 = await calico.get('Node', 'n3');
      await calico.update({ ...n3, spec: { ...n3.spec, ipv6VXLANTunnelAddr: 'fd00:1::3' } });
      await until('the new address on the HEP', async () =>
        (await etcdGet(hepKey))?.spec.expectedIPs.includes('fd00:1::3'),
      );

      // Turned off: the auto HEPs go; a HostEndpoint someone else made stays.
      await calico.create({
        apiVersion: 'projectcalico.org/v3',
        kind: 'HostEndpoint',
        metadata: { name: 'n3-eth0' },
        spec: { node: 'n3', interfaceName: 'eth0' },
      });
      await controllers!.stop();
      await start({ autoHostEndpoints: false });
      await until('n3-auto-hep gone', async () => (await etcdGet(hepKey)) === undefined);
      expect((await calico.list('HostEndpoint')).items.map((h) => h.metadata.name)).toEqual(['n3-eth0']);

      // And with it on, a deleted Kubernetes Node takes its HEP.
      await controllers!.stop();
      await start();
      await until('n3-auto-hep back', () => etcdGet(hepKey));
      await kubectl(['delete', 'node', 'n3']);
      await until('n3-auto-hep gone with the node', async () => (await etcdGet(hepKey)) === undefined);
      await until(
        'Calico Node n3 gone',
        async () => !(await calico.list('Node')).items.some((n) => n.metadata.name === 'n3'),
      );
    }, 60_000);

    it('a node whose host endpoint cannot be valid is reported and skipped; the others get theirs', async () => {
      const long = `n${'x'.repeat(248)}`; // a valid Node name; "<name>-auto-hep" is over 253 characters
      for (const n of [long, 'n4']) {
        await apply({ apiVersion: 'v1', kind: 'Node', metadata: { name: n } });
        await calico.apply({
          apiVersion: 'projectcalico.org/v3',
          kind: 'Node',
          metadata: { name: n },
          spec: {},
        });
      }
      await until('n4-auto-hep', () =>
        etcdGet('/calico/resources/v3/projectcalico.org/hostendpoints/n4-auto-hep'),
      );
      const skippedCount = () =>
        Number(
          /^kube_controllers_unconvertible_objects_total\{controller="node"\} (\d+)$/m.exec(
            controllers!.metrics.render(),
          )?.[1] ?? 0,
        );
      await until('the long-named node reported', async () => skippedCount() === 1);
      expect((await calico.list('HostEndpoint')).items.map((h) => h.metadata.name)).not.toContain(
        `${long}-auto-hep`,
      );
      // Later passes neither report it again nor count it as a failure to retry.
      await controllers!.stop();
      await start();
      const node = controllers!.status().find((s) => s.name === 'node');
      expect(node?.lastReport?.failed).toEqual([]);
      for (const n of [long, 'n4']) await kubectl(['delete', 'node', n]);
    }, 60_000);
  },
);
