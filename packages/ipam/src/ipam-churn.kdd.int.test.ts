/**
 * Many allocators at once on the Kubernetes datastore (IPAMBlock, BlockAffinity, IPAMHandle CRDs
 * on a real kube-apiserver), assigning and releasing at the same time: 32 allocators, each its own
 * KVStore and IpamStore as a separate process would have, 8 on each of 4 hosts, so that the
 * allocators of a host race for its blocks (compare-and-swap losses: the handle created with a
 * lost block write must be taken back) and the hosts race to claim blocks of a small pool (blocks
 * of 8 addresses, so they fill and are claimed again and again). Half the allocators mirror their
 * host, as the CNI plugin service does, half read each time, as a one-shot plugin does; and one
 * more client serves 8 concurrent requests of a fifth host on its own, as the service serves a
 * node's concurrent ADDs.
 *
 * What a user would observe is checked against the records (read through kubectl too): no address
 * is ever held by two live requests, every live request's address is in its host's block under
 * its handle, there is an IPAMHandle for every live request and for nothing else (no handle left
 * behind by a lost race or a release), `check()` finds nothing wrong; after everything is
 * released, no allocation and no handle is left.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { createKVStore, KVDatastore, type KVStore } from '@calico-ts/datastore';
import {
  findKubectl,
  type KubeApiServer,
  missingKubePrerequisites,
  startKubeApiServer,
} from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IpamClient } from './ipam-client.js';
import { IpamStore } from './store/ipam-store.js';

const REPO = join(import.meta.dirname, '../../..');
const CRDS = join(REPO, 'deploy/crds/calico-crds.yaml');

const missing = missingKubePrerequisites({ crds: CRDS });
if (missing.length > 0) {
  describe('IPAM churn on the Kubernetes datastore', () => {
    it.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

const HOSTS = ['churn-node-1', 'churn-node-2', 'churn-node-3', 'churn-node-4'];
/** The host one shared client serves, 8 requests at a time. */
const SHARED_HOST = 'churn-node-5';
const PER_HOST = 8;
/** Operations per allocator: assignments, with a release of an earlier one every third. */
const OPS = 15;
const POOL = '198.19.6.0/23';

interface Allocator {
  client: IpamClient;
  host: string;
}

interface Live {
  handle: string;
  host: string;
  address: string;
  block: string;
}

