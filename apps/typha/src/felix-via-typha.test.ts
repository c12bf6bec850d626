/**
 * Felix through Typha against Felix on its own syncer, over the same in-memory datastore: the one
 * with FELIX_TYPHAADDR reaches in-sync through a Typha client and programs exactly the ruleset the
 * other programs, before and after a policy change and a delete; after Typha restarts it resyncs
 * and follows a change made meanwhile.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Resource } from '@calico-ts/api';
import { KVDatastore, MemoryKVStore } from '@calico-ts/datastore';
import { FelixDaemon, NOOP_LOGGER } from '@calico-ts/felix';
import { Netlinux } from '@calico-ts/netlinux';
import { ScriptedCommandRunner } from '@calico-ts/netlinux/testing';
import { FakeNft } from '@calico-ts/nftables/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { agentSyncer } from './agent-syncer.js';
import { TyphaServer } from './server.js';
import { typhaSources } from './syncer-sources.js';
import { until } from './testing-internal/consumer.js';

const V3 = 'projectcalico.org/v3';

const LINKS = JSON.stringify([
  {
    ifname: 'eth0',
    ifindex: 2,
    mtu: 1480,
    flags: ['UP', 'LOWER_UP'],
    operstate: 'UP',
    address: '02:00:00:00:00:01',
  },
  {
    ifname: 'calia',
    ifindex: 7,
    mtu: 1480,
    flags: ['UP', 'LOWER_UP'],
    operstate: 'UP',
    address: 'ee:ee:ee:ee:ee:ee',
  },
]);

describe('Felix through Typha', () => {
  let dir: string;
  let kv: MemoryKVStore;
  let ds: KVDatastore;
  let typha: TyphaServer;
  const felixes: FelixDaemon[] = [];

  async function felix(typhaAddr: string | undefined): Promise<{ daemon: FelixDaemon; nft: FakeNft }> {
    const nft = new FakeNft();
    const runner = new ScriptedCommandRunner((c) =>
      c.args.includes('link') ? { stdout: LINKS } : { stdout: '[]' },
    );
    const sys = join(dir, `proc-sys-${felixes.length}`);
    for (const key of ['net/ipv4/ip_forward', 'net/ipv6/conf/all/forwarding']) {
      await mkdir(join(sys, dirname(key)), { recursive: true });
      await writeFile(join(sys, key), '0\n');
    }
    const daemon = new FelixDaemon({
      local: {
        env: {
          FELIX_FELIXHOSTNAME: 'node1',
          FELIX_HEALTHENABLED: 'false',
          FELIX_MTUFILEPATH: join(dir, `mtu-${felixes.length}`),
          ...(typhaAddr ? { FELIX_TYPHAADDR: typhaAddr } : {}),
        },
        file: {},
        hostname: 'node1',
      },
      datastore: ds,
      syncerFactory: (o, cfg) => agentSyncer(o, cfg, { client: 'felix', syncerType: 'felix' }),
      nft,
      net: new Netlinux({ runner, procSys: sys }),
      log: NOOP_LOGGER,
      debounceMs: 10,
      interfacePollMs: 50,
      retryMs: 50,
    });
    felixes.push(daemon);
    await daemon.start();
    return { daemon, nft };
  }

  const policy = (order: number, action: 'Allow' | 'Deny') =>
    ({
      apiVersion: V3,
      kind: 'GlobalNetworkPolicy',
      metadata: { name: 'web-in' },
      spec: { order, selector: "app == 'web'", types: ['Ingress'], ingress: [{ action, protocol: 'TCP' }] },
    }) as unknown as Resource & { kind: 'GlobalNetworkPolicy' };

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'felix-typha-'));
    kv = new MemoryKVStore();
    ds = new KVDatastore(kv, { backend: 'memory' });
    await ds.create({
      apiVersion: V3,
      kind: 'Profile',
      metadata: { name: 'kns.a' },
      spec: { ingress: [{ action: 'Allow' }], egress: [{ action: 'Allow' }] },
    } as Resource & { kind: 'Profile' });
    await ds.create({
      apiVersion: V3,
      kind: 'WorkloadEndpoint',
      metadata: { name: 'node1-k8s-web-eth0', namespace: 'a', labels: { app: 'web' } },
      spec: {
        orchestrator: 'k8s',
        node: 'node1',
        pod: 'web',
        endpoint: 'eth0',
        containerID: 'c1',
        ipNetworks: ['198.19.0.1/32'],
        profiles: ['kns.a'],
        interfaceName: 'calia',
      },
    } as Resource & { kind: 'WorkloadEndpoint' });
    typha = new TyphaServer({ sources: typhaSources(ds, kv), backend: 'memory', pingIntervalMs: 100 });
    await typha.start();
  });

  afterEach(async () => {
    for (const f of felixes.splice(0)) await f.stop();
    await typha.stop();
    await ds.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('programs what Felix on its own syncer programs, and follows policy changes', async () => {
    const viaTypha = await felix(`127.0.0.1:${typha.port}`);
    const direct = await felix(undefined);
    await until('both ready', () => viaTypha.daemon.ready && direct.daemon.ready);
    expect(typha.stats().clients).toBe(1);
    const text = (n: FakeNft) => JSON.stringify(n.dump());
    const chains = (n: FakeNft) => n.dump().tables.flatMap((t) => t.chains.map((c) => c.name));
    expect(chains(viaTypha.nft)).toContain('filter-cali-tw-calia');
    expect(text(viaTypha.nft)).toBe(text(direct.nft));

    await ds.create(policy(10, 'Allow'));
    await until('the policy chain via Typha', () =>
      chains(viaTypha.nft).includes('filter-cali-pi-gnp/web-in'),
    );
    await until('the same ruleset', () => text(viaTypha.nft) === text(direct.nft));

    const p = await ds.get('GlobalNetworkPolicy', 'web-in');
    await ds.update({ ...p, spec: policy(10, 'Deny').spec });
    await until(
      'the deny rule via Typha',
      () => text(viaTypha.nft).includes('"drop"') && text(viaTypha.nft) === text(direct.nft),
    );

    await ds.delete('GlobalNetworkPolicy', 'web-in');
    await until(
      'the policy gone via Typha',
      () => !chains(viaTypha.nft).includes('filter-cali-pi-gnp/web-in'),
    );
    await until('the same ruleset', () => text(viaTypha.nft) === text(direct.nft));
  });

  it('resyncs through a restarted Typha and applies what changed meanwhile', async () => {
    const viaTypha = await felix(`127.0.0.1:${typha.port}`);
    await until('ready', () => viaTypha.daemon.ready);
    const port = typha.port;
    await typha.stop();
    await until('not ready while Typha is away', () => !viaTypha.daemon.ready);
    await ds.create(policy(10, 'Allow'));
    typha = new TyphaServer({ sources: typhaSources(ds, kv), backend: 'memory', pingIntervalMs: 100, port });
    await typha.start();
    const chains = () => viaTypha.nft.dump().tables.flatMap((t) => t.chains.map((c) => c.name));
    await until('the policy made while Typha was away', () => chains().includes('filter-cali-pi-gnp/web-in'));
    await until('ready again', () => viaTypha.daemon.ready);
  });
});
