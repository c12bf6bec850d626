/**
 * What a Pod says reaches the dataplane, on each datastore, with the lab doing only kubelet's part
 * (`lab pod create` makes the Pod, then CNI ADD): a 2-node BGP lab, namespace `shape`.
 *
 * - `cni.projectcalico.org/ipAddrs` gives the pod exactly that address; `ipv4pools` an address from
 *   that pool; both are reachable from the other pods, and the Pod's status shows the address.
 * - A Kubernetes NetworkPolicy on a named port (`--ports http=8080`, `ports: [{port: http}]`)
 *   opens 8080 and leaves 80 closed.
 * - A Calico NetworkPolicy whose rule names a service account (`serviceAccounts.names: [robot]`)
 *   lets in only the pod running as `robot` (`--service-account robot`).
 *
 * On etcd the endpoint's labels, service account and profiles come from the CNI plugin reading the
 * Pod and from kube-controllers; on the Kubernetes datastore from the Pod itself.
 * Own lab name and state directory; `lab down` in afterAll, also when a test failed.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConnectivityReport, DATASTORES, LabDriver, missingPrerequisites } from './lab-driver.js';

const missing = missingPrerequisites();
const ci = process.env.CI === 'true';

if (missing.length > 0) {
  describe('lab pod shape', () => {
    it.skipIf(!ci)('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

const FIXED_IP = '198.19.200.10';
const POOL_CIDR = '198.18.128.0/24';

/** Is `ip` inside the IPv4 `cidr`? */
function inCidr(ip: string, cidr: string): boolean {
  const [base, bits] = cidr.split('/') as [string, string];
  const n = (a: string) => a.split('.').reduce((acc, o) => (acc << 8) + Number(o), 0) >>> 0;
  const mask = Number(bits) === 0 ? 0 : (~0 << (32 - Number(bits))) >>> 0;
  return (n(ip) & mask) >>> 0 === (n(base) & mask) >>> 0;
}

