/**
 * The node controller on the Kubernetes datastore (its defaults there: no Calico Node deletion,
 * no label sync, no auto host endpoints), counted from kube-apiserver's own `apiserver_request_total`:
 *
 *   10 Node label changes, each followed by the node pass it triggers,
 *   3 Pods created and deleted, each deletion followed by the leak scan it triggers
 *
 * Every pass reads the Calico Nodes, HostEndpoints and IPPools from informers (list+watch), not
 * from a list per pass; a scan lists the IPAM blocks once. What the scenario makes the API server
 * answer is asserted as counts (the lists and watches of the controller itself; kubectl's own
 * requests are GETs, PATCHes, POSTs and DELETEs and not counted here).
 */
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NOOP_LOGGER } from '@calico-ts/api/log';
import { createKVStore, KVDatastore, type KVStore } from '@calico-ts/datastore';
import {
  findKubectl,
  type KubeApiServer,
  missingKubePrerequisites,
  readApiRequestCounts,
  requestsBetween,
  startKubeApiServer,
} from '@calico-ts/datastore/testing';
import { IpamClient, IpamStore } from '@calico-ts/ipam';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MetricsRegistry } from './metrics.js';
import { NodeController } from './node-controller.js';

const CRDS = join(dirname(fileURLToPath(import.meta.url)), '../../../deploy/crds/calico-crds.yaml');

const missing = missingKubePrerequisites({ crds: CRDS });
if (missing.length > 0) {
  describe('node controller requests', () => {
    it.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

async function until(what: string, f: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The list and watch requests of a reading, by resource. */
const listsAndWatches = (d: Record<string, number>) =>
  Object.fromEntries(Object.entries(d).filter(([k]) => /^(LIST|WATCH) /.test(k)));

describe.skipIf(missing.length > 0)('node controller on the Kubernetes datastore: API requests', () => {
  let api: KubeApiServer;
  let kv: KVStore;
  let controller: NodeController | undefined;

  const kubectl = (args: string[], input?: string): Promise<string> =>
    new Promise((resolve, reject) => {
      const child = execFile(
        findKubectl()!,
        ['--kubeconfig', api.kubeconfigPath, ...args],
        (err, stdout, stderr) =>
          err ? reject(new Error(`kubectl ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout),
      );
      child.stdin!.end(input ?? '');
    });

  beforeAll(async () => {
    api = await startKubeApiServer();
    await kubectl(['apply', '--server-side', '-f', CRDS]);
    await kubectl(['wait', '--for', 'condition=established', '--timeout', '60s', 'crd', '--all']);
    const nodes = ['n1', 'n2', 'n3'].map((name) => ({ apiVersion: 'v1', kind: 'Node', metadata: { name } }));
    await kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: nodes }));
    kv = await createKVStore({
      datastoreType: 'kubernetes',
      etcdEndpoints: [],
      kubeconfig: api.kubeconfigPath,
    });
  }, 120_000);

  afterAll(async () => {
    await controller?.stop();
    await kv?.close();
    await api?.stop();
  });

  it('node passes and leak scans list nothing the informers hold', async () => {
    const calico = new KVDatastore(kv, { backend: 'kubernetes' });
    await calico.create({
      apiVersion: 'projectcalico.org/v3',
      kind: 'IPPool',
      metadata: { name: 'pool' },
      spec: {
        cidr: '198.18.0.0/16',
        blockSize: 26,
        ipipMode: 'Never',
        vxlanMode: 'Never',
        natOutgoing: false,
      },
    });
    const ipamStore = new IpamStore(kv);
    let passes = 0;
    // A scan reads the blocks and then reports; a node pass only reports.
    let blockReads = 0;
    const readsPerScan: number[] = [];
    controller = new NodeController({
      kubernetes: kv,
      calico,
      ipam: new IpamClient(calico, ipamStore),
      deleteNodes: false,
      syncLabels: false,
      autoHostEndpoints: false,
      metrics: new MetricsRegistry(),
      blocks: async () => {
        blockReads++;
        return (await ipamStore.listBlocks()).items.map((b) => b.value);
      },
      log: NOOP_LOGGER,
      deletionDebounceMs: 20,
      onReconciled: () => {
        passes++;
        if (blockReads > 0) readsPerScan.push(blockReads);
        blockReads = 0;
      },
    });
    await controller.start();
    // Settled: the first scan is done and nothing is scheduled.
    await new Promise((r) => setTimeout(r, 1500));
    const before = await readApiRequestCounts(api);
    readsPerScan.length = 0;

    for (let i = 0; i < 10; i++) {
      const was = passes;
      await kubectl(['label', 'node', `n${(i % 3) + 1}`, `step=${i}`, '--overwrite']);
      await until(`the node pass after label change ${i}`, () => passes > was);
    }
    const afterLabels = passes;
    for (let i = 0; i < 3; i++) {
      const pod = {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: `p${i}`, namespace: 'default' },
        spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'none' }] },
      };
      await kubectl(['apply', '-f', '-'], JSON.stringify(pod));
      const was = passes;
      await kubectl([
        'delete',
        'pod',
        '-n',
        'default',
        `p${i}`,
        '--grace-period=0',
        '--force',
        '--wait=false',
      ]);
      await until(`the scan after pod ${i} was deleted`, () => passes >= was + 2);
    }
    await new Promise((r) => setTimeout(r, 500));
    const after = await readApiRequestCounts(api);
    const d = listsAndWatches(requestsBetween(before, after));
    const scans = readsPerScan.length;
    console.log(
      `node controller, 10 Node label changes + 3 Pod deletions: ${passes} passes, ${scans} scans ` +
        `(block reads per scan ${JSON.stringify(readsPerScan)}); lists and watches: ${JSON.stringify(d)}`,
    );
    expect(afterLabels).toBeGreaterThanOrEqual(10);
    // Nothing the informers hold is listed again: not per node pass, not per scan.
    expect(d['LIST nodes'] ?? 0).toBe(0);
    expect(d['LIST hostendpoints'] ?? 0).toBe(0);
    expect(d['LIST ippools'] ?? 0).toBe(0);
    // A scan that releases nothing lists the IPAM blocks once: it publishes what it judged.
    expect(scans).toBeGreaterThanOrEqual(3);
    expect(readsPerScan.every((n) => n === 1)).toBe(true);
    expect(d['LIST ipamblocks'] ?? 0).toBe(scans);
    // No watch was opened again: the informers' and the Syncer's watches stayed up.
    expect(d).not.toHaveProperty('WATCH nodes');
  }, 120_000);
});
