/**
 * `lab up --kubelet`: the lab as a Kubernetes cluster that installs Calico itself.
 *
 *   checks (root, programs, the Kubernetes servers and containerd, the image archives)
 *   certificates ─► fabric ─► etcd ─► kube-apiserver (ServiceAccount admission on, kubelet client
 *   certificate) ─► node namespaces ─► per node, at once: mount namespace, cgroup root, containerd,
 *   the images imported ─► kube-controller-manager, kube-scheduler ─► kubelet and kube-proxy per
 *   node ─► every Node registered ─► Calico installed (`--install`) ─► DaemonSet ready, Nodes Ready
 *
 * The fabric, etcd, API server and node namespaces are LabBuilder's (up.ts): the same lab, but no
 * calico-node, kube-controllers or CNI call is the lab's own here: kubelet runs them.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { imageRef } from '@calico-ts/images/definitions';
import { LabError } from '../errors.js';
import { runKubectl } from '../kube.js';
import type { LabPlan } from '../plan.js';
import {
  type Artifacts,
  checkRoot,
  checkSystemPrograms,
  kubeTools,
  REPO_ROOT,
  SYSTEM_PROGRAMS,
} from '../prereqs.js';
import { isAlive, runAsync, spawnDetached } from '../processes.js';
import { calicoctlConfigText } from '../program-config.js';
import type { Progress } from '../progress.js';
import type { LabState } from '../state.js';
import { checkNoLab, failedUp, LabBuilder, logTail, nsenter } from '../up.js';
import { byOperator } from './cluster-plan.js';
import { helmInstall } from './helm.js';
import type { LabValues } from './helm-values.js';
import {
  daemonSetCounts,
  labCustomResources,
  labHelmValues,
  labManifest,
  labOperatorHelmValues,
  nodeReadiness,
  tigeraAvailability,
} from './install.js';
import { makeMntnsDir, makeNodeCgroups, makeNodeMountNamespace, nodeCommand } from './node-host.js';
import {
  CLUSTER_CIDR,
  CLUSTER_IMAGES,
  type ClusterNodePaths,
  type ClusterPlan,
  clusterNodePaths,
  componentKubeconfig,
  componentSubjects,
  containerdConfigText,
  controllerManagerArgs,
  criImageName,
  kubeletArgs,
  kubeletConfigText,
  kubeProxyConfigText,
  schedulerArgs,
} from './plan.js';
import { provideForPlatform, readLabValues } from './provider-setup.js';
import { type ClusterTools, clusterTools } from './tools.js';

const PATH = process.env.PATH || '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function clusterOf(plan: LabPlan): ClusterPlan {
  if (!plan.cluster) throw new LabError('setup', 'internal: a cluster step on a lab without --kubelet');
  return plan.cluster;
}

/** deploy/manifests/calico.yaml with the lab's pool and encapsulation, written at `lab up --kubelet`. */
export function labManifestPath(plan: LabPlan): string {
  return join(clusterOf(plan).dir, 'calico.yaml');
}

/** deploy/manifests/custom-resources.yaml with the lab's pool, written at `lab up --kubelet`. */
export function labCustomResourcesPath(plan: LabPlan): string {
  return join(clusterOf(plan).dir, 'custom-resources.yaml');
}

export class ClusterBuilder {
  constructor(
    readonly b: LabBuilder,
    readonly tools: ClusterTools,
  ) {}

  get plan(): LabPlan {
    return this.b.plan;
  }

  /** `--helm-values`, read and checked before the lab is built. */
  values: LabValues | undefined;

  step(message: string): void {
    this.b.out.step(message);
  }

  cloudRoutes(routed: readonly { podCidr: string; ip: string }[]): Promise<void> {
    return this.b.cloudRoutes(routed);
  }

  paths(name: string): ClusterNodePaths {
    const node = this.plan.nodes.find((n) => n.name === name)!;
    return clusterNodePaths(this.plan, clusterOf(this.plan), node);
  }

