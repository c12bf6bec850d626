/**
 * FelixDaemon end to end on fakes: the in-memory datastore, FakeNft and a scripted `ip`. What a
 * user would observe is asserted: the nftables state, the health and metrics endpoints over HTTP,
 * the status keys and the MTU file; readiness follows in-sync, the first apply and datastore
 * reachability, and stopping leaves the rules in place.
 */

import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Resource } from '@calico-ts/api';
import { loggerOf } from '@calico-ts/api/log';
import { KVDatastore, MemoryKVStore } from '@calico-ts/datastore';
import { Netlinux } from '@calico-ts/netlinux';
import type { ScriptedCommandRunner } from '@calico-ts/netlinux/testing';
import { FakeNft } from '@calico-ts/nftables/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NOOP_LOGGER } from '../logging.js';
import { fakeIp, fakeProcSys, seedWebWorkload } from '../testing/index.js';
import { FelixDaemon } from './felix-daemon.js';
import { goDurationString, HealthAggregator, probeResponse, renderTable } from './health.js';
import { statusValue } from './status-reporter.js';

const V3 = 'projectcalico.org/v3';

async function until<T>(what: string, f: () => T | Promise<T>, ms = 5000): Promise<NonNullable<T>> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('FelixDaemon on fakes', () => {
  let dir: string;
  let kv: MemoryKVStore;
  let ds: KVDatastore;
  let nft: FakeNft;
  let runner: ScriptedCommandRunner;
  let daemon: FelixDaemon;
  let probeHangs = false;
  const warnings: { obj: object; msg?: string }[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'felix-daemon-'));
    await fakeProcSys(join(dir, 'proc-sys'));
    kv = new MemoryKVStore();
    ds = new KVDatastore(kv, { backend: 'memory' });
    nft = new FakeNft();
    runner = fakeIp();
    probeHangs = false;
    await seedWebWorkload(ds, { profileLabelsToApply: { 'pcns.projectcalico.org/name': 'a' } });
    await ds.create({
      apiVersion: V3,
      kind: 'FelixConfiguration',
      metadata: { name: 'default' },
      spec: { reportingInterval: '1s', healthHost: '127.0.0.1', prometheusMetricsEnabled: true },
    } as Resource & { kind: 'FelixConfiguration' });
    daemon = new FelixDaemon({
      local: {
        env: {
          FELIX_FELIXHOSTNAME: 'node1',
          FELIX_HEALTHENABLED: 'true',
          FELIX_HEALTHPORT: '0',
          FELIX_PROMETHEUSMETRICSPORT: '0',
          FELIX_PROMETHEUSMETRICSHOST: '127.0.0.1',
          FELIX_MTUFILEPATH: join(dir, 'mtu'),
        },
        file: {},
        hostname: 'os-host',
      },
      datastore: ds,
      statusStore: kv,
      probe: () => (probeHangs ? new Promise(() => {}) : kv.revision()),
      probeIntervalMs: 50,
      probeTimeoutMs: 100,
      nft,
      // Sysctls written outside a namespace go to this directory, never to the host's /proc/sys.
      net: new Netlinux({ runner, procSys: join(dir, 'proc-sys') }),
      log: loggerOf((level, msg, obj) => {
        if (level === 'warn') warnings.push({ obj: obj ?? {}, ...(msg !== '' ? { msg } : {}) });
      }),
      debounceMs: 10,
      interfacePollMs: 50,
    });
  });

  afterEach(async () => {
    await daemon.stop();
    await ds.close();
    await rm(dir, { recursive: true, force: true });
  });

  const get = async (path: string, port = daemon.healthPort()) => {
    const r = await fetch(`http://127.0.0.1:${port}${path}`);
    return { status: r.status, body: await r.text() };
  };
  const chains = () =>
    nft
      .dump()
      .tables.find((t) => t.family === 'ip')
      ?.chains.map((c) => c.name) ?? [];

  it('programs the local endpoint, then reports ready, status, metrics and the MTU file', async () => {
    await daemon.start();
    expect(daemon.config.ReportingIntervalSecs).toBe(1);
    expect(daemon.config.FelixHostname).toBe('node1');
    await until('ready', () => daemon.ready);
    expect(chains()).toEqual(expect.arrayContaining(['filter-cali-tw-calia', 'filter-cali-pri-kns.a']));

    const ready = await get('/readiness');
    expect(ready.status).toBe(200);
    expect(ready.body.split('\n')[1]).toMatch(
      /\|\s+COMPONENT\s+\|\s+TIMEOUT\s+\|\s+LIVENESS\s+\|\s+READINESS\s+\|\s+DETAIL\s+\|/,
    );
    expect(ready.body).toMatch(/\| async_calc_graph +\| - +\| reporting live +\| reporting ready +\|/);
    expect((await get('/liveness')).status).toBe(200);
    expect((await get('/nothing')).status).toBe(404);

    await until('status report', () => kv.get('/calico/felix/v2/no-region/host/node1/status'));
    // The first report, from the store's history (a later one may have replaced it by now).
    const history = kv.watch('/calico/felix/v2/no-region/host/node1/status', { fromRevision: '1' });
    let first: unknown;
    for await (const m of history) {
      if (m.kind !== 'events') continue;
      const put = m.events.find((e) => e.kind === 'put');
      if (put && put.kind === 'put') {
        first = JSON.parse(put.kv.value);
        break;
      }
    }
    expect(first).toEqual({
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
      uptime: expect.any(Number),
      first_update: true,
    });
    await until('second report', async () => {
      const v = await kv.get('/calico/felix/v2/no-region/host/node1/last_reported_status');
      return v && JSON.parse(v.value).first_update === false;
    });
    expect(await readFile(join(dir, 'mtu'), 'utf8')).toBe('1480\n');

    const metrics = await get('/metrics', daemon.metricsPort());
    expect(metrics.status).toBe(200);
    expect(metrics.body).toMatch(/^felix_active_local_endpoints 1$/m);
    expect(metrics.body).toMatch(/^felix_cluster_num_workload_endpoints 1$/m);
    expect(metrics.body).toMatch(/^felix_datastore_connected 1$/m);

    // The route to the workload went to the scripted ip in one `route replace`.
    await until('route', () =>
      runner.commandLines().some((l) => l === 'ip route replace 198.19.0.1/32 dev calia scope link proto 3'),
    );
  });

  it('turns IP forwarding on at start (upstream IPForwarding Enabled), IPv4 and IPv6', async () => {
    await daemon.start();
    for (const key of ['net/ipv4/ip_forward', 'net/ipv6/conf/all/forwarding']) {
      expect((await readFile(join(dir, 'proc-sys', key), 'utf8')).trim(), key).toBe('1');
    }
  });

  it('applies a new policy without restart', async () => {
    await daemon.start();
    await until('ready', () => daemon.ready);
    await ds.create({
      apiVersion: V3,
      kind: 'NetworkPolicy',
      metadata: { name: 'deny-web', namespace: 'a' },
      spec: { selector: "app == 'web'", ingress: [{ action: 'Deny' }], types: ['Ingress'] },
    } as Resource & { kind: 'NetworkPolicy' });
    await until('policy chain', () => chains().includes('filter-cali-pi-np/a/deny-web'));
  });

  it('turns not ready while the datastore does not answer, keeps the rules, and recovers', async () => {
    await daemon.start();
    await until('ready', () => daemon.ready);
    const programmed = nft.dumpJson();
    probeHangs = true;
    await until('not ready', () => !daemon.ready);
    const r = await get('/readiness');
    expect(r.status).toBe(503);
    expect(r.body).toMatch(/reporting non-ready/);
    expect(r.body).toMatch(/datastore unreachable/);
    expect((await get('/liveness')).status).toBe(200);
    expect(nft.dumpJson()).toBe(programmed);
    probeHangs = false;
    await until('ready again', () => daemon.ready);
  });

  it('serves health while it cannot read its configuration at start: not ready naming the datastore, live', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    // A datastore that does not answer until released (as etcd behind a partition).
    const realList = ds.list.bind(ds);
    const slow = Object.create(ds) as KVDatastore;
    (slow as { list: unknown }).list = async (...args: Parameters<KVDatastore['list']>) => {
      await gate;
      return realList(...args);
    };
    const early = new FelixDaemon({
      local: {
        env: {
          FELIX_FELIXHOSTNAME: 'node1',
          FELIX_HEALTHENABLED: 'true',
          FELIX_HEALTHHOST: '127.0.0.1',
          FELIX_HEALTHPORT: '0',
          FELIX_MTUFILEPATH: join(dir, 'mtu'),
        },
        file: {},
        hostname: 'os-host',
      },
      datastore: slow,
      probeTimeoutMs: 100,
      nft,
      net: new Netlinux({ runner, procSys: join(dir, 'proc-sys') }),
      log: NOOP_LOGGER,
      debounceMs: 10,
      interfacePollMs: 50,
    });
    const started = early.start();
    try {
      const port = await until('health listening', () => early.healthPort());
      const r = await until('readiness names the datastore', async () => {
        const g = await get('/readiness', port);
        return g.body.includes('datastore unreachable: no answer in 100 ms') ? g : undefined;
      });
      expect(r.status).toBe(503);
      expect(r.body).toMatch(/\| async_calc_graph +\| - +\| reporting live +\| reporting non-ready +\|/);
      expect((await get('/liveness', port)).status).toBe(200);
      expect(nft.dump().tables).toEqual([]);
      release();
      await started;
      await until('ready once it could read', () => early.ready);
      expect((await get('/readiness', early.healthPort())).status).toBe(200);
    } finally {
      release();
      await started.catch(() => undefined);
      await early.stop();
    }
  });

  it('logs a policy rule it does not enforce once, and renders the Allow rule as matching nothing', async () => {
    await daemon.start();
    await until('ready', () => daemon.ready);
    const policy = await ds.create({
      apiVersion: V3,
      kind: 'NetworkPolicy',
      metadata: { name: 'l7', namespace: 'a' },
      spec: {
        selector: "app == 'web'",
        types: ['Ingress'],
        ingress: [{ action: 'Allow', protocol: 'TCP', http: { methods: ['GET'] } }],
      },
    } as Resource & { kind: 'NetworkPolicy' });
    await until('policy chain', () => chains().includes('filter-cali-pi-np/a/l7'));
    const chain = nft
      .dump()
      .tables.find((t) => t.family === 'ip')!
      .chains.find((c) => c.name === 'filter-cali-pi-np/a/l7')!;
    expect(chain.rules).toEqual([]);
    // A label change re-renders the policy's endpoint but not its rules: still one warning.
    await ds.update({ ...policy, metadata: { ...policy.metadata, labels: { x: 'y' } } });
    await new Promise((r) => setTimeout(r, 200));
    const about = warnings.filter((w) => (w.obj as { policy?: string }).policy === 'np/a/l7');
    expect(about).toEqual([
      {
        obj: { policy: 'np/a/l7', unenforced: ['ingress[0].http (allow rule matches nothing)'] },
        msg: 'rule fields this dataplane does not enforce: they fail closed',
      },
    ]);
  });

  it('holds the programmed dataplane while ClusterInformation says datastoreReady: false', async () => {
    const info = (ready: boolean) =>
      ({
        apiVersion: V3,
        kind: 'ClusterInformation',
        metadata: { name: 'default' },
        spec: { clusterGUID: 'abc', calicoVersion: 'v3.32.1', datastoreReady: ready },
      }) as Resource & { kind: 'ClusterInformation' };
    const created = await ds.create(info(true));
    await daemon.start();
    await until('ready', () => daemon.ready);
    const programmed = nft.dumpJson();

    await ds.update({ ...info(false), metadata: created.metadata });
    await until('not ready while locked', () => !daemon.ready);
    const r = await get('/readiness');
    expect(r.status).toBe(503);
    expect(r.body).toMatch(/datastore locked/);
    await ds.create({
      apiVersion: V3,
      kind: 'NetworkPolicy',
      metadata: { name: 'deny-web', namespace: 'a' },
      spec: { selector: "app == 'web'", ingress: [{ action: 'Deny' }], types: ['Ingress'] },
    } as Resource & { kind: 'NetworkPolicy' });
    // Give the daemon many debounce periods to (wrongly) apply the policy.
    await new Promise((res) => setTimeout(res, 300));
    expect(nft.dumpJson()).toBe(programmed);

    const locked = await ds.get('ClusterInformation', 'default');
    await ds.update({ ...info(true), metadata: locked.metadata });
    await until('policy chain after unlock', () => chains().includes('filter-cali-pi-np/a/deny-web'));
    await until('ready after unlock', () => daemon.ready);
  });

  it('is not ready before its first apply, and leaves the rules in place when stopped', async () => {
    await daemon.start();
    expect(daemon.ready).toBe(false);
    await until('ready', () => daemon.ready);
    await daemon.stop();
    expect(chains()).toContain('filter-cali-tw-calia');
  });
});