describe.skipIf(missing.length > 0)('IPAM churn on the Kubernetes datastore', () => {
  let api: KubeApiServer;
  const stores: KVStore[] = [];
  let admin: { client: IpamClient; store: IpamStore };

  function kubectl(args: string[], input = ''): Promise<string> {
    return new Promise((resolve, reject) => {
      const child = execFile(
        findKubectl()!,
        ['--kubeconfig', api.kubeconfigPath, ...args],
        { maxBuffer: 64 * 1024 * 1024 },
        (err, stdout, stderr) =>
          err ? reject(new Error(`kubectl ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout),
      );
      child.stdin!.end(input);
    });
  }

  async function open(): Promise<{ client: IpamClient; store: IpamStore }> {
    const kv = await createKVStore({
      datastoreType: 'kubernetes',
      etcdEndpoints: [],
      kubeconfig: api.kubeconfigPath,
    });
    stores.push(kv);
    const store = new IpamStore(kv);
    return { client: new IpamClient(new KVDatastore(kv, { backend: 'kubernetes' }), store), store };
  }

  beforeAll(async () => {
    api = await startKubeApiServer();
    await kubectl(['apply', '--server-side', '-f', CRDS]);
    await kubectl(['wait', '--for', 'condition=established', '--timeout', '60s', 'crd', '--all']);
    for (const h of [...HOSTS, SHARED_HOST]) {
      await kubectl(
        ['apply', '-f', '-'],
        JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: h } }),
      );
    }
    admin = await open();
    await new KVDatastore(stores[0]!, { backend: 'kubernetes' }).create({
      apiVersion: 'projectcalico.org/v3',
      kind: 'IPPool',
      metadata: { name: 'churn-pool' },
      spec: { cidr: POOL, blockSize: 29, ipipMode: 'Never', vxlanMode: 'Never', nodeSelector: 'all()' },
    });
  }, 120_000);

  afterAll(async () => {
    await Promise.all(stores.map((kv) => kv.close().catch(() => undefined)));
    await api?.stop();
  }, 60_000);

  it('32 allocators assigning and releasing at once never hand out an address twice, and leave no handle behind', async () => {
    const allocators: Allocator[] = [];
    for (const [h, host] of HOSTS.entries()) {
      for (let k = 0; k < PER_HOST; k++) {
        const { client } = await open();
        // Half mirror their host (the plugin service), half read each time (a one-shot plugin).
        if ((h + k) % 2 === 0) await client.mirrorHost(host);
        allocators.push({ client, host });
      }
    }
    const shared = await open();
    await shared.client.mirrorHost(SHARED_HOST);
    for (let k = 0; k < PER_HOST; k++) allocators.push({ client: shared.client, host: SHARED_HOST });

    const live = new Map<string, Live>();
    /** Address → the live request holding it: a second holder is the failure this test is for. */
    const holder = new Map<string, string>();
    const twice: string[] = [];
    const released: string[] = [];
    let serial = 0;
    await Promise.all(
      allocators.map(async (a, i) => {
        const mine: string[] = [];
        for (let op = 0; op < OPS; op++) {
          if (op % 3 === 2 && mine.length > 0) {
            const handle = mine.shift()!;
            const gone = live.get(handle)!;
            // Forgotten before the release resolves: from then on the address may be handed out.
            live.delete(handle);
            holder.delete(gone.address);
            const r = await a.client.releaseByHandle(handle);
            expect(r.released, handle).toEqual([gone.address]);
            released.push(handle);
            continue;
          }
          const handle = `k8s-pod-network.churn-${i}-${serial++}`;
          const res = await a.client.autoAssign({
            num4: 1,
            num6: 0,
            handleId: handle,
            hostname: a.host,
            attrs: { node: a.host, namespace: 'churn', pod: handle },
          });
          expect(res.ipv4, handle).toHaveLength(1);
          const ip = res.ipv4[0]!;
          const other = holder.get(ip.address);
          if (other) twice.push(`${ip.address}: ${other} and ${handle}`);
          holder.set(ip.address, handle);
          live.set(handle, { handle, host: a.host, address: ip.address, block: ip.block });
          mine.push(handle);
        }
      }),
    );
    expect(twice).toEqual([]);
    expect(live.size + released.length).toBe(serial);

    // The blocks hold exactly the live requests, each under its handle, in its own host's block.
    const blocks = (await admin.store.listBlocks()).items.map((b) => b.value);
    const held = new Map<string, string>();
    for (const b of blocks) {
      const base = b.cidr.split('/')[0]!.split('.').map(Number);
      b.allocations.forEach((attr, ordinal) => {
        if (attr === null) return;
        const address = [...base.slice(0, 3), base[3]! + ordinal].join('.');
        const handle = b.attributes[attr]!.handle_id!;
        expect(held.has(address), address).toBe(false);
        held.set(address, handle);
        expect(b.affinity, address).toBe(`host:${live.get(handle)?.host}`);
      });
    }
    expect(Object.fromEntries(held)).toEqual(
      Object.fromEntries([...live.values()].map((l) => [l.address, l.handle])),
    );

    // One IPAMHandle per live request and nothing else, as kubectl shows them.
    const handles = JSON.parse(await kubectl(['get', 'ipamhandles.crd.projectcalico.org', '-o', 'json'])) as {
      items: { spec: { handleID: string; block: Record<string, number> } }[];
    };
    expect(handles.items.map((h) => h.spec.handleID).sort()).toEqual([...live.keys()].sort());
    for (const h of handles.items) {
      expect(h.spec.block, h.spec.handleID).toEqual({ [live.get(h.spec.handleID)!.block]: 1 });
    }
    const report = await admin.client.check();
    expect(report.ok, JSON.stringify(report)).toBe(true);
    expect(report.summary.allocations).toBe(live.size);

    // Everything released, from one client: nothing of any request is left.
    await Promise.all([...live.keys()].map((h) => admin.client.releaseByHandle(h)));
    expect(
      JSON.parse(await kubectl(['get', 'ipamhandles.crd.projectcalico.org', '-o', 'json'])).items,
    ).toEqual([]);
    for (const b of (await admin.store.listBlocks()).items) {
      expect(
        b.value.allocations.every((x) => x === null),
        b.value.cidr,
      ).toBe(true);
    }
    for (const a of allocators) a.client.close();
  }, 600_000);
});