  /** A client certificate signed by the cluster CA for each component and kubelet, and its kubeconfig. */
  async credentials(): Promise<void> {
    const cluster = clusterOf(this.plan);
    const kube = this.plan.kube;
    mkdirSync(cluster.dir, { recursive: true, mode: 0o700 });
    const ca = join(kube.dir, 'ca.pem');
    const caKey = join(kube.dir, 'ca-key.pem');
    const openssl = async (...args: string[]) => {
      const r = await runAsync(['openssl', ...args], { timeoutMs: 30_000 });
      if (r.status !== 0) throw new LabError('setup', `openssl ${args[0]} failed: ${r.stderr.trim()}`);
    };
    const ext = join(cluster.dir, 'client.ext');
    writeFileSync(ext, 'extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature,keyEncipherment\n');
    await Promise.all(
      componentSubjects(this.plan).map(async (c, i) => {
        const key = join(cluster.dir, `${c.stem}-key.pem`);
        const cert = join(cluster.dir, `${c.stem}.pem`);
        const csr = join(cluster.dir, `${c.stem}.csr`);
        await openssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', key);
        await openssl('req', '-new', '-key', key, '-subj', c.subject, '-out', csr);
        await openssl(
          'x509',
          '-req',
          '-in',
          csr,
          '-CA',
          ca,
          '-CAkey',
          caKey,
          '-set_serial',
          String(100 + i),
          '-days',
          '365',
          '-extfile',
          ext,
          '-out',
          cert,
        );
        writeFileSync(
          join(cluster.dir, `${c.stem}.kubeconfig`),
          componentKubeconfig({
            server: kube.apiServerUrl,
            caFile: ca,
            certFile: cert,
            keyFile: key,
            user: c.user,
          }),
          { mode: 0o600 },
        );
      }),
    );
  }

  /** Starts `argv` as a process of `node`, recorded under `role`. */
  startOnNode(role: string, nodeName: string, argv: string[], log: string): void {
    const node = this.plan.nodes.find((n) => n.name === nodeName)!;
    const rec = spawnDetached(nodeCommand(node.netns, this.paths(nodeName), argv), {
      env: { PATH },
      log,
    });
    this.b.state.processes[`${role}/${nodeName}`] = rec;
    this.b.save();
  }

  /** The node's host: mount namespace, cgroups, containerd with every image imported. */
  async nodeHost(nodeName: string): Promise<void> {
    const p = this.paths(nodeName);
    const cluster = clusterOf(this.plan);
    mkdirSync(p.dir, { recursive: true });
    const made = await makeNodeMountNamespace(p, cluster.mntnsDir);
    const st = this.b.state as { hostDirsMade?: string[] };
    st.hostDirsMade = [...new Set([...(st.hostDirsMade ?? []), ...made])];
    this.b.save();
    makeNodeCgroups(p);
    writeFileSync(p.containerdConfig, containerdConfigText(p, criImageName(imageRef('pause'))));
    this.startOnNode(
      'containerd',
      nodeName,
      [this.tools.containerd, '--config', p.containerdConfig],
      p.containerdLog,
    );
    const ctr = [this.tools.ctr, '--address', p.containerdSock, '--namespace', 'k8s.io'];
    const end = Date.now() + 30_000;
    for (;;) {
      const r = await runAsync([...ctr, 'version'], { timeoutMs: 5000 });
      if (r.status === 0) break;
      if (!isAlive(this.b.state.processes[`containerd/${nodeName}`]))
        throw new LabError('setup', `containerd on ${nodeName} exited; ${logTail(p.containerdLog)}`);
      if (Date.now() > end)
        throw new LabError(
          'setup',
          `containerd on ${nodeName} did not answer in 30 s; ${logTail(p.containerdLog)}`,
        );
      await sleep(100);
    }
    for (const image of CLUSTER_IMAGES) {
      const r = await runAsync([...ctr, 'images', 'import', this.tools.archives[image]], {
        timeoutMs: 300_000,
      });
      if (r.status !== 0)
        throw new LabError(
          'setup',
          `importing ${this.tools.archives[image]} on ${nodeName} failed: ${r.stderr.trim()}`,
        );
    }
    // The CRI looks names up fully qualified; the archives name each image as it was tagged.
    const names = (await runAsync([...ctr, 'images', 'ls', '-q'], { timeoutMs: 30_000 })).stdout
      .split('\n')
      .map((s) => s.trim());
    for (const image of CLUSTER_IMAGES) {
      const ref = imageRef(image);
      const want = criImageName(ref);
      if (names.includes(want)) continue;
      const have = names.find((n) => n === ref || n.endsWith(`/${ref}`));
      if (!have)
        throw new LabError(
          'setup',
          `${this.tools.archives[image]} imported on ${nodeName} under no name like ${ref} (${names.join(', ')})`,
        );
      const t = await runAsync([...ctr, 'images', 'tag', '--force', have, want], { timeoutMs: 30_000 });
      if (t.status !== 0)
        throw new LabError('setup', `ctr images tag ${have} ${want} failed: ${t.stderr.trim()}`);
    }
    this.b.out.step(
      `${nodeName}: containerd (pid ${this.b.state.processes[`containerd/${nodeName}`]!.pid}), ` +
        `${CLUSTER_IMAGES.length} images imported, cgroup root ${p.cgroupRoot}`,
    );
  }