describe('health pieces', () => {
  it('answers like upstream: 204 without detail, 200 with, 503 when bad', () => {
    expect(probeResponse(true, '')).toEqual({ status: 204, body: '' });
    expect(probeResponse(true, 'x')).toEqual({ status: 200, body: 'x' });
    expect(probeResponse(false, 'x')).toEqual({ status: 503, body: 'x' });
  });

  it('times out a reporter that stops reporting', () => {
    let now = 0;
    const agg = new HealthAggregator(() => now);
    agg.register('a', { live: true, ready: true }, 20);
    agg.report('a', { live: true, ready: true });
    expect(agg.summary()).toMatchObject({ live: true, ready: true });
    now = 21_000;
    const s = agg.summary();
    expect(s).toMatchObject({ live: false, ready: false });
    expect(s.detail).toContain('| a         | 20s     | timed out | timed out |        |');
  });

  it('formats tables and durations as upstream', () => {
    expect(renderTable(['A', 'BB'], [['x', 'y']])).toBe(
      '+---+----+\n| A | BB |\n+---+----+\n| x | y  |\n+---+----+',
    );
    expect(goDurationString(90)).toBe('1m30s');
    expect(goDurationString(20)).toBe('20s');
    expect(statusValue(Date.UTC(2026, 0, 2, 3, 4, 5, 600), Date.UTC(2026, 0, 2, 3, 4, 0), true)).toBe(
      '{"time":"2026-01-02T03:04:05Z","uptime":5.6,"first_update":true}',
    );
  });
});
