/**
 * Felix end to end, as a user sees it: the bundled `calico-node -felix` runs in a node network namespace
 * against a private etcd, pods are made by the real CNI plugin, and every policy claim is checked
 * with real traffic (ping, and TCP/UDP echo agents in the pods). Also: readiness and status in the
 * datastore, surviving a kill and a restart without dropping an established connection, repairing
 * a rule deleted by hand, and riding out an etcd that stops answering. Needs root, etcd, nft,
 * nsenter, ping; see testing-internal/felix-lab.ts for the topology.
 */
import { spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Resource } from '@calico-ts/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bundleLabBinaries,
  eventually,
  type FelixProcess,
  labPrerequisites,
  startLabFelix,
} from './testing-internal/felix-harness.js';
import { FelixLab, type Pod } from './testing-internal/felix-lab.js';

const missing = labPrerequisites('Felix integration', ['ip', 'nsenter', 'ping', 'nft']);

const V3 = 'projectcalico.org/v3';
const PORT = 8080;
const NAMED_PORT = 8081;

describe.skipIf(missing.length > 0)('Felix integration', () => {
  const lab = new FelixLab();
  const healthPort = randomInt(20_000, 30_000);
  const metricsPort = healthPort + 1;
  let cniBin: string;
  let felixBin: string;
  let felix: FelixProcess | undefined;
  let clientA: Pod;
  let server: Pod;
  let clientB: Pod;
  const created: { kind: string; name: string; namespace?: string }[] = [];

  function startFelix(): void {
    felix = startLabFelix(lab, felixBin, healthPort, {
      felix_prometheusmetricsenabled: 'true',
      FELIX_PROMETHEUSMETRICSPORT: String(metricsPort),
      FELIX_REPORTINGINTERVALSECS: '1',
      FELIX_REPORTINGTTLSECS: '4',
      FELIX_NFTABLESREFRESHINTERVAL: '2',
      FELIX_ROUTEREFRESHINTERVAL: '2',
    });
  }

  const readiness = () => lab.httpGet(`http://127.0.0.1:${healthPort}/readiness`);
  const isReady = async () => (await readiness()).status === 200;

  async function create(r: Record<string, unknown>): Promise<void> {
    await lab.ds.create(r as unknown as Resource & { kind: 'NetworkPolicy' });
    const m = r.metadata as { name: string; namespace?: string };
    created.push({
      kind: r.kind as string,
      name: m.name,
      ...(m.namespace ? { namespace: m.namespace } : {}),
    });
  }

  function np(namespace: string, name: string, spec: Record<string, unknown>) {
    return create({ apiVersion: V3, kind: 'NetworkPolicy', metadata: { name, namespace }, spec });
  }

  /** Deletes what the test created (policies before tiers) and waits for open connectivity. */
  async function cleanUp(): Promise<void> {
    for (const c of created.splice(0).reverse()) {
      await lab.ds.delete(c.kind as 'NetworkPolicy', c.name, c.namespace ? { namespace: c.namespace } : {});
    }
    await eventually('the profiles alone decide again', async () => {
      const [a, b] = await Promise.all([
        lab.reach(clientA, 'tcp', server.ip, PORT),
        lab.reach(clientB, 'tcp', server.ip, PORT),
      ]);
      return a && b;
    });
  }

  beforeAll(async () => {
    await lab.start();
    ({ cniBin, felixBin } = await bundleLabBinaries(lab));
    await lab.seed({ alpha: { env: 'test' }, beta: { env: 'test' } });
    startFelix();
    clientA = await lab.addPod(cniBin, 'alpha', 'client-a');
    server = await lab.addPod(cniBin, 'alpha', 'server');
    clientB = await lab.addPod(cniBin, 'beta', 'client-b');
    await lab.setPodLabels(clientA, { app: 'client' });
    await lab.setPodLabels(server, { app: 'server' });
    await lab.setPodLabels(clientB, { app: 'client' });
    for (const p of [clientA, server, clientB]) await lab.startAgent(p, PORT);
    await lab.startAgent(server, NAMED_PORT);
  }, 180_000);

  afterAll(async () => {
    if (process.env.FELIX_IT_DEBUG) console.log((felix?.lines ?? []).slice(-40).join('\n'));
    spawnSync('kill', ['-CONT', String(lab.etcd?.pid ?? 0)]);
    await lab.close();
  }, 60_000);

  it('becomes ready, programs the node, reports status, MTU and metrics', async () => {
    await eventually('readiness is 200', isReady, 30_000);
    const r = await readiness();
    expect(r.body).toMatch(
      /\|\s+COMPONENT\s+\|\s+TIMEOUT\s+\|\s+LIVENESS\s+\|\s+READINESS\s+\|\s+DETAIL\s+\|/,
    );
    expect((await lab.httpGet(`http://127.0.0.1:${healthPort}/liveness`)).status).toBe(200);
    expect(lab.nft(['list', 'tables'])).toBe('table ip calico\ntable ip6 calico\n');
    const dispatch = lab.nft(['list', 'map', 'ip', 'calico', 'filter-cali-to-wl-dispatch']);
    for (const p of [clientA, server, clientB])
      expect(dispatch).toContain(`"${p.iface}" : goto filter-cali-tw-${p.iface}`);
    // Felix configured the workload interfaces (rp_filter is not something the CNI plugin sets).
    await eventually('interface sysctls', async () => {
      const v = spawnSync(
        'nsenter',
        [`--net=/run/netns/${lab.node}`, 'cat', `/proc/sys/net/ipv4/conf/${server.iface}/rp_filter`],
        {
          encoding: 'utf8',
        },
      );
      return v.stdout.trim() === '1';
    });
    const status = await lab.etcd.etcdctl([
      'get',
      '--prefix',
      `/calico/felix/v2/no-region/host/${lab.nodeName}/`,
    ]);
    const [k1, v1, k2, v2] = status.stdout.trim().split('\n');
    expect(k1).toBe(`/calico/felix/v2/no-region/host/${lab.nodeName}/last_reported_status`);
    expect(k2).toBe(`/calico/felix/v2/no-region/host/${lab.nodeName}/status`);
    for (const v of [v1, v2]) {
      expect(JSON.parse(v!)).toEqual({
        time: expect.stringMatching(/Z$/),
        uptime: expect.any(Number),
        first_update: expect.any(Boolean),
      });
    }
    const withLease = await lab.etcd.etcdctl([
      'get',
      `/calico/felix/v2/no-region/host/${lab.nodeName}/status`,
      '-w',
      'json',
    ]);
    // The lease ID is a 64-bit number: read it from the text, not through a JS number.
    const lease = /"lease":(\d+)/.exec(withLease.stdout)![1]!;
    const ttl = await lab.etcd.etcdctl(['lease', 'timetolive', BigInt(lease).toString(16)]);
    expect(ttl.stdout).toMatch(/granted with TTL\(4s\)/);
    expect(await readFile(join(lab.tmp, 'mtu'), 'utf8')).toBe('1500\n');
    const metrics = await lab.httpGet(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.body).toMatch(/^felix_active_local_endpoints 3$/m);
    expect(metrics.body).toMatch(/^felix_datastore_connected 1$/m);
  });

  it('with no policy the namespace profiles let pods talk', async () => {
    expect(await lab.reach(clientA, 'tcp', server.ip, PORT)).toBe(true);
    expect(await lab.reach(clientA, 'udp', server.ip, PORT)).toBe(true);
    expect(await lab.ping(clientA, server.ip)).toBe(true);
    expect(await lab.reach(clientB, 'tcp', server.ip, PORT)).toBe(true);
    expect(await lab.ping(server, clientB.ip)).toBe(true);
  });

  it('a NetworkPolicy denies what it does not allow: TCP, UDP and ICMP, both directions', async () => {
    await np('alpha', 'server-in-out', {
      selector: "app == 'server'",
      types: ['Ingress', 'Egress'],
      ingress: [{ action: 'Allow', protocol: 'TCP', source: { selector: "app == 'client'" } }],
      egress: [],
    });
    await eventually(
      'UDP from client-a is denied',
      async () => !(await lab.reach(clientA, 'udp', server.ip, PORT)),
    );
    expect(await lab.reach(clientA, 'tcp', server.ip, PORT)).toBe(true);
    expect(await lab.ping(clientA, server.ip)).toBe(false);
    // client-b is in another namespace: the policy's source selector does not reach it.
    expect(await lab.reach(clientB, 'tcp', server.ip, PORT)).toBe(false);
    expect(await lab.reach(clientB, 'udp', server.ip, PORT)).toBe(false);
    // Egress: the server may start nothing.
    expect(await lab.ping(server, clientA.ip)).toBe(false);
    expect(await lab.reach(server, 'tcp', clientA.ip, PORT)).toBe(false);
    expect(await lab.reach(server, 'udp', clientB.ip, PORT)).toBe(false);
    // Other pods are untouched.
    expect(await lab.ping(clientA, clientB.ip)).toBe(true);
  });

  it('a second policy adds to the union', async () => {
    await np('alpha', 'server-udp', {
      selector: "app == 'server'",
      ingress: [{ action: 'Allow', protocol: 'UDP' }],
    });
    await eventually('UDP from client-b is allowed', () => lab.reach(clientB, 'udp', server.ip, PORT));
    expect(await lab.reach(clientA, 'udp', server.ip, PORT)).toBe(true);
    expect(await lab.reach(clientA, 'tcp', server.ip, PORT)).toBe(true);
    expect(await lab.reach(clientB, 'tcp', server.ip, PORT)).toBe(false);
    expect(await lab.ping(clientB, server.ip)).toBe(false);
    await cleanUp();
    expect(await lab.ping(server, clientA.ip)).toBe(true);
  });

  it('Deny above Allow by order wins, and re-ordering flips it', async () => {
    await np('alpha', 'deny-clients', {
      selector: "app == 'server'",
      order: 10,
      ingress: [{ action: 'Deny', source: { selector: "app == 'client'" } }],
    });
    await np('alpha', 'allow-all', {
      selector: "app == 'server'",
      order: 20,
      ingress: [{ action: 'Allow' }],
    });
    await eventually('client-a is denied', async () => !(await lab.reach(clientA, 'tcp', server.ip, PORT)));
    expect(await lab.ping(clientA, server.ip)).toBe(false);
    expect(await lab.reach(clientB, 'tcp', server.ip, PORT)).toBe(true);
    const deny = await lab.ds.get('NetworkPolicy', 'deny-clients', { namespace: 'alpha' });
    deny.spec.order = 30;
    await lab.ds.update(deny as typeof deny & { kind: 'NetworkPolicy' });
    await eventually('client-a is allowed once the Allow comes first', () =>
      lab.reach(clientA, 'tcp', server.ip, PORT),
    );
    await cleanUp();
  });

  it('Pass hands the decision to the next tier', async () => {
    await create({ apiVersion: V3, kind: 'Tier', metadata: { name: 'security' }, spec: { order: 50 } });
    await create({
      apiVersion: V3,
      kind: 'GlobalNetworkPolicy',
      metadata: { name: 'security.screen' },
      spec: {
        tier: 'security',
        selector: "app == 'server'",
        ingress: [
          {
            action: 'Pass',
            source: { selector: "app == 'client'", namespaceSelector: "projectcalico.org/name == 'alpha'" },
          },
        ],
      },
    });
    await eventually(
      'client-b is denied by the security tier',
      async () => !(await lab.reach(clientB, 'tcp', server.ip, PORT)),
    );
    // client-a passed; no default-tier policy applies, so the namespace profile allows.
    expect(await lab.reach(clientA, 'tcp', server.ip, PORT)).toBe(true);
    expect(await lab.reach(clientA, 'udp', server.ip, PORT)).toBe(true);
    await np('alpha', 'udp-only', {
      selector: "app == 'server'",
      ingress: [{ action: 'Allow', protocol: 'UDP' }],
    });
    await eventually(
      'the default tier now decides for client-a',
      async () => !(await lab.reach(clientA, 'tcp', server.ip, PORT)),
    );
    expect(await lab.reach(clientA, 'udp', server.ip, PORT)).toBe(true);
    expect(await lab.reach(clientB, 'udp', server.ip, PORT)).toBe(false);
    await cleanUp();
  });

  it('a GlobalNetworkPolicy with a namespaceSelector applies across namespaces, following namespace labels', async () => {
    await create({
      apiVersion: V3,
      kind: 'GlobalNetworkPolicy',
      metadata: { name: 'clients-no-icmp' },
      spec: {
        selector: "app == 'client'",
        namespaceSelector: "env == 'test'",
        types: ['Egress'],
        egress: [{ action: 'Deny', protocol: 'ICMP' }, { action: 'Allow' }],
      },
    });
    await eventually('client-a cannot ping', async () => !(await lab.ping(clientA, server.ip)));
    expect(await lab.ping(clientB, server.ip)).toBe(false);
    expect(await lab.reach(clientA, 'tcp', server.ip, PORT)).toBe(true);
    expect(await lab.reach(clientB, 'udp', server.ip, PORT)).toBe(true);
    expect(await lab.ping(server, clientA.ip)).toBe(true);
    await lab.putNamespace('beta', { env: 'prod' });
    await eventually('client-b pings again once its namespace is relabelled', () =>
      lab.ping(clientB, server.ip),
    );
    expect(await lab.ping(clientA, server.ip)).toBe(false);
    await lab.putNamespace('beta', { env: 'test' });
    await cleanUp();
  });

  it('named ports resolve to the port the endpoint declares', async () => {
    await lab.setPodLabels(server, { app: 'server' }, [{ name: 'http', protocol: 'TCP', port: NAMED_PORT }]);
    await np('alpha', 'http-only', {
      selector: "app == 'server'",
      ingress: [{ action: 'Allow', protocol: 'TCP', destination: { ports: ['http'] } }],
    });
    await eventually(
      'the unnamed port is denied',
      async () => !(await lab.reach(clientA, 'tcp', server.ip, PORT)),
    );
    expect(await lab.reach(clientA, 'tcp', server.ip, NAMED_PORT)).toBe(true);
    expect(await lab.reach(clientB, 'tcp', server.ip, NAMED_PORT)).toBe(true);
    expect(await lab.reach(clientA, 'udp', server.ip, NAMED_PORT)).toBe(false);
    await cleanUp();
  });

  it('nets with a carved-out notNets', async () => {
    await np('alpha', 'pool-but-a', {
      selector: "app == 'server'",
      ingress: [{ action: 'Allow', source: { nets: ['198.19.0.0/16'], notNets: [`${clientA.ip}/32`] } }],
    });
    await eventually(
      'client-a is carved out',
      async () => !(await lab.reach(clientA, 'tcp', server.ip, PORT)),
    );
    expect(await lab.reach(clientB, 'tcp', server.ip, PORT)).toBe(true);
    expect(await lab.ping(clientB, server.ip)).toBe(true);
    expect(await lab.ping(clientA, server.ip)).toBe(false);
    await cleanUp();
  });

  it('a pod label change takes effect without restart', async () => {
    await np('alpha', 'isolate-server', { selector: "app == 'server'", types: ['Ingress'] });
    await eventually(
      'the server is isolated',
      async () => !(await lab.reach(clientA, 'tcp', server.ip, PORT)),
    );
    await lab.setPodLabels(server, { app: 'other' });
    await eventually('the relabelled server is open', () => lab.reach(clientA, 'tcp', server.ip, PORT));
    await lab.setPodLabels(server, { app: 'server' });
    await eventually('isolated again', async () => !(await lab.reach(clientA, 'tcp', server.ip, PORT)));
    await cleanUp();
  });

  it('a killed Felix leaves the rules; a restart rewrites nothing and keeps an established connection', async () => {
    await np('alpha', 'only-a', {
      selector: "app == 'server'",
      ingress: [{ action: 'Allow', protocol: 'TCP', source: { selector: "app == 'client'" } }],
    });
    await eventually('client-b is denied', async () => !(await lab.reach(clientB, 'tcp', server.ip, PORT)));
    const conn = lab.longConnection(clientA, server.ip, PORT);
    await eventually(
      'the connection echoes',
      () => conn.lines.filter((l) => l.startsWith('echo')).length > 3,
      5000,
    );
    const before = lab.nft(['list', 'table', 'ip', 'calico']);

    felix!.child.kill('SIGKILL');
    await new Promise((r) => felix!.child.once('exit', r));
    expect(lab.nft(['list', 'table', 'ip', 'calico'])).toBe(before);
    expect(await lab.reach(clientB, 'tcp', server.ip, PORT)).toBe(false);
    expect(await lab.reach(clientA, 'tcp', server.ip, PORT)).toBe(true);

    startFelix();
    await eventually('ready after the restart', isReady, 30_000);
    const first = felix!.lines
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg: string; commands?: number })
      .find((l) => l.msg === 'first dataplane apply done');
    expect(first?.commands).toBe(0);
    const echoes = conn.lines.filter((l) => l.startsWith('echo')).length;
    await eventually(
      'the connection still echoes',
      () => conn.lines.filter((l) => l.startsWith('echo')).length > echoes + 3,
      5000,
    );
    expect(conn.lines.filter((l) => !l.startsWith('echo'))).toEqual(['connected']);
    conn.child.kill('SIGKILL');
  });

  it('a rule deleted by hand comes back on the next resync', async () => {
    const chain = `filter-cali-tw-${server.iface}`;
    const before = lab.nft(['list', 'chain', 'ip', 'calico', chain]);
    const listing = JSON.parse(lab.nft(['-j', 'list', 'chain', 'ip', 'calico', chain])) as {
      nftables: { rule?: { handle: number; comment?: string } }[];
    };
    const drop = listing.nftables.find((i) => i.rule?.comment?.endsWith('Drop if no policies passed packet'))!
      .rule!;
    const mark = felix!.lines.length;
    lab.nft(['delete', 'rule', 'ip', 'calico', chain, 'handle', String(drop.handle)]);
    expect(lab.nft(['list', 'chain', 'ip', 'calico', chain])).not.toContain(
      'Drop if no policies passed packet',
    );
    await eventually('the resync repaired it', () =>
      felix!.lines.slice(mark).some((l) => l.includes('read-back found the calico tables changed')),
    );
    const strip = (t: string) => t.replace(/ # handle \d+/g, '');
    expect(strip(lab.nft(['list', 'chain', 'ip', 'calico', chain]))).toBe(strip(before));
    expect(await lab.reach(clientB, 'tcp', server.ip, PORT)).toBe(false);
  });

  it('a workload route deleted by hand comes back on the next route resync', async () => {
    const route = `${server.ip} dev ${server.iface} scope link`;
    const routes = () =>
      spawnSync('ip', ['-n', lab.node, 'route', 'show', 'dev', server.iface], { encoding: 'utf8' }).stdout;
    expect(routes()).toContain(`${server.ip} scope link`);
    spawnSync('ip', ['-n', lab.node, 'route', 'del', ...route.split(' ')]);
    expect(routes()).not.toContain(server.ip);
    await eventually('the route is back', () => routes().includes(`${server.ip} scope link`), 10_000);
    expect(await lab.reach(clientA, 'tcp', server.ip, PORT)).toBe(true);
  });

  it('an etcd that stops answering keeps the rules, turns readiness 503, and Felix recovers by itself', async () => {
    const pid = lab.etcd.pid!;
    process.kill(pid, 'SIGSTOP');
    try {
      await eventually('readiness is 503', async () => (await readiness()).status === 503, 20_000);
      const r = await readiness();
      expect(r.body).toMatch(/async_calc_graph +\| - +\| reporting live +\| reporting non-ready/);
      expect(r.body).toContain('datastore unreachable');
      expect((await lab.httpGet(`http://127.0.0.1:${healthPort}/liveness`)).status).toBe(200);
      expect(await lab.reach(clientB, 'tcp', server.ip, PORT)).toBe(false);
      expect(await lab.reach(clientA, 'tcp', server.ip, PORT)).toBe(true);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    await eventually('ready again', isReady, 30_000);
    await cleanUp();
  });

  it('SIGTERM ends Felix with status 0 and leaves the rules', async () => {
    const before = lab.nft(['list', 'table', 'ip', 'calico']);
    const code = await new Promise<number | null>((resolve) => {
      felix!.child.once('exit', (c) => resolve(c));
      felix!.child.kill('SIGTERM');
    });
    expect(code).toBe(0);
    expect(lab.nft(['list', 'table', 'ip', 'calico'])).toBe(before);
    expect(felix!.lines.at(-1)).toContain('programmed rules and routes left in place');
  });
});