  startControlPlane(): void {
    const cluster = clusterOf(this.plan);
    const kc = (stem: string) => join(cluster.dir, `${stem}.kubeconfig`);
    const start = (role: string, argv: string[]) => {
      const log = join(cluster.dir, `${role}.log`);
      this.b.state.processes[role] = spawnDetached([...nsenter(this.plan.etcdNetns), ...argv], {
        env: { PATH },
        log,
      });
      this.b.save();
      this.b.out.step(
        `${role}: namespace ${this.plan.etcdNetns} (pid ${this.b.state.processes[role]!.pid}), log ${log}`,
      );
    };
    start('kube-controller-manager', [
      this.tools.kubeControllerManager,
      ...controllerManagerArgs({ kubeconfig: kc('kube-controller-manager'), kubeDir: this.plan.kube.dir }),
    ]);
    start('kube-scheduler', [this.tools.kubeScheduler, ...schedulerArgs(kc('kube-scheduler'))]);
  }

  startKubelet(nodeName: string): void {
    const node = this.plan.nodes.find((n) => n.name === nodeName)!;
    const p = this.paths(nodeName);
    const cluster = clusterOf(this.plan);
    const ca = join(this.plan.kube.dir, 'ca.pem');
    writeFileSync(
      p.kubeletConfig,
      kubeletConfigText({ paths: p, caFile: ca, resolvConf: '/etc/resolv.conf' }),
    );
    writeFileSync(p.kubeletKubeconfig, readFileSync(join(cluster.dir, `kubelet-${nodeName}.kubeconfig`)));
    writeFileSync(p.kubeProxyConfig, kubeProxyConfigText(p, node));
    writeFileSync(p.kubeProxyKubeconfig, readFileSync(join(cluster.dir, 'kube-proxy.kubeconfig')));
    this.startOnNode('kubelet', nodeName, [this.tools.kubelet, ...kubeletArgs(p, node)], p.kubeletLog);
    this.startOnNode(
      'kube-proxy',
      nodeName,
      [this.tools.kubeProxy, `--config=${p.kubeProxyConfig}`, '--v=1'],
      p.kubeProxyLog,
    );
    this.b.out.step(
      `${nodeName}: kubelet (pid ${this.b.state.processes[`kubelet/${nodeName}`]!.pid}), ` +
        `kube-proxy nftables (pid ${this.b.state.processes[`kube-proxy/${nodeName}`]!.pid}), logs in ${p.dir}`,
    );
  }

  kubectl(args: string[], input?: string) {
    const kt = this.b.kube!.tools;
    return runKubectl(this.plan, kt.kubectl, args, {
      ...(input !== undefined ? { input } : {}),
      timeoutMs: 120_000,
    });
  }

  /** Until every lab node has registered its v1 Node (kubelet's part now). */
  async waitNodesRegistered(timeoutMs = 90_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    let last = '';
    for (;;) {
      const r = await this.kubectl(['get', 'nodes', '-o', 'json']);
      const ready = r.status === 0 ? nodeReadiness(JSON.parse(r.stdout)) : new Map<string, string>();
      const missing = this.plan.nodes.filter((n) => !ready.has(n.name)).map((n) => n.name);
      if (missing.length === 0) break;
      for (const n of this.plan.nodes) {
        for (const role of ['containerd', 'kubelet', 'kube-proxy']) {
          if (!isAlive(this.b.state.processes[`${role}/${n.name}`])) {
            const p = this.paths(n.name);
            const log =
              role === 'kubelet' ? p.kubeletLog : role === 'containerd' ? p.containerdLog : p.kubeProxyLog;
            throw new LabError('setup', `${role} on ${n.name} exited; ${logTail(log, 15)}`);
          }
        }
      }
      if (Date.now() > end)
        throw new LabError(
          'setup',
          `Nodes ${missing.join(', ')} not registered in ${timeoutMs / 1000} s (${last || r.stderr.trim()})`,
        );
      last = `registered: ${[...ready.keys()].join(', ') || 'none'}`;
      await sleep(500);
    }
    this.b.out.step(
      `kubelets registered Nodes ${this.plan.nodes.map((n) => n.name).join(', ')} (NotReady until a CNI is installed)`,
    );
  }

