/**
 * Felix through Typha against Felix on its own syncer, over the same in-memory datastore: the one
 * with FELIX_TYPHAADDR reaches in-sync through a Typha client and programs exactly the ruleset the
 * other programs, before and after a policy change and a delete; after Typha restarts it resyncs
 * and follows a change made meanwhile.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Resource } from '@calico-ts/api';
import { KVDatastore, MemoryKVStore } from '@calico-ts/datastore';
import { FelixDaemon, NOOP_LOGGER } from '@calico-ts/felix';
import { fakeIp, fakeProcSys, seedWebWorkload } from '@calico-ts/felix/testing';
import { Netlinux } from '@calico-ts/netlinux';
import { FakeNft } from '@calico-ts/nftables/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { agentSyncer } from './agent-syncer.js';
import { TyphaServer } from './server.js';
import { typhaSources } from './syncer-sources.js';
import { until } from './testing-internal/consumer.js';

const V3 = 'projectcalico.org/v3';

describe('Felix through Typha', () => {
  let dir: string;
  let kv: MemoryKVStore;
  let ds: KVDatastore;
  let typha: TyphaServer;
  const felixes: FelixDaemon[] = [];

  async function felix(typhaAddr: string | undefined): Promise<{ daemon: FelixDaemon; nft: FakeNft }> {
    const nft = new FakeNft();
    const runner = fakeIp();
    const sys = await fakeProcSys(join(dir, `proc-sys-${felixes.length}`));
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
    await seedWebWorkload(ds);
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