describe.each(missing.length > 0 ? [] : DATASTORES)(
  'lab: what a Pod says reaches the dataplane, %s',
  (datastore) => {
    const name = `e2p${datastore === 'kubernetes' ? 'k' : ''}${Math.random().toString(16).slice(2, 6)}`;
    let dir: string;
    let lab: LabDriver;
    const podIP = (id: string) => lab.state().pods.find((p) => `${p.namespace}/${p.name}` === id)?.ip;

    /** `lab connectivity` on `port` until the cells into `to` match `allowed(from)`, or 30 s pass. */
    const into = async (to: string, port: number, allowed: (from: string) => boolean) => {
      const end = Date.now() + 30_000;
      for (;;) {
        const r = await lab.ok('connectivity', '--port', String(port), '-o', 'json', '--timeout-ms', '1500');
        const cells = (JSON.parse(r.stdout) as ConnectivityReport).cells.filter((c) => c.to === to);
        const wrong = cells
          .filter((c) => c.reachable !== allowed(c.from))
          .map((c) => `${c.from}->${to}:${port} ${c.reachable ? 'reachable' : (c.error ?? 'blocked')}`);
        if (cells.length === 0) wrong.push('no cells');
        if (wrong.length === 0 || Date.now() > end) return wrong;
        await new Promise((res) => setTimeout(res, 500));
      }
    };

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'calico-e2e-shape-'));
      lab = new LabDriver(name, join(dir, 'state'));
      const up = await lab.run('up', '--nodes', '2', '--mode', 'bgp', '--datastore', datastore);
      expect(up.code, up.stdout + up.stderr).toBe(0);
      await lab.ok('ns', 'create', 'shape');
      await lab.ok(
        'pod',
        'create',
        'shape/server',
        '--node',
        'n1',
        '-l',
        'app=server',
        '--ports',
        '80,http=8080',
      );
      await lab.ok(
        'pod',
        'create',
        'shape/robot',
        '--node',
        'n2',
        '-l',
        'role=client',
        '--service-account',
        'robot',
      );
      await lab.ok('pod', 'create', 'shape/plain', '--node', 'n2', '-l', 'role=client');
      await lab.ok(
        'pod',
        'create',
        'shape/fixed',
        '--node',
        'n1',
        '-l',
        'role=client',
        '--annotations',
        `cni.projectcalico.org/ipAddrs=["${FIXED_IP}"]`,
      );
    }, 180_000);

    afterAll(async () => {
      if (dir && existsSync(join(dir, 'state', 'state.json'))) {
        const down = await lab.run('down');
        if (down.code !== 0) console.log(down.stdout + down.stderr);
      }
      if (dir) await rm(dir, { recursive: true, force: true });
      if (process.env.CALICO_E2E_VERBOSE === '1') console.log(lab?.log.join('\n'));
    }, 60_000);

    it('a pod annotated with ipAddrs gets exactly that address, reachable, and its Pod shows it', async () => {
      expect(podIP('shape/fixed')).toBe(FIXED_IP);
      const pod = JSON.parse(
        (await lab.ok('kubectl', 'get', 'pod', '-n', 'shape', 'fixed', '-o', 'json')).stdout,
      ) as {
        status: { phase: string; podIP: string; podIPs: { ip: string }[]; hostIP: string };
      };
      expect(pod.status).toMatchObject({
        phase: 'Running',
        podIP: FIXED_IP,
        podIPs: [{ ip: FIXED_IP }],
        hostIP: '198.18.0.11',
      });
      expect(await into('shape/fixed', 80, () => true)).toEqual([]);
    }, 60_000);

    it("the endpoints carry the pods' labels and service accounts", async () => {
      const weps = JSON.parse(
        (await lab.ok('calicoctl', 'get', 'wep', '-n', 'shape', '-o', 'json')).stdout,
      ) as {
        items: { metadata: { labels: Record<string, string> }; spec: { pod: string; profiles: string[] } }[];
      };
      const of = (pod: string) => weps.items.find((w) => w.spec.pod === pod)!;
      expect(of('robot').metadata.labels).toEqual({
        role: 'client',
        'projectcalico.org/namespace': 'shape',
        'projectcalico.org/orchestrator': 'k8s',
        'projectcalico.org/serviceaccount': 'robot',
      });
      expect(of('robot').spec.profiles).toEqual(['kns.shape', 'ksa.shape.robot']);
      expect(of('server').metadata.labels['projectcalico.org/serviceaccount']).toBe('default');
    });

    it('a Kubernetes NetworkPolicy on a named port opens that port only', async () => {
      const clients = (from: string) => from !== 'shape/server';
      expect(await into('shape/server', 8080, clients), 'before').toEqual([]);
      expect(await into('shape/server', 80, clients), 'before').toEqual([]);
      await lab.applyYaml(
        'kubectl',
        dir,
        'named-port',
        JSON.stringify({
          apiVersion: 'networking.k8s.io/v1',
          kind: 'NetworkPolicy',
          metadata: { name: 'only-http', namespace: 'shape' },
          spec: {
            podSelector: { matchLabels: { app: 'server' } },
            policyTypes: ['Ingress'],
            ingress: [{ ports: [{ port: 'http', protocol: 'TCP' }] }],
          },
        }),
      );
      expect(await into('shape/server', 80, () => false), 'port 80 closed').toEqual([]);
      expect(await into('shape/server', 8080, clients), 'port http (8080) open').toEqual([]);
      await lab.ok('kubectl', 'delete', 'networkpolicy', '-n', 'shape', 'only-http');
      expect(await into('shape/server', 80, clients), 'after').toEqual([]);
    }, 120_000);

    it('a Calico policy naming a service account lets in only the pod running as it', async () => {
      await lab.applyYaml(
        'calicoctl',
        dir,
        'sa-policy',
        `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata:
  name: from-robot
  namespace: shape
spec:
  selector: app == 'server'
  types: [Ingress]
  ingress:
    - action: Allow
      source:
        serviceAccounts:
          names: [robot]
`,
      );
      expect(await into('shape/server', 80, (from) => from === 'shape/robot')).toEqual([]);
      await lab.ok('calicoctl', 'delete', 'networkpolicy', '-n', 'shape', 'from-robot');
      expect(await into('shape/server', 80, (from) => from !== 'shape/server')).toEqual([]);
    }, 120_000);

    it('a pod annotated with ipv4pools gets an address from that pool, reachable from the others', async () => {
      // Made last: a second pool that selects every node is a candidate for every later pod.
      await lab.applyYaml(
        'calicoctl',
        dir,
        'pool',
        `apiVersion: projectcalico.org/v3
kind: IPPool
metadata:
  name: e2e-annotated
spec:
  cidr: ${POOL_CIDR}
  blockSize: 26
  ipipMode: Never
  vxlanMode: Never
  natOutgoing: false
`,
      );
      await lab.ok(
        'pod',
        'create',
        'shape/pooled',
        '--node',
        'n2',
        '--annotations',
        'cni.projectcalico.org/ipv4pools=["e2e-annotated"]',
      );
      const ip = podIP('shape/pooled')!;
      expect(inCidr(ip, POOL_CIDR), `${ip} in ${POOL_CIDR}`).toBe(true);
      expect(await into('shape/pooled', 80, () => true)).toEqual([]);
    }, 120_000);
  },
);