  /** `--install`: Calico from its manifest (edited for the lab), as users apply it. */
  async install(): Promise<void> {
    const cluster = clusterOf(this.plan);
    // The manifest as the install guide has a user edit it for this cluster (install.ts).
    const manifest = labManifestPath(this.plan);
    const etcd = cluster.install === 'etcd';
    const source = join(REPO_ROOT, 'deploy/manifests', etcd ? 'calico-etcd.yaml' : 'calico.yaml');
    writeFileSync(
      manifest,
      labManifest(readFileSync(source, 'utf8'), this.plan.mode, etcd ? this.plan.etcdUrl : undefined),
    );
    const custom = labCustomResourcesPath(this.plan);
    writeFileSync(
      custom,
      labCustomResources(
        readFileSync(join(REPO_ROOT, 'deploy/manifests/custom-resources.yaml'), 'utf8'),
        this.plan.mode,
      ),
    );
    switch (cluster.install) {
      case 'none':
        this.b.out.step(
          `no CNI installed (--install none): the Nodes stay NotReady until one is; ${manifest} is ` +
            `deploy/manifests/calico.yaml with the pool set for this lab, ${custom} the operator's ` +
            'custom-resources.yaml with it',
        );
        return;
      case 'operator':
        await this.installOperator(custom);
        return;
      case 'manifest':
      case 'etcd': {
        const r = await this.kubectl(['apply', '-f', manifest]);
        if (r.status !== 0)
          throw new LabError(
            'setup',
            `kubectl apply -f ${manifest} failed:\n${(r.stderr || r.stdout).trim()}`,
          );
        this.b.out.step(
          `kubectl apply -f ${manifest} (${source.slice(REPO_ROOT.length)}, pool ${CLUSTER_CIDR}, mode ` +
            `${this.plan.mode}${etcd ? `, etcd_endpoints ${this.plan.etcdUrl}` : ''}): ` +
            `${r.stdout.trim().split('\n').length} objects`,
        );
        return;
      }
      case 'operator-helm': {
        const chart = [
          'calico',
          'deploy/helm/tigera-operator',
          '-n',
          'tigera-operator',
          '--create-namespace',
        ];
        if (this.values) {
          // The values given (helm-values.ts), after what their platform needs (provider-setup.ts).
          await provideForPlatform(this, this.values.needs);
          const file = join(cluster.dir, 'values.yaml');
          writeFileSync(file, this.values.text);
          this.createdAt = Date.now();
          return this.helmInstall([...chart, '-f', file], []);
        }
        // The operator's chart with the same Installation as custom-resources.yaml on this lab.
        const values = labOperatorHelmValues(
          readFileSync(join(REPO_ROOT, 'deploy/manifests/custom-resources.yaml'), 'utf8'),
          this.plan.mode,
        );
        this.createdAt = Date.now();
        await this.helmInstall(chart, values);
        return;
      }
      case 'helm':
        await this.helmInstall(
          ['calico-ts', 'deploy/helm/calico-ts', '--namespace', 'kube-system'],
          labHelmValues(this.plan.mode),
        );
        return;
      default:
        throw new LabError(
          'usage',
          `--install ${cluster.install} is not supported yet; use manifest, etcd, helm, operator, operator-helm or none`,
        );
    }
  }

  /** `helm install <release> <chart> <args> --set <values>` from the lab's etcd namespace (the API server's). */
  async helmInstall(args: string[], values: string[]): Promise<void> {
    this.step(await helmInstall(this.plan, clusterOf(this.plan).dir, this.tools.helm, args, values));
  }

