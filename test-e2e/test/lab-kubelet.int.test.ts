/**
 * The lab as a real Kubernetes cluster (`lab up --kubelet`): containerd, kubelet and kube-proxy on
 * every node, kube-scheduler and kube-controller-manager beside the API server, and Calico
 * installed the way users install it, with kubectl. One 3-node cluster, in the order a platform
 * engineer would meet it:
 *
 *   --install none: every Node registered and NotReady, no CNI config on any node
 *   `lab kubectl apply -f <the lab's calico.yaml>`: DESIRED = CURRENT = READY = 3, every Node Ready
 *   `kubectl create deployment web --replicas=6`: spread by the scheduler, each pod an address of
 *     the pool from the calico CNI, answering from other nodes, `kubectl exec` and `logs` work, a
 *     ClusterIP Service answers through kube-proxy, a NetworkPolicy cuts what it selects
 *   a rolling update of calico-node (an env change) under traffic: a kept-open TCP connection and a
 *     probe every 100 ms between pods on different nodes lose nothing
 *   calico-node SIGKILLed: kubelet restarts it, and its Felix rewrites nothing
 *   scaled to 0: no WorkloadEndpoint left, `calicoctl ipam check` clean
 *   `lab down`: no process, mount, cgroup, namespace or file of the lab left
 *
 * Why the lab's calico.yaml and not deploy/manifests/calico.yaml as it is: that file's pool is
 * 192.168.0.0/16 with IPIP Always (upstream's defaults); the install guide has a user set the pool
 * to the cluster's pod range, and these kernels have no ipip module. The lab's copy differs in
 * those three values only (apps/lab's plan test checks that).
 *
 * Needs what the lab needs plus the Kubernetes node servers and containerd (scripts/setup.sh) and
 * the images (built here when stale); under CI=true their absence fails instead of skipping.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { imageRef } from '@calico-ts/images/definitions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpGet, missingForCluster } from './cluster.js';
import { ensureImages } from './images.js';
import { alive, LAB, LabDriver, netnsList, ROOT } from './lab-driver.js';

const ci = process.env.CI === 'true';

const missing = missingForCluster();
if (missing.length > 0) {
  describe('lab up --kubelet', () => {
    it.skipIf(!ci)('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const HTTPD = imageRef('httpd');

interface Pod {
  metadata: { name: string; labels?: Record<string, string> };
  spec: { nodeName?: string };
  status: { podIP?: string; phase?: string; containerStatuses?: { name: string; restartCount: number }[] };
}

describe.skipIf(missing.length > 0)('lab up --kubelet: a real cluster installs and runs Calico', () => {
  const name = `e2ek${Math.random().toString(16).slice(2, 6)}`;
  let dir = '';
  let lab: LabDriver;
  let upOk = false;

  const kubectl = async (...args: string[]) => (await lab.ok('kubectl', ...args)).stdout;
  const json = async <T>(...args: string[]) => JSON.parse(await kubectl(...args, '-o', 'json')) as T;
  const webPods = async () => (await json<{ items: Pod[] }>('get', 'pods', '-l', 'app=web')).items;
  /** An HTTP GET from the client pod: the body is the answering pod's name. */
  const get = (ip: string, timeoutS = 2) => httpGet(lab, 'client', ip, 80, timeoutS);
  async function until<T>(what: string, f: () => Promise<T | undefined>, withinMs = 60_000): Promise<T> {
    const end = Date.now() + withinMs;
    for (;;) {
      const v = await f();
      if (v !== undefined) return v;
      if (Date.now() > end) throw new Error(`${what}: not within ${withinMs / 1000} s`);
      await sleep(500);
    }
  }

  beforeAll(async () => {
    console.log(await ensureImages(undefined, ['pause', 'httpd']));
    dir = await mkdtemp(join(tmpdir(), 'calico-e2e-kubelet-'));
    lab = new LabDriver(name, join(dir, 'state'));
  }, 30 * 60_000);

  afterAll(async () => {
    if (lab && existsSync(join(lab.stateDir, 'state.json'))) await lab.run('down');
    await rm(dir, { recursive: true, force: true });
  }, 120_000);

  it('comes up with --install none: Nodes registered by kubelet, NotReady, no CNI config', async () => {
    const t0 = performance.now();
    const r = await lab.ok('up', '--kubelet', '--install', 'none', '--nodes', '3');
    console.log(
      `lab up --kubelet --install none (3 nodes): ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
    expect(r.stdout).toMatch(/kubelets registered Nodes n1, n2, n3/);
    upOk = true;
    const out = await kubectl('get', 'nodes', '-o', 'wide');
    const rows = out.trim().split('\n').slice(1);
    expect(rows.map((l) => l.split(/\s+/).slice(0, 2))).toEqual([
      ['n1', 'NotReady'],
      ['n2', 'NotReady'],
      ['n3', 'NotReady'],
    ]);
    expect(out).toMatch(/containerd:\/\/1\.\d+/);
    for (const n of ['n1', 'n2', 'n3'])
      expect(readdirSync(join(lab.stateDir, 'nodes', n, 'k8s', 'host', 'etc-cni-net.d'))).toEqual([]);
    // The machine's own CNI directory is not the nodes'.
    expect(existsSync('/etc/cni/net.d/10-calico.conflist')).toBe(false);
  }, 240_000);

  it('installs Calico with kubectl apply: DESIRED 3 CURRENT 3 READY 3, then every Node Ready', async () => {
    expect(upOk).toBe(true);
    await kubectl('apply', '-f', join(lab.stateDir, 'cluster', 'calico.yaml'));
    const t0 = performance.now();
    const line = await until(
      'calico-node DaemonSet ready on 3 nodes',
      async () => {
        const out = await kubectl('get', 'daemonset', 'calico-node', '--namespace=kube-system');
        const row = out.trim().split('\n')[1]?.split(/\s+/) ?? [];
        return row[1] === '3' && row[2] === '3' && row[3] === '3' ? out : undefined;
      },
      180_000,
    );
    console.log(
      `calico-node ready on 3 nodes ${((performance.now() - t0) / 1000).toFixed(1)} s after apply\n${line}`,
    );
    const nodes = await until('every Node Ready', async () => {
      const out = await kubectl('get', 'nodes');
      return out
        .trim()
        .split('\n')
        .slice(1)
        .every((l) => l.split(/\s+/)[1] === 'Ready')
        ? out
        : undefined;
    });
    expect(nodes).toMatch(/n3\s+Ready/);
    // install-cni put the plugin config into each node's own /etc/cni/net.d.
    for (const n of ['n1', 'n2', 'n3'])
      expect(readdirSync(join(lab.stateDir, 'nodes', n, 'k8s', 'host', 'etc-cni-net.d'))).toContain(
        '10-calico.conflist',
      );
    await until('calico-kube-controllers available', async () => {
      const d = await json<{ status?: { availableReplicas?: number } }>(
        'get',
        'deployment',
        'calico-kube-controllers',
        '-n',
        'kube-system',
      );
      return (d.status?.availableReplicas ?? 0) >= 1 ? true : undefined;
    });
  }, 300_000);

  it('runs a Deployment of 6: spread by the scheduler, pool addresses, reachable across nodes, exec, logs, a Service', async () => {
    expect(upOk).toBe(true);
    await kubectl('create', 'deployment', 'web', `--image=${HTTPD}`, '--replicas=6');
    await kubectl('run', 'client', `--image=${HTTPD}`, '--labels=app=client');
    await kubectl('rollout', 'status', 'deployment/web', '--timeout=120s');
    await kubectl('wait', '--for=condition=Ready', 'pod/client', '--timeout=120s');
    const pods = await webPods();
    expect(pods).toHaveLength(6);
    const nodes = new Set(pods.map((p) => p.spec.nodeName));
    expect([...nodes].sort()).toEqual(['n1', 'n2', 'n3']);
    const ips = pods.map((p) => p.status.podIP ?? '');
    expect(new Set(ips).size).toBe(6);
    for (const ip of ips) expect(ip).toMatch(/^198\.19\.\d+\.\d+$/);
    // Each pod answers with its own name, from the client wherever they run.
    const client = await json<Pod>('get', 'pod', 'client');
    for (const p of pods)
      expect(await get(p.status.podIP!), `${p.metadata.name} on ${p.spec.nodeName}`).toBe(p.metadata.name);
    expect(pods.some((p) => p.spec.nodeName !== client.spec.nodeName)).toBe(true);
    // kubectl logs reaches kubelet: httpd logged the client's requests.
    const logs = await kubectl('logs', pods[0]!.metadata.name);
    expect(logs).toContain(client.status.podIP!);
    // A ClusterIP Service through kube-proxy (nftables): answered by the Deployment's pods.
    await kubectl('expose', 'deployment', 'web', '--port=80');
    const svc = await json<{ spec: { clusterIP: string } }>('get', 'service', 'web');
    expect(svc.spec.clusterIP).toMatch(/^198\.18\.128\.\d+$/);
    const names = new Set(pods.map((p) => p.metadata.name));
    const answered = new Set<string>();
    for (let i = 0; i < 12; i++) {
      const who = await get(svc.spec.clusterIP);
      expect(names.has(who), `service answered by "${who}"`).toBe(true);
      answered.add(who);
    }
    expect(answered.size).toBeGreaterThan(1);
  }, 300_000);

  it('lab ns create, lab pod create --node, lab pod exec and lab pod delete go through Kubernetes', async () => {
    expect(upOk).toBe(true);
    await lab.ok('ns', 'create', 'blue', '--labels', 'team=a');
    const created = await lab.ok(
      'pod',
      'create',
      'blue/solo',
      '--node',
      'n2',
      '--labels',
      'app=solo',
      '--ports',
      '80,http=8080',
    );
    const pod = await json<Pod>('get', 'pod', '-n', 'blue', 'solo');
    expect(pod.spec.nodeName).toBe('n2');
    expect(created.stdout).toContain(`pod blue/solo on n2: ${pod.status.podIP}`);
    // Its named port answers from the client pod.
    expect(await httpGet(lab, 'client', pod.status.podIP!, 8080)).toBe('solo');
    expect((await lab.ok('pod', 'exec', 'blue/solo', '--', 'hostname')).stdout.trim()).toBe('solo');
    await lab.ok('pod', 'delete', 'blue/solo');
    const left = await lab.run('kubectl', 'get', 'pod', '-n', 'blue', 'solo');
    expect(left.code).not.toBe(0);
    // kubelet ran CNI DEL: no endpoint of it remains.
    const weps = (await lab.ok('calicoctl', 'get', 'workloadendpoints', '-n', 'blue')).stdout;
    expect(weps).not.toContain('solo');
  }, 120_000);

  it('a NetworkPolicy cuts what it selects, and removing it restores it', async () => {
    expect(upOk).toBe(true);
    const client = await json<Pod>('get', 'pod', 'client');
    const target = (await webPods()).find((p) => p.spec.nodeName !== client.spec.nodeName)!;
    const other = (await webPods()).find((p) => p.metadata.name !== target.metadata.name)!;
    const policy = join(dir, 'deny-web.yaml');
    await lab.applyYaml(
      'kubectl',
      dir,
      'deny-web',
      `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: web-from-nobody
  namespace: default
spec:
  podSelector:
    matchLabels:
      app: web
  policyTypes: [Ingress]
`,
    );
    await until(
      'web blocked',
      async () => ((await get(target.status.podIP!, 1)) === '' ? true : undefined),
      30_000,
    );
    expect(await get(other.status.podIP!, 1)).toBe('');
    await kubectl('delete', '-f', policy);
    await until(
      'web reachable again',
      async () => ((await get(target.status.podIP!)) === target.metadata.name ? true : undefined),
      30_000,
    );
  }, 120_000);

  it('rolls calico-node out (an env change) under traffic without losing a packet or the connection', async () => {
    expect(upOk).toBe(true);
    const client = await json<Pod>('get', 'pod', 'client');
    const server = (await webPods()).find((p) => p.spec.nodeName !== client.spec.nodeName)!;
    const probeTarget = (await webPods()).find(
      (p) => p.spec.nodeName !== client.spec.nodeName && p.metadata.name !== server.metadata.name,
    )!;
    // A TCP listener on the server pod writing what it receives; a client sending a line every
    // 100 ms over one kept-open connection; a probe every 100 ms from the client pod.
    /** `lab kubectl exec POD -- sh -c SCRIPT` in the background: its output and exit, whenever it ends. */
    const exec = (pod: string, script: string) => {
      const child = spawn(
        process.execPath,
        [
          LAB,
          '--name',
          lab.name,
          '--state-dir',
          lab.stateDir,
          'kubectl',
          'exec',
          pod,
          '--',
          'sh',
          '-c',
          script,
        ],
        { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
      });
      child.stderr.on('data', (d: Buffer) => {
        out += d.toString();
      });
      const done = new Promise<{ code: number | null; out: string }>((r) =>
        child.on('close', (code) => r({ code, out })),
      );
      return { done, running: () => child.exitCode === null && child.signalCode === null };
    };
    // busybox nc ends a connection when its own input ends: the listener's input is a sleep the
    // test ends last, and the sender's is the loop, so the sender's close ends the connection.
    const listener = exec(
      server.metadata.name,
      '(sleep 3600 & echo $! > /tmp/s.pid; wait) | nc -l -p 9000 > /tmp/got; kill $(cat /tmp/s.pid) 2>/dev/null; true',
    );
    await sleep(1500);
    const sender = exec(
      'client',
      `i=0; while [ ! -f /tmp/stop ]; do echo $i; i=$((i+1)); sleep 0.1; done | nc ${server.status.podIP} 9000`,
    );
    const probe = exec(
      'client',
      `ok=0; fail=0; while [ ! -f /tmp/stop ]; do ` +
        `if printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 1 ${probeTarget.status.podIP} 80 | grep -q ${probeTarget.metadata.name}; ` +
        `then ok=$((ok+1)); else fail=$((fail+1)); fi; sleep 0.1; done; echo "$ok $fail"`,
    );
    await sleep(2000);
    expect(
      [listener.running(), sender.running(), probe.running()],
      'listener, sender, probe started',
    ).toEqual([true, true, true]);
    const t0 = performance.now();
    await kubectl('-n', 'kube-system', 'set', 'env', 'daemonset/calico-node', 'CALICO_LAB_E2E_ROLL=1');
    await kubectl('-n', 'kube-system', 'rollout', 'status', 'daemonset/calico-node', '--timeout=240s');
    console.log(`calico-node rolled out on 3 nodes in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    await sleep(2000);
    // Each still running after the rollout: none was cut off by it.
    const runningAfter = [listener.running(), sender.running(), probe.running()];
    await kubectl('exec', 'client', '--', 'touch', '/tmp/stop');
    const [snd, pr] = await Promise.all([sender.done, probe.done]);
    await kubectl('exec', server.metadata.name, '--', 'sh', '-c', 'kill $(cat /tmp/s.pid)');
    const ended = [await listener.done, snd, pr];
    console.log(
      `listener, sender, probe: ${ended.map((x) => `exit ${x.code} "${x.out.trim().slice(-300)}"`).join('; ')}`,
    );
    expect(runningAfter, 'listener, sender and probe still running after the rollout').toEqual([
      true,
      true,
      true,
    ]);
    const probeOut = ended[2].out;
    const [ok, fail] = probeOut.trim().split(' ').map(Number);
    console.log(`probes during the rollout: ${ok} answered, ${fail} failed`);
    expect(fail).toBe(0);
    expect(ok).toBeGreaterThan(50);
    // The server got every line, in order, over the one connection.
    const got = (await kubectl('exec', server.metadata.name, '--', 'cat', '/tmp/got')).trim().split('\n');
    expect(got.length).toBeGreaterThan(50);
    expect(got).toEqual(got.map((_, i) => String(i)));
  }, 360_000);

  it('a calico-node container SIGKILLed is restarted by kubelet, and its Felix rewrites nothing', async () => {
    expect(upOk).toBe(true);
    const nodes = (
      await json<{ items: Pod[] }>('get', 'pods', '-n', 'kube-system', '-l', 'k8s-app=calico-node')
    ).items;
    const pod = nodes.find((p) => p.spec.nodeName === 'n2')!;
    const restarts = pod.status.containerStatuses!.find((c) => c.name === 'calico-node')!.restartCount;
    // calico-node's process: in n2's cgroup root, the container's main process (the image's
    // entrypoint, /usr/bin/calico-node with no arguments, run by node); its probes carry flags.
    const pids = execFileSync('sh', [
      '-c',
      `find /sys/fs/cgroup/pids/calico-lab-${name}-n2/kubepods -name cgroup.procs -exec cat {} +`,
    ])
      .toString()
      .split('\n')
      .filter(Boolean)
      .map(Number);
    const main = pids.find((p) => {
      try {
        const argv = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').filter(Boolean);
        return argv.length === 2 && argv[1] === '/usr/bin/calico-node';
      } catch {
        return false;
      }
    });
    expect(main, 'calico-node process in n2').toBeDefined();
    process.kill(main!, 'SIGKILL');
    await until(
      'calico-node restarted and Ready',
      async () => {
        const p = await json<Pod>('get', 'pod', '-n', 'kube-system', pod.metadata.name);
        const c = p.status.containerStatuses!.find((x) => x.name === 'calico-node')! as {
          restartCount: number;
          ready?: boolean;
        };
        return c.restartCount > restarts && c.ready ? true : undefined;
      },
      120_000,
    );
    const log = await kubectl('logs', '-n', 'kube-system', pod.metadata.name, '-c', 'calico-node');
    // The restarted Felix found the kernel as its predecessor left it: its first apply wrote nothing.
    const first = log
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg: string; commands?: number })
      .find((l) => l.msg === 'first dataplane apply done');
    expect(first, 'the restarted container logs its first apply').toBeDefined();
    expect(first!.commands).toBe(0);
  }, 180_000);

  it('scaled to 0, leaves no WorkloadEndpoint and a clean IPAM check', async () => {
    expect(upOk).toBe(true);
    await kubectl('delete', 'pod', 'client', '--grace-period=1');
    await kubectl('scale', 'deployment', 'web', '--replicas=0');
    await until('web pods gone', async () => ((await webPods()).length === 0 ? true : undefined), 90_000);
    const weps = (await lab.ok('calicoctl', 'get', 'workloadendpoints', '-n', 'default')).stdout;
    expect(weps.trim().split('\n').slice(1)).toEqual([]);
    const check = await lab.ok('calicoctl', 'ipam', 'check');
    expect(check.stdout).toContain('Check complete; found 0 problems.');
  }, 180_000);

  it('lab down leaves no process, mount, cgroup, namespace or file', async () => {
    expect(upOk).toBe(true);
    const state = lab.state();
    await lab.ok('down');
    for (const [role, p] of Object.entries(state.processes)) expect(alive(p), role).toBe(false);
    const ns = netnsList();
    for (const n of ['n1', 'n2', 'n3']) expect(ns).not.toContain(`${name}-${n}`);
    expect(readFileSync('/proc/self/mountinfo', 'utf8')).not.toContain(lab.stateDir);
    for (const h of readdirSync('/sys/fs/cgroup'))
      for (const n of ['n1', 'n2', 'n3'])
        expect(existsSync(join('/sys/fs/cgroup', h, `calico-lab-${name}-${n}`))).toBe(false);
    expect(existsSync(lab.stateDir)).toBe(false);
  }, 120_000);
});
