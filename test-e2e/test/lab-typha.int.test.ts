/**
 * The lab with Typha, on each datastore: `lab up --nodes 2 --typha --datastore …` runs
 * calico-typha beside etcd and gives every calico-node FELIX_TYPHAADDR. Observed: Typha's metrics
 * count two clients per node (Felix's `felix` syncer and BIRD's `bgp` one) and its log names each
 * node's; BGP sessions come up from what BIRD learnt through Typha; the pods reach each other;
 * a policy applied with `lab calicoctl` reaches both Felixes through Typha and changes what
 * connects; and `lab down` leaves nothing, Typha included.
 * Needs root, ip, nsenter, etcd (kubectl, openssl and kube-apiserver for the Kubernetes datastore);
 * under CI=true their absence fails the test instead of skipping.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alive, DATASTORES, LabDriver, missingPrerequisites, netnsList } from './lab-driver.js';
import { calicoPolicyScenario } from './policy-scenarios.js';

const ci = process.env.CI === 'true';

for (const datastore of DATASTORES) {
  const missing = missingPrerequisites(datastore);
  if (missing.length > 0) {
    describe(`lab end to end, Typha (${datastore})`, () => {
      it.skipIf(!ci)('has its prerequisites', () => {
        throw new Error(`missing prerequisites: ${missing.join(', ')}`);
      });
    });
  }
}

const PODS = ['blue/a', 'blue/b'];

/** Typha's Prometheus metrics, read in the etcd namespace where it listens. */
function typhaMetrics(lab: LabDriver): Map<string, number> {
  const s = lab.state();
  const typha = s.plan.typha!;
  const url = `http://${typha.addr.split(':')[0]}:${typha.metricsPort}/metrics`;
  const text = execFileSync(
    'nsenter',
    [
      `--net=/run/netns/${s.plan.etcdNetns}`,
      process.execPath,
      '-e',
      `fetch(${JSON.stringify(url)}).then((r) => r.text()).then((t) => process.stdout.write(t))`,
    ],
    { encoding: 'utf8', timeout: 20_000 },
  );
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^(typha_[^ ]+) (\S+)$/.exec(line);
    if (m) out.set(m[1]!, Number(m[2]));
  }
  return out;
}

describe.each(DATASTORES.filter((d) => missingPrerequisites(d).length === 0))(
  'lab end to end: 2 nodes, BGP, Typha, %s',
  (datastore) => {
    const name = `e2t${datastore === 'kubernetes' ? 'k' : ''}${Math.random().toString(16).slice(2, 6)}`;
    let dir: string;
    let lab: LabDriver;

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'calico-e2e-typha-'));
      lab = new LabDriver(name, join(dir, 'state'));
      const up = await lab.run('up', '--nodes', '2', '--typha', '--datastore', datastore);
      expect(up.code, up.stdout + up.stderr).toBe(0);
      console.log(`lab up (typha, ${datastore}) took ${(up.ms / 1000).toFixed(1)} s`);
      expect(up.stdout).toContain('calico-typha: in sync with the datastore');
      expect(up.stdout).toContain('n1: ready (Felix in sync, BGP sessions Established)');
      expect(up.stdout).toContain('n2: ready (Felix in sync, BGP sessions Established)');
      await lab.ok('ns', 'create', 'blue');
      await lab.ok('pod', 'create', 'blue/a', '--node', 'n1', '--labels', 'app=a');
      await lab.ok('pod', 'create', 'blue/b', '--node', 'n2', '--labels', 'app=b');
    }, 180_000);

    afterAll(async () => {
      if (lab && existsSync(join(lab.stateDir, 'state.json'))) await lab.run('down');
      if (dir) await rm(dir, { recursive: true, force: true });
      if (process.env.CALICO_E2E_VERBOSE === '1') console.log(lab?.log.join('\n'));
    }, 60_000);

    it("every node's Felix and BIRD are Typha's clients", () => {
      const m = typhaMetrics(lab);
      expect(m.get('typha_connections_active')).toBe(4);
      expect(m.get('typha_connections_refused')).toBe(0);
      expect(m.get('typha_cache_size{syncer="felix"}')).toBeGreaterThan(0);
      expect(m.get('typha_cache_size{syncer="bgp"}')).toBeGreaterThan(0);
      const log = readFileSync(lab.state().plan.typha!.log, 'utf8');
      const clients = log
        .split('\n')
        .filter((l) => l.includes('"client connected"'))
        .map((l) => JSON.parse(l) as { node: string; syncer: string })
        .map((c) => `${c.node} ${c.syncer}`)
        .sort();
      expect([...new Set(clients)]).toEqual(['n1 bgp', 'n1 felix', 'n2 bgp', 'n2 felix']);
    });

    it('the pods reach each other over TCP and UDP', async () => {
      for (const protocol of ['tcp', 'udp'] as const) {
        const report = await lab.connectivity(protocol);
        expect(
          report.cells.filter((c) => !c.reachable).map((c) => `${c.from}->${c.to}: ${c.error}`),
          protocol,
        ).toEqual([]);
      }
    }, 60_000);

    it('a NetworkPolicy applied with lab calicoctl reaches the Felixes through Typha', async () => {
      const before = typhaMetrics(lab).get('typha_updates_total')!;
      await calicoPolicyScenario(lab, dir, {
        namespace: 'blue',
        selector: "app == 'b'",
        allowFrom: "app == 'b'",
        pods: PODS,
        protectedPod: (id) => id === 'blue/b',
        allowedSource: () => false,
      });
      expect(typhaMetrics(lab).get('typha_updates_total')!).toBeGreaterThan(before);
    }, 120_000);

    it('lab down leaves no namespace and no recorded process alive, Typha included', async () => {
      const s = lab.state();
      expect(s.processes.typha).toBeDefined();
      const recorded = [...Object.values(s.processes), ...s.pods.map((p) => p.listener)];
      await lab.ok('down');
      expect(netnsList().filter((ns) => ns.startsWith(`${name}-`))).toEqual([]);
      expect(recorded.filter(alive)).toEqual([]);
      expect(existsSync(lab.stateDir)).toBe(false);
    }, 60_000);
  },
);