  /**
   * `--install operator`: `kubectl create -f deploy/manifests/tigera-operator.yaml`, the CRDs
   * Established, then `kubectl create -f` of the custom resources with the lab's pool.
   */
  async installOperator(custom: string): Promise<void> {
    const operator = join(REPO_ROOT, 'deploy/manifests/tigera-operator.yaml');
    const create = async (file: string) => {
      const r = await this.kubectl(['create', '-f', file]);
      if (r.status !== 0)
        throw new LabError('setup', `kubectl create -f ${file} failed:\n${(r.stderr || r.stdout).trim()}`);
      return r.stdout.trim().split('\n').length;
    };
    const n = await create(operator);
    const crds = ['installations', 'apiservers', 'tigerastatuses'].map((p) => `crd/${p}.operator.tigera.io`);
    const w = await this.kubectl(['wait', '--for=condition=Established', '--timeout=60s', ...crds]);
    if (w.status !== 0)
      throw new LabError(
        'setup',
        `the operator's CRDs are not Established: ${(w.stderr || w.stdout).trim()}`,
      );
    this.b.out.step(`kubectl create -f deploy/manifests/tigera-operator.yaml: ${n} objects`);
    this.createdAt = Date.now();
    await create(custom);
    this.b.out.step(
      `kubectl create -f ${custom} (custom-resources.yaml, pool ${CLUSTER_CIDR}, mode ${this.plan.mode})`,
    );
  }

  /** When `--install operator` (or `operator-helm`) created the Installation (for the time to Available). */
  createdAt = 0;

  /**
   * Until calico-system's DaemonSet is ready on every node, TigeraStatus calico and every other
   * TigeraStatus there is (apiserver with an APIServer) Available, every Node Ready.
   */
  async waitOperatorInstalled(timeoutMs: number): Promise<void> {
    const end = Date.now() + timeoutMs;
    const n = this.plan.nodes.length;
    let said = '';
    for (;;) {
      const [ds, ts, nodes] = await Promise.all([
        this.kubectl(['get', 'daemonset', 'calico-node', '-n', 'calico-system', '-o', 'json']),
        this.kubectl(['get', 'tigerastatus', '-o', 'json']),
        this.kubectl(['get', 'nodes', '-o', 'json']),
      ]);
      const c = ds.status === 0 ? daemonSetCounts(JSON.parse(ds.stdout)) : undefined;
      const avail = ts.status === 0 ? tigeraAvailability(JSON.parse(ts.stdout)) : new Map<string, string>();
      const ready =
        nodes.status === 0
          ? [...nodeReadiness(JSON.parse(nodes.stdout)).values()].filter((s) => s === 'True').length
          : 0;
      const shown = [...avail].map(([k, v]) => `${k} ${v}`).join(', ') || 'none yet';
      const now = `calico-system calico-node DESIRED ${c?.desired ?? 0} READY ${c?.ready ?? 0}, tigerastatus Available: ${shown}, Nodes Ready ${ready}/${n}`;
      const allAvailable = avail.get('calico') === 'True' && [...avail.values()].every((v) => v === 'True');
      if (c && c.desired === n && c.ready === n && allAvailable && ready === n) {
        const secs = Math.round((Date.now() - this.createdAt) / 100) / 10;
        this.b.out.step(`${now} (${secs} s after the Installation was created)`);
        return;
      }
      if (now !== said) {
        this.b.out.step(`waiting: ${now}`);
        said = now;
      }
      if (Date.now() > end) throw new LabError('setup', `Calico not ready in ${timeoutMs / 1000} s: ${now}`);
      await sleep(1000);
    }
  }

