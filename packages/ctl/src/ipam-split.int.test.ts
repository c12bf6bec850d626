/**
 * `calicoctl ipam split` against a real etcd, with the built executable: refused on an unlocked
 * datastore and for a bad count, leaving the pool as it was; on a locked one the pool becomes
 * `split-<pool>-<i>` pools with its spec and labels, its allocations and block affinities stay,
 * and after unlocking new addresses come from a child.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createKVStore, KVDatastore, type KVStore } from '@calico-ts/datastore';
import { type EtcdServer, etcdAvailable, startEtcd } from '@calico-ts/datastore/testing';
import { IpamClient, IpamStore } from '@calico-ts/ipam';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { calicoctlExecutable } from './testing-internal/executable.js';

const EXE = calicoctlExecutable();

describe.runIf(etcdAvailable())(`${EXE.name} ipam split against etcd`, () => {
  let etcd: EtcdServer;
  let dir: string;
  let kv: KVStore;
  let ds: KVDatastore;
  let ipam: IpamClient;
  const ctl = (...args: string[]) => EXE.run([...args, '-c', join(dir, 'calicoctl.cfg')]);
  const pools = async () =>
    (await ds.list('IPPool')).items
      .map((p) => ({ name: p.metadata.name, cidr: p.spec.cidr, disabled: p.spec.disabled ?? false }))
      .sort((a, b) => a.name.localeCompare(b.name));

  beforeAll(async () => {
    await EXE.ensureBuilt();
    etcd = await startEtcd();
    dir = await mkdtemp(join(tmpdir(), 'calicoctl-split-int-'));
    await writeFile(
      join(dir, 'calicoctl.cfg'),
      `apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nmetadata: {}\nspec:\n  datastoreType: etcdv3\n  etcdEndpoints: ${etcd.clientUrl}\n`,
    );
    kv = await createKVStore({ datastoreType: 'etcdv3', etcdEndpoints: etcd.endpoints });
    ds = new KVDatastore(kv, { backend: 'etcdv3' });
    ipam = new IpamClient(ds, new IpamStore(kv));
    await ds.create({
      apiVersion: 'projectcalico.org/v3',
      kind: 'ClusterInformation',
      metadata: { name: 'default' },
      spec: { clusterGUID: 'c0ffee', datastoreReady: true },
    } as never);
    await ds.create({
      apiVersion: 'projectcalico.org/v3',
      kind: 'IPPool',
      metadata: { name: 'big', labels: { zone: 'a' } },
      spec: { cidr: '198.18.0.0/22', blockSize: 26, natOutgoing: true, nodeSelector: 'all()' },
    } as never);
    await ds.create({
      apiVersion: 'projectcalico.org/v3',
      kind: 'Node',
      metadata: { name: 'node-a' },
      spec: {},
    } as never);
  }, 120_000);

  afterAll(async () => {
    await ds?.close().catch(() => {});
    await etcd?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('refused on an unlocked datastore, for a count that is no power of 2, or for children smaller than a block', async () => {
    const before = await pools();
    const unlocked = await ctl('ipam', 'split', '2', '--name', 'big');
    expect(unlocked.code).toBe(1);
    expect(unlocked.stderr).toContain(
      'Datastore is not locked. Run the `calicoctl datastore migrate lock` command',
    );
    expect((await ctl('datastore', 'migrate', 'lock')).code).toBe(0);
    const three = await ctl('ipam', 'split', '3', '--name', 'big');
    expect(three.code).toBe(1);
    expect(three.stderr).toContain('Number to split CIDR into is not a valid power of 2: 3');
    const tiny = await ctl('ipam', 'split', '32', '--cidr', '198.18.0.0/22');
    expect(tiny.code).toBe(1);
    expect(tiny.stderr).toContain("smaller than the pool's /26 blocks");
    const missing = await ctl('ipam', 'split', '2', '--cidr', '198.18.8.0/22');
    expect(missing.stderr).toContain('Unable to find IP pool covering the specified CIDR 198.18.8.0/22');
    const neither = await ctl('ipam', 'split', '2');
    expect(neither.stderr).toContain('No name or CIDR provided');
    expect(await pools()).toEqual(before);
  });

  test('a locked split keeps the pool’s spec, labels, allocations and affinities in its children', async () => {
    expect((await ctl('datastore', 'migrate', 'unlock')).code).toBe(0);
    const held = await ipam.autoAssign({
      num4: 1,
      num6: 0,
      handleId: 'k8s-pod-network.web',
      hostname: 'node-a',
      attrs: { node: 'node-a', namespace: 'default', pod: 'web' },
    });
    const ip = held.ipv4[0]!.address;
    const block = held.ipv4[0]!.block;
    expect((await ctl('datastore', 'migrate', 'lock')).code).toBe(0);

    const before = await ds.list('IPPool');
    const r = await ctl('ipam', 'split', '2', '--cidr', '198.18.0.0/22');
    expect(r.code, r.stderr).toBe(0);
    // Every write of the split, replayed: the pool's addresses are inside some pool after each
    // one (the children are made beside the parent, which goes last).
    const abort = new AbortController();
    const stored = new Map(before.items.map((p) => [p.metadata.name, p.spec.cidr]));
    const steps: string[] = [];
    for await (const e of ds.watch('IPPool', { revision: before.revision, signal: abort.signal })) {
      if (e.kind === 'added' || e.kind === 'modified')
        stored.set(e.resource.metadata.name, e.resource.spec.cidr);
      else if (e.kind === 'deleted') stored.delete(e.resource.metadata.name);
      else continue;
      steps.push(`${e.kind} ${e.resource.metadata.name}`);
      const cidrs = [...stored.values()];
      const covers = (lo: string, hi: string) =>
        cidrs.includes('198.18.0.0/22') || (cidrs.includes(lo) && cidrs.includes(hi));
      expect(covers('198.18.0.0/23', '198.18.2.0/23'), `after ${steps.join(', ')}`).toBe(true);
      if (e.kind === 'deleted' && e.resource.metadata.name === 'big') abort.abort();
    }
    expect(steps).toEqual(['modified big', 'added split-big-0', 'added split-big-1', 'deleted big']);
    expect(r.stdout).toBe(
      'IP Pool big was successfully split into 2 smaller pools.\n' +
        'Created split-big-0 with CIDR 198.18.0.0/23.\n' +
        'Created split-big-1 with CIDR 198.18.2.0/23.\n' +
        'Unlock the datastore (`calicoctl datastore migrate unlock`) to resume IPAM.\n',
    );
    expect(await pools()).toEqual([
      { name: 'split-big-0', cidr: '198.18.0.0/23', disabled: false },
      { name: 'split-big-1', cidr: '198.18.2.0/23', disabled: false },
    ]);
    const child = await ds.get('IPPool', 'split-big-0');
    expect(child.metadata.labels).toEqual({ zone: 'a' });
    expect(child.spec).toMatchObject({ natOutgoing: true, blockSize: 26, nodeSelector: 'all()' });

    const show = await ctl('ipam', 'show', `--ip=${ip}`);
    expect(show.stdout).toContain(`IP ${ip} is in use`);
    const blocks = await ctl('ipam', 'show', '--show-blocks');
    expect(blocks.stdout).toContain(block);

    expect((await ctl('datastore', 'migrate', 'unlock')).code).toBe(0);
    const next = await ipam.autoAssign({
      num4: 1,
      num6: 0,
      handleId: 'k8s-pod-network.api',
      hostname: 'node-a',
      attrs: { node: 'node-a', namespace: 'default', pod: 'api' },
    });
    // From the node's same affine block, now inside a child pool.
    expect(next.ipv4[0]!.block).toBe(block);
  });
});