  /** Until the DaemonSet is ready on every node, kube-controllers is available and every Node is Ready. */
  async waitInstalled(
    timeoutMs = Number(process.env.CALICO_LAB_INSTALL_TIMEOUT_S ?? 240) * 1000,
  ): Promise<void> {
    if (clusterOf(this.plan).install === 'none') return;
    if (byOperator(clusterOf(this.plan).install)) return this.waitOperatorInstalled(timeoutMs);
    const end = Date.now() + timeoutMs;
    const n = this.plan.nodes.length;
    let said = '';
    for (;;) {
      const [ds, dep, nodes] = await Promise.all([
        this.kubectl(['get', 'daemonset', 'calico-node', '-n', 'kube-system', '-o', 'json']),
        this.kubectl(['get', 'deployment', 'calico-kube-controllers', '-n', 'kube-system', '-o', 'json']),
        this.kubectl(['get', 'nodes', '-o', 'json']),
      ]);
      const c = ds.status === 0 ? daemonSetCounts(JSON.parse(ds.stdout)) : undefined;
      const avail =
        dep.status === 0 ? ((JSON.parse(dep.stdout).status?.availableReplicas as number) ?? 0) : 0;
      const ready =
        nodes.status === 0
          ? [...nodeReadiness(JSON.parse(nodes.stdout)).values()].filter((s) => s === 'True').length
          : 0;
      const now = `calico-node DESIRED ${c?.desired ?? 0} CURRENT ${c?.current ?? 0} READY ${c?.ready ?? 0}, calico-kube-controllers available ${avail}, Nodes Ready ${ready}/${n}`;
      if (c && c.desired === n && c.ready === n && avail >= 1 && ready === n) {
        this.b.out.step(now);
        break;
      }
      if (now !== said) {
        this.b.out.step(`waiting: ${now}`);
        said = now;
      }
      if (Date.now() > end) throw new LabError('setup', `Calico not ready in ${timeoutMs / 1000} s: ${now}`);
      await sleep(1000);
    }
  }
}

export async function labUpCluster(plan: LabPlan, arts: Artifacts, out: Progress): Promise<LabState> {
  checkRoot();
  checkSystemPrograms(undefined, SYSTEM_PROGRAMS);
  const kit = await import('@calico-ts/datastore/testing');
  const kt = kubeTools(kit.kubeApiServerBinary());
  const tools = clusterTools(kt.kubeApiServer);
  const b = new LabBuilder(plan, arts, out, { tools: kt, kit });
  const c = new ClusterBuilder(b, tools);
  c.values = readLabValues(plan, REPO_ROOT);
  await checkNoLab(plan, b.net);
  mkdirSync(plan.stateDir, { recursive: true });
  b.save();
  const cluster = clusterOf(plan);
  out.step(
    `lab "${plan.name}": ${plan.nodes.length} nodes with kubelet, mode ${plan.mode}, install ${cluster.install}, state in ${plan.stateDir}`,
  );
  const credentials = b.kubeCredentials().then(() => c.credentials());
  credentials.catch(() => {});
  try {
    await b.fabric();
    await credentials;
    // calicoctl as an administrator: the admin kubeconfig (the cluster's own components use theirs).
    writeFileSync(plan.calicoctlConfig, calicoctlConfigText(plan));
    await b.etcd();
    b.startApiServer();
    for (const node of plan.nodes) await b.node(node);
    out.step(`nodes: ${plan.nodes.map((n) => `${n.netns} ${n.ip}`).join(', ')}`);
    await makeMntnsDir(cluster.mntnsDir);
    const hosts = Promise.all(plan.nodes.map((n) => c.nodeHost(n.name)));
    hosts.catch(() => {});
    await b.waitEtcd();
    await b.waitApiServer('/livez');
    c.startControlPlane();
    await hosts;
    for (const n of plan.nodes) c.startKubelet(n.name);
    await c.waitNodesRegistered();
    await b.waitApiServer('/readyz');
    await c.install();
    await c.waitInstalled();
    b.state.status = 'up';
    b.state.upSeconds = Math.round(out.seconds * 10) / 10;
    b.save();
  } catch (e) {
    return failedUp(b, e, [credentials]);
  }
  out.step(`lab "${plan.name}" is up in ${b.state.upSeconds} s`);
  out.line(
    [
      '',
      'Next:',
      ...(cluster.install === 'none'
        ? [
            `  pnpm lab kubectl apply -f ${labManifestPath(plan)}   # or: deploy/manifests/calico.yaml`,
            '  # or the operator: pnpm lab kubectl create -f deploy/manifests/tigera-operator.yaml',
            `  #                  pnpm lab kubectl create -f ${labCustomResourcesPath(plan)}`,
          ]
        : []),
      ...(byOperator(cluster.install)
        ? ['  pnpm lab kubectl get tigerastatus', '  pnpm lab kubectl get pods -n calico-system -o wide']
        : []),
      '  pnpm lab kubectl get nodes -o wide',
      '  pnpm lab kubectl get daemonset calico-node --namespace=kube-system',
      `  pnpm lab kubectl create deployment web --image=${imageRef('httpd')} --replicas=6`,
      '  pnpm lab kubectl get pods -o wide',
      '  pnpm lab down',
    ].join('\n'),
  );
  return b.state;
}
