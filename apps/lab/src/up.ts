/**
 * `lab up`: build the lab described by plan.ts and wait until every node is ready.
 *
 *   checks (root, programs, built executables, no lab and no namespace of the same names)
 *   certificates + admin kubeconfig ┐ (made while the fabric and etcd start)
 *   fabric netns + br0 ─► etcd netns + veth, etcd started ─► kube-apiserver on it (it waits for
 *   its storage itself) ─► node netns + veths, routes, forwarding ─► etcd healthy ─► CNI plugin and
 *   config per node, calicoctl.cfg ─► API server serving ─► [kubernetes: the Calico CRDs] and one
 *   v1 Node per lab node (kubelet's part) ─► calico-kube-controllers and calico-node per node
 *   ─► every node: `calico-node -felix-ready [-bird-ready]` passes inside its namespace, with the
 *   API server's /readyz and kube-controllers' `-r` probe
 *
 * policy-only: the v1 Nodes carry their pod ranges, the fabric namespace forwards and routes each
 * range to its node (the cloud's network), and host-local joins the plugins in the CNI bin dir.
 *
 * With `--images` (containers.ts, podman.ts) the same steps run the images instead of the built
 * programs: podman, runc and the images are checked first; install-cni runs from the cni image on
 * each node (while the API server starts) and fills the node's CNI directories, which the lab's
 * CNI calls then use; calico-node and kube-controllers run as containers in their namespaces,
 * recorded by name and by main process; the probes are the manifests', run with `podman exec`.
 *
 * The control plane (kube.ts: kube-apiserver, kube-controllers) runs in the etcd namespace in both
 * datastore modes; on etcd the API server keeps its objects under /registry beside Calico's
 * /calico/ (a real cluster would give it its own etcd; the prefixes never meet).
 *
 * Each namespace and process is written to the state file as it is made; when a step fails,
 * everything made so far is removed again (tearDown) and the error is reported.
 */
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { Netlinux } from '@calico-ts/netlinux';
import { apiServerClusterArgs } from './cluster/plan.js';
import {
  CNI_CONF_NAME,
  calicoNodeContainer,
  calicoNodeContainerName,
  calicoNodeReadinessProbe,
  installCniContainer,
  kubeControllersContainer,
  kubeControllersStatusDir,
  logLineText,
  nodeHostDirs,
} from './containers.js';
import { tearDown } from './down.js';
import { errorMessage, LabError } from './errors.js';
import { kubeNode } from './k8s-model.js';
import { kubeControllersEnv, kubeControllersProbe, runKubectl } from './kube.js';
import {
  API_SERVER_PORT,
  BRIDGE,
  calicoctlConfigText,
  calicoNodeEnv,
  cniConflist,
  ETCD_IP,
  FABRIC_GATEWAY,
  FABRIC_GATEWAY6,
  type FabricSubnet,
  fabricSubnets,
  type KubePlan,
  kubePlanOf,
  type LabPlan,
  type NodePlan,
  nodeCniBinDir,
  typhaEnv,
  usesBird,
} from './plan.js';
import {
  checkContainerTools,
  checkImages,
  execInContainer,
  runContainerOnce,
  startContainer,
} from './podman.js';
import {
  type Artifacts,
  CALICO_CRDS,
  checkArtifacts,
  checkKernelIpip,
  checkRoot,
  checkSystemPrograms,
  HOST_LOCAL,
  type KubeTools,
  kubeTools,
  programPath,
  SYSTEM_PROGRAMS,
} from './prereqs.js';
import { isAlive, runAsync, spawnDetached, stopRecorded } from './processes.js';
import type { Progress } from './progress.js';
import { type LabState, newState, readState, writeState } from './state.js';

const PATH = process.env.PATH || '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function nsenter(netns: string): string[] {
  return ['nsenter', `--net=/run/netns/${netns}`];
}

/** `its log ends:` and the log's last lines, or that there is nothing in it. */
export function logTail(file: string | undefined, n = 8): string {
  const text = file && existsSync(file) ? readFileSync(file, 'utf8').trimEnd() : '';
  if (text === '') return `nothing in its log${file ? ` ${file}` : ''}`;
  return `its log ends:\n${text.split('\n').slice(-n).map(logLineText).join('\n')}`;
}

export async function checkNoLab(plan: LabPlan, net: Netlinux): Promise<void> {
  const existing = readState(plan.stateDir);
  if (existing?.status === 'up') {
    throw new LabError(
      'state',
      `the lab "${plan.name}" is already up (${existing.plan.nodes.length} nodes, ${existing.mode}, since ` +
        `${existing.createdAt}); use it, or run \`pnpm lab down\` first`,
    );
  }
  if (existing) {
    throw new LabError(
      'state',
      `a lab "${plan.name}" was left half-made (status ${existing.status}, ${plan.stateDir}); ` +
        'run `pnpm lab down` to remove it, then `pnpm lab up`',
    );
  }
  const wanted = [plan.fabricNetns, plan.etcdNetns, ...plan.nodes.map((n) => n.netns)];
  const present = new Set(await net.listNetns());
  const clash = wanted.filter((n) => present.has(n));
  if (clash.length > 0) {
    throw new LabError(
      'state',
      `network namespace${clash.length > 1 ? 's' : ''} ${clash.join(', ')} already ` +
        `${clash.length > 1 ? 'exist' : 'exists'} and this lab did not make ${clash.length > 1 ? 'them' : 'it'}; ` +
        'remove it with `ip netns del NAME`, or pick another lab with --name',
    );
  }
}

/** The pieces of `@calico-ts/datastore/testing` the lab's API server is made with. */
type KubeKit = typeof import('@calico-ts/datastore/testing');

export class LabBuilder {
  readonly net = new Netlinux();
  readonly state: LabState;

  constructor(
    readonly plan: LabPlan,
    readonly arts: Artifacts,
    readonly out: Progress,
    readonly kube?: { readonly tools: KubeTools; readonly kit: KubeKit },
  ) {
    this.state = newState(plan);
  }

  #kube(): { plan: KubePlan; tools: KubeTools; kit: KubeKit } {
    if (!this.kube) throw new LabError('setup', 'internal: a Kubernetes step without its tools');
    return { plan: kubePlanOf(this.plan, 'the API server'), ...this.kube };
  }

  save(): void {
    writeState(this.state);
  }

  /** Records the namespace, then makes it (a recorded name that was never made is harmless). */
  async addNetns(name: string): Promise<void> {
    this.state.namespaces.push(name);
    this.save();
    await this.net.createNetns(name);
    await this.net.setLinkUp('lo', name);
  }

  async fabric(): Promise<void> {
    const { plan, net } = this;
    await this.addNetns(plan.fabricNetns);
    const subnets = fabricSubnets(plan.topology);
    for (const s of subnets) {
      await net.createBridge({ name: s.bridge }, plan.fabricNetns);
      await net.addAddr(s.bridge, `${s.gateway}/24`, {}, plan.fabricNetns);
      // No duplicate address detection: an address is usable (BIRD binds it) at once.
      if (plan.ipFamily !== undefined && plan.ipFamily !== '4')
        await net.addAddr(s.bridge, `${FABRIC_GATEWAY6}/64`, { noDad: true }, plan.fabricNetns);
      await net.setLinkUp(s.bridge, plan.fabricNetns);
    }
    // Two subnets: the fabric namespace is the router between them.
    if (subnets.length > 1) await net.writeSysctl('net.ipv4.ip_forward', 1, plan.fabricNetns);
    this.out.step(
      `fabric: namespace ${plan.fabricNetns}, ${subnets.map((s) => `bridge ${s.bridge} ${s.gateway}/24`).join(', ')}` +
        `${plan.ipFamily !== undefined && plan.ipFamily !== '4' ? ` and ${FABRIC_GATEWAY6}/64` : ''}` +
        `${subnets.length > 1 ? ' routed between them' : ''} (not connected to the host)`,
    );
  }

  /** A veth from the fabric's `subnet` bridge to `netns`'s eth0 at `ip`, with a default route via its gateway. */
  async attach(
    netns: string,
    fabricIf: string,
    ip: string,
    defaultRoute: boolean,
    subnet: FabricSubnet = fabricSubnets()[0]!,
  ): Promise<void> {
    const { plan, net } = this;
    await net.createVethPair({ name: fabricIf, peerName: 'eth0', peerNetns: netns }, plan.fabricNetns);
    await net.setLink(fabricIf, { master: subnet.bridge, up: true }, plan.fabricNetns);
    await net.addAddr('eth0', `${ip}/24`, {}, netns);
    await net.setLinkUp('eth0', netns);
    if (defaultRoute) await net.addRoute({ dst: 'default', gateway: subnet.gateway, dev: 'eth0' }, netns);
  }

  async etcd(): Promise<void> {
    const { plan } = this;
    await this.addNetns(plan.etcdNetns);
    // With two subnets, the nodes of the second reach etcd and the API server through the router.
    await this.attach(plan.etcdNetns, 'etcd', ETCD_IP, fabricSubnets(plan.topology).length > 1);
    mkdirSync(plan.etcdDataDir, { recursive: true });
    const peer = 'http://127.0.0.1:2380';
    this.state.processes.etcd = spawnDetached(
      [
        ...nsenter(plan.etcdNetns),
        programPath('etcd'),
        `--name=${plan.name}`,
        `--data-dir=${plan.etcdDataDir}`,
        `--listen-client-urls=${plan.etcdUrl}`,
        `--advertise-client-urls=${plan.etcdUrl}`,
        `--listen-peer-urls=${peer}`,
        `--initial-advertise-peer-urls=${peer}`,
        `--initial-cluster=${plan.name}=${peer}`,
        '--initial-cluster-state=new',
        '--logger=zap',
        '--log-level=warn',
        '--enable-v2=false',
        // --tls: https, and only clients with a certificate from the lab's CA.
        ...(plan.etcdTls
          ? [
              `--cert-file=${plan.etcdTls.serverCertFile}`,
              `--key-file=${plan.etcdTls.serverKeyFile}`,
              `--trusted-ca-file=${plan.etcdTls.caFile}`,
              '--client-cert-auth',
            ]
          : []),
      ],
      { env: { PATH }, log: join(plan.stateDir, 'etcd.log') },
    );
    this.save();
    this.out.step(
      `etcd: namespace ${plan.etcdNetns}, ${plan.etcdUrl} (pid ${this.state.processes.etcd.pid})`,
    );
  }

  /** CA, serving and admin certificates, service-account keys and the admin kubeconfig. */
  async kubeCredentials(): Promise<void> {
    const { plan: kube, kit } = this.#kube();
    mkdirSync(kube.dir, { recursive: true, mode: 0o700 });
    // Valid as long as anyone keeps a lab up; the server also answers for 127.0.0.1 in its namespace.
    const certs = await kit.makeKubeCertificates(kube.dir, { serverIPs: [ETCD_IP], validDays: 365 });
    writeFileSync(
      kube.kubeconfig,
      kit.adminKubeconfig({ server: kube.apiServerUrl, name: `calico-lab-${this.plan.name}`, ...certs }),
      { mode: 0o600 },
    );
  }

  /** `--tls`: the etcd CA, server and client certificates in the state directory (mode 0700). */
  async etcdCredentials(): Promise<void> {
    const tls = this.plan.etcdTls;
    if (!tls) return;
    const { kit } = this.#kube();
    mkdirSync(tls.dir, { recursive: true, mode: 0o700 });
    await kit.makeEtcdCertificates(tls.dir, { serverIPs: [ETCD_IP], validDays: 365 });
  }

  /** The etcdctl flags of a client of the lab's etcd. */
  etcdctlTlsFlags(): string[] {
    const tls = this.plan.etcdTls;
    return tls ? [`--cacert=${tls.caFile}`, `--cert=${tls.certFile}`, `--key=${tls.keyFile}`] : [];
  }

  startApiServer(): void {
    const { plan: kube, tools, kit } = this.#kube();
    const args = kit.kubeApiServerArgs({
      dir: kube.dir,
      etcdServers: this.plan.etcdUrl,
      address: ETCD_IP,
      port: API_SERVER_PORT,
      // --kubelet: a controller-manager makes the `default` ServiceAccounts, so pods get tokens.
      serviceAccountAdmission: this.plan.cluster !== undefined,
      extraArgs: [
        ...(this.plan.cluster ? apiServerClusterArgs(kube.dir) : []),
        `--etcd-prefix=${kube.etcdPrefix}`,
        ...(this.plan.etcdTls
          ? [
              `--etcd-cafile=${this.plan.etcdTls.caFile}`,
              `--etcd-certfile=${this.plan.etcdTls.certFile}`,
              `--etcd-keyfile=${this.plan.etcdTls.keyFile}`,
            ]
          : []),
      ],
    });
    this.state.processes['kube-apiserver'] = spawnDetached(
      [...nsenter(this.plan.etcdNetns), tools.kubeApiServer, ...args],
      { env: { PATH }, log: kube.log },
    );
    this.save();
    this.out.step(
      `kube-apiserver: namespace ${this.plan.etcdNetns}, ${kube.apiServerUrl} on etcd ` +
        `(pid ${this.state.processes['kube-apiserver'].pid}), kubeconfig ${kube.kubeconfig}`,
    );
  }

  /**
   * Until `path` answers ok: `/livez` once it serves (the admin, in system:masters, needs no RBAC
   * roles), `/readyz` once storage, RBAC bootstrap and every post-start hook are done.
   */
  async waitApiServer(path: '/livez' | '/readyz', timeoutMs = 90_000): Promise<void> {
    const { plan: kube, tools } = this.#kube();
    const end = Date.now() + timeoutMs;
    for (;;) {
      const r = await runKubectl(this.plan, tools.kubectl, ['get', `--raw=${path}`], { timeoutMs: 5000 });
      if (r.status === 0 && r.stdout.trim() === 'ok') break;
      this.#checkApiServer(kube);
      if (Date.now() > end) {
        throw new LabError(
          'setup',
          `kube-apiserver did not answer ${path} ok in ${timeoutMs / 1000} s (${(r.stderr || r.stdout).trim()}); ` +
            `${logTail(kube.log)}`,
        );
      }
      await sleep(250);
    }
    this.out.step(`kube-apiserver: ${path === '/livez' ? 'serving' : 'ready'}`);
  }

  #checkApiServer(kube: KubePlan): void {
    if (!isAlive(this.state.processes['kube-apiserver'])) {
      throw new LabError('setup', `kube-apiserver exited; ${logTail(kube.log)}`);
    }
  }

  /**
   * A v1 Node per lab node (kubelet's part) and the Calico CRDs, then the CRDs established. Applied
   * as soon as the server serves; a server still starting up refuses some requests for a moment,
   * so the (idempotent) apply is repeated until it succeeds. On etcd the CRDs hold nothing of
   * Calico's, but kube-controllers' view of Kubernetes lists the Calico kinds it derives (the
   * policy controller's `knp.*` read as CRD NetworkPolicies) and fails where they are not served.
   */
  async kubeObjects(timeoutMs = 90_000): Promise<void> {
    const { plan: kube, tools } = this.#kube();
    const nodes = {
      apiVersion: 'v1',
      kind: 'List',
      items: this.plan.nodes.map((n) => kubeNode(n.name, n.podCidr)),
    };
    const kubectl = (args: string[], input?: string) =>
      runKubectl(this.plan, tools.kubectl, args, {
        ...(input !== undefined ? { input } : {}),
        timeoutMs: 90_000,
      });
    const end = Date.now() + timeoutMs;
    const apply = ['apply', '--server-side', '--field-manager=calico-lab', '-f', CALICO_CRDS, '-f', '-'];
    for (;;) {
      const r = await kubectl(apply, JSON.stringify(nodes));
      if (r.status === 0) break;
      this.#checkApiServer(kube);
      if (Date.now() > end)
        throw new LabError('setup', `kubectl ${apply.join(' ')} failed: ${(r.stderr || r.stdout).trim()}`);
      await sleep(250);
    }
    for (;;) {
      // One list instead of `kubectl wait`, which takes seconds over 22 CRDs.
      const r = await kubectl(['get', 'crd', '-o', 'json']);
      const items =
        r.status === 0
          ? (
              JSON.parse(r.stdout) as {
                items: { status?: { conditions?: { type: string; status: string }[] } }[];
              }
            ).items
          : [];
      const established = items.filter((c) =>
        c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True'),
      ).length;
      if (items.length > 0 && established === items.length) break;
      this.#checkApiServer(kube);
      if (Date.now() > end) {
        throw new LabError(
          'setup',
          `the Calico CRDs were not established in ${timeoutMs / 1000} s (${established}/${items.length}): ` +
            (r.stderr || '').trim(),
        );
      }
      await sleep(100);
    }
    this.out.step(
      `kubernetes: Calico CRDs established, Nodes ${this.plan.nodes.map((n) => n.name).join(', ')} created`,
    );
  }

  /** Records a container's name before it is started, so `lab down` removes it whatever happens. */
  recordContainer(name: string): void {
    (this.state as { containers?: string[] }).containers ??= [];
    this.state.containers!.push(name);
    this.save();
  }

  /** calico-kube-controllers in the etcd namespace, its Deployment's environment pointed at the lab. */
  async startKubeControllers(): Promise<void> {
    const { plan: kube } = this.#kube();
    mkdirSync(dirname(kube.controllersStatusFile), { recursive: true });
    if (this.plan.images) {
      const spec = kubeControllersContainer(this.plan);
      this.recordContainer(spec.name);
      this.state.processes['kube-controllers'] = await startContainer(spec);
      this.save();
      this.out.step(
        `calico-kube-controllers: container ${spec.name} (${spec.image}) in namespace ${this.plan.etcdNetns} ` +
          `(pid ${this.state.processes['kube-controllers'].pid}), log ${kube.controllersLog} or \`podman logs ${spec.name}\``,
      );
      return;
    }
    const rec = spawnDetached(
      [...nsenter(this.plan.etcdNetns), process.execPath, this.arts.kubeControllers],
      {
        env: kubeControllersEnv(this.plan, PATH),
        log: kube.controllersLog,
      },
    );
    this.state.processes['kube-controllers'] = rec;
    this.save();
    this.out.step(
      `calico-kube-controllers: namespace ${this.plan.etcdNetns} (pid ${rec.pid}), ` +
        `controllers ${kubeControllersEnv(this.plan, PATH).ENABLED_CONTROLLERS}, log ${kube.controllersLog}`,
    );
  }

  /** `--typha`: calico-typha in the etcd namespace, on the lab's datastore. */
  startTypha(): void {
    const typha = this.plan.typha;
    if (!typha) return;
    const rec = spawnDetached([...nsenter(this.plan.etcdNetns), process.execPath, this.arts.typha], {
      env: typhaEnv(this.plan, typha, PATH),
      log: typha.log,
    });
    this.state.processes.typha = rec;
    this.save();
    this.out.step(
      `calico-typha: ${typha.addr} in namespace ${this.plan.etcdNetns} (pid ${rec.pid}), ` +
        `metrics on port ${typha.metricsPort}, log ${typha.log}`,
    );
  }

  /** Until Typha has listed every source once (its log says so), so nodes start from a full view. */
  async waitTypha(timeoutMs = 60_000): Promise<void> {
    const typha = this.plan.typha;
    if (!typha) return;
    const end = Date.now() + timeoutMs;
    for (;;) {
      const text = existsSync(typha.log) ? readFileSync(typha.log, 'utf8') : '';
      if (text.includes('"in sync with the datastore"')) break;
      if (!isAlive(this.state.processes.typha))
        throw new LabError('setup', `calico-typha exited; ${logTail(typha.log)}`);
      if (Date.now() > end)
        throw new LabError(
          'setup',
          `calico-typha not in sync with the datastore in ${timeoutMs / 1000} s; ${logTail(typha.log)}`,
        );
      await sleep(100);
    }
    this.out.step('calico-typha: in sync with the datastore');
  }

  /** Until kube-controllers' own readiness probe (`-r`, its status file) passes. */
  async waitKubeControllers(timeoutMs = 90_000): Promise<void> {
    const { plan: kube } = this.#kube();
    const end = Date.now() + timeoutMs;
    for (;;) {
      const r = await kubeControllersProbe(this.plan, this.arts, '-r');
      if (r.ok) break;
      if (!isAlive(this.state.processes['kube-controllers']))
        throw new LabError('setup', `calico-kube-controllers exited; ${logTail(kube.controllersLog)}`);
      if (Date.now() > end)
        throw new LabError(
          'setup',
          `calico-kube-controllers not ready in ${timeoutMs / 1000} s (${r.message}); ${logTail(kube.controllersLog)}`,
        );
      await sleep(250);
    }
    this.out.step('calico-kube-controllers: ready');
  }

  async node(node: NodePlan): Promise<void> {
    await this.addNetns(node.netns);
    await this.attach(node.netns, node.fabricIf, node.ip, true, node.subnet);
    // A Kubernetes host forwards; pods' traffic crosses this namespace.
    await this.net.writeSysctl('net.ipv4.ip_forward', 1, node.netns);
    if (node.ip6 !== undefined) {
      await this.net.writeSysctls(
        [
          ['net.ipv6.conf.all.disable_ipv6', 0],
          ['net.ipv6.conf.all.forwarding', 1],
        ],
        node.netns,
      );
      await this.net.addAddr('eth0', `${node.ip6}/64`, { noDad: true }, node.netns);
      await this.net.addRoute({ dst: 'default', gateway: FABRIC_GATEWAY6, dev: 'eth0' }, node.netns);
    }
  }

  /**
   * policy-only: what a cloud's network does for a routed pod network: the fabric (the VPC's
   * router) forwards, and routes each node's pod range to that node. No redirects: the nodes are
   * to keep sending pod traffic to their gateway.
   */
  async cloudRoutes(): Promise<void> {
    const { plan, net } = this;
    const routed = plan.nodes.filter((n) => n.podCidr !== undefined);
    if (routed.length === 0) return;
    await net.writeSysctl('net.ipv4.ip_forward', 1, plan.fabricNetns);
    await net.writeSysctl('net.ipv4.conf.all.send_redirects', 0, plan.fabricNetns);
    await net.writeSysctl(`net.ipv4.conf.${BRIDGE}.send_redirects`, 0, plan.fabricNetns);
    for (const n of routed)
      await net.addRoute({ dst: n.podCidr!, gateway: n.ip, dev: BRIDGE }, plan.fabricNetns);
    this.out.step(
      `cloud routes in ${plan.fabricNetns}: ${routed.map((n) => `${n.podCidr} via ${n.ip}`).join(', ')}`,
    );
  }

  async waitEtcd(timeoutMs = 30_000): Promise<void> {
    const { plan } = this;
    const end = Date.now() + timeoutMs;
    for (;;) {
      const r = await runAsync(
        [
          ...nsenter(plan.etcdNetns),
          programPath('etcdctl'),
          `--endpoints=${plan.etcdUrl}`,
          ...this.etcdctlTlsFlags(),
          'endpoint',
          'health',
        ],
        { env: { PATH, ETCDCTL_API: '3' }, timeoutMs: 5000 },
      );
      if (r.status === 0) break;
      if (!isAlive(this.state.processes.etcd)) {
        throw new LabError('setup', `etcd exited; ${logTail(join(plan.stateDir, 'etcd.log'))}`);
      }
      if (Date.now() > end)
        throw new LabError('setup', `etcd did not become healthy in ${timeoutMs / 1000} s`);
      await sleep(200);
    }
    this.out.step('etcd: healthy');
  }

  files(): void {
    const { plan, arts } = this;
    if (plan.images) {
      this.containerHostFiles();
      return;
    }
    mkdirSync(plan.cniBinDir, { recursive: true });
    // Both plugin names lead to the one executable (its name picks the plugin), as install-cni
    // lays them out; linked, not copied (the native build is large).
    for (const name of ['calico', 'calico-ipam']) symlinkSync(arts.cniPlugin, join(plan.cniBinDir, name));
    // policy-only: the reference host-local IPAM plugin (containernetworking-plugins).
    if (plan.mode === 'policy-only')
      symlinkSync(programPath('host-local'), join(plan.cniBinDir, 'host-local'));
    for (const node of plan.nodes) {
      for (const d of [node.libDir, node.runDir, node.birdDir, node.cniConfDir])
        mkdirSync(d, { recursive: true });
      writeFileSync(
        join(node.cniConfDir, '10-calico.conflist'),
        `${JSON.stringify(cniConflist(plan, node), null, 2)}\n`,
      );
    }
    writeFileSync(plan.calicoctlConfig, calicoctlConfigText(plan));
    this.out.step(`CNI plugin in ${plan.cniBinDir}, a 10-calico.conflist per node, ${plan.calicoctlConfig}`);
  }

  /**
   * `--images`: each node's host directories the DaemonSet mounts (install-cni fills the CNI ones)
   * and calicoctl.cfg.
   */
  containerHostFiles(): void {
    const { plan } = this;
    for (const node of plan.nodes) {
      const dirs = nodeHostDirs(plan, node);
      for (const d of [node.libDir, node.runDir, node.birdDir, dirs.log, dirs.cniBin, dirs.cniNet])
        mkdirSync(d, { recursive: true });
      closeSync(openSync(dirs.xtablesLock, 'a'));
    }
    if (plan.kube) mkdirSync(kubeControllersStatusDir(plan), { recursive: true });
    writeFileSync(plan.calicoctlConfig, calicoctlConfigText(plan));
    this.out.step(`host directories per node for the DaemonSet's mounts, ${plan.calicoctlConfig}`);
  }

  /**
   * `--images`: the DaemonSet's install-cni init container on every node (at once): the plugins into
   * the node's CNI bin directory, the network config into its net.d.
   */
  async installCni(): Promise<void> {
    const { plan } = this;
    await Promise.all(
      plan.nodes.map(async (node) => {
        const spec = installCniContainer(plan, node);
        this.recordContainer(spec.name);
        const r = await runContainerOnce(spec);
        const conflist = join(nodeHostDirs(plan, node).cniNet, CNI_CONF_NAME);
        if (
          r.status !== 0 ||
          !existsSync(join(nodeCniBinDir(plan, node), 'calico')) ||
          !existsSync(conflist)
        ) {
          throw new LabError(
            'setup',
            `install-cni (${spec.image}) on ${node.name} failed (exit ${r.status}): ` +
              `${(r.stderr || r.stdout).trim().split('\n').slice(-6).join('\n') || 'no output'}`,
          );
        }
      }),
    );
    this.out.step(
      `install-cni: ${plan.images?.cni} installed the CNI plugins and ${CNI_CONF_NAME} on ` +
        `${plan.nodes.map((n) => n.name).join(', ')}`,
    );
  }

  async startNode(node: NodePlan): Promise<void> {
    if (this.plan.images) {
      const spec = calicoNodeContainer(this.plan, node, { libModules: existsSync('/lib/modules') });
      this.recordContainer(spec.name);
      const rec = await startContainer(spec);
      this.state.processes[`node/${node.name}`] = rec;
      this.save();
      this.out.step(
        `calico-node ${node.name}: container ${spec.name} (${spec.image}), namespace ${node.netns}, ` +
          `${node.ip}/24 (pid ${rec.pid})`,
      );
      return;
    }
    const env = calicoNodeEnv(this.plan, node, PATH);
    const rec = spawnDetached([...nsenter(node.netns), this.arts.calicoNode], { env, log: node.log });
    this.state.processes[`node/${node.name}`] = rec;
    this.save();
    this.out.step(`calico-node ${node.name}: namespace ${node.netns}, ${node.ip}/24 (pid ${rec.pid})`);
  }

  /** The node's own readiness checks, run inside its namespace with its environment. */
  nodeReady(node: NodePlan): Promise<{ ok: boolean; message: string }> {
    return nodeReadiness(this.plan, this.arts, node);
  }

  async waitReady(timeoutMs: number): Promise<void> {
    const pending = new Map(this.plan.nodes.map((n) => [n.name, n]));
    const last = new Map<string, string>();
    const end = Date.now() + timeoutMs;
    while (pending.size > 0) {
      await Promise.all(
        [...pending.values()].map(async (node) => {
          const rec = this.state.processes[`node/${node.name}`];
          if (!isAlive(rec)) {
            throw new LabError('setup', `calico-node ${node.name} exited; ${logTail(node.log)}`);
          }
          const r = await this.nodeReady(node);
          if (r.ok) {
            pending.delete(node.name);
            this.out.step(
              `${node.name}: ready (Felix in sync${usesBird(this.plan.mode) ? ', BGP sessions Established' : ''})`,
            );
          } else {
            last.set(node.name, r.message);
          }
        }),
      );
      if (pending.size === 0) break;
      if (Date.now() > end) {
        const why = [...pending.keys()].map((n) => `  ${n}: ${last.get(n) ?? 'no answer'}`).join('\n');
        throw new LabError('setup', `nodes not ready after ${timeoutMs / 1000} s:\n${why}`);
      }
      await sleep(300);
    }
  }
}

/**
 * The node's readiness probe: `calico-node -felix-ready [-bird-ready]` inside its namespace with
 * its environment, or, with `--images`, the DaemonSet's probe in its container.
 */
export async function nodeReadiness(
  plan: LabPlan,
  arts: Artifacts,
  node: NodePlan,
): Promise<{ ok: boolean; message: string }> {
  const r = plan.images
    ? await execInContainer(node.netns, calicoNodeContainerName(plan, node), calicoNodeReadinessProbe(plan))
    : await runAsync([...nsenter(node.netns), arts.calicoNode, ...calicoNodeReadinessProbe(plan).slice(1)], {
        env: calicoNodeEnv(plan, node, PATH),
        timeoutMs: 10_000,
      });
  return { ok: r.status === 0, message: (r.stdout + r.stderr).trim() };
}

/**
 * `lab restart kube-apiserver`: the recorded process stopped (or found gone), the server started
 * again with the flags `lab up` gave it (they follow from the plan), /readyz waited for.
 */
export async function restartApiServer(state: LabState, arts: Artifacts, out: Progress): Promise<void> {
  const kit = await import('@calico-ts/datastore/testing');
  const b = new LabBuilder(state.plan, arts, out, { tools: kubeTools(kit.kubeApiServerBinary()), kit });
  Object.assign(b.state, state);
  const rec = state.processes['kube-apiserver'];
  if (rec && isAlive(rec)) {
    await stopRecorded(rec, 5000);
    out.step(`kube-apiserver stopped (pid ${rec.pid})`);
  } else out.step('kube-apiserver was not running');
  b.startApiServer();
  await b.waitApiServer('/readyz');
}

/**
 * A `lab up` that failed: the state marked failed, then everything made so far removed (once
 * `pending` steps, which may still write into the state directory, have settled), and the error
 * thrown as a LabError. With CALICO_LAB_KEEP_FAILED=1 the lab is left as it is, for a look.
 */
export async function failedUp(
  b: LabBuilder,
  e: unknown,
  pending: readonly Promise<unknown>[],
): Promise<never> {
  const { out, plan } = b;
  b.state.status = 'failed';
  b.save();
  for (const p of pending) await p.catch(() => {});
  if (process.env.CALICO_LAB_KEEP_FAILED === '1') {
    out.step(
      'lab up failed; left as it is for a look (CALICO_LAB_KEEP_FAILED=1): `pnpm lab down` removes it',
    );
  } else {
    out.step('lab up failed; removing what it made');
    await tearDown(b.state, plan.stateDir, out).catch((e2: unknown) =>
      out.step(`cleanup failed too: ${errorMessage(e2)}; run \`pnpm lab down\``),
    );
  }
  throw e instanceof LabError ? e : new LabError('setup', `lab up failed: ${errorMessage(e)}`, { cause: e });
}

export async function labUp(
  plan: LabPlan,
  arts: Artifacts,
  out: Progress,
  readyTimeoutMs = 120_000,
): Promise<LabState> {
  checkRoot();
  checkSystemPrograms(
    existsSync,
    plan.mode === 'policy-only' ? [...SYSTEM_PROGRAMS, HOST_LOCAL] : SYSTEM_PROGRAMS,
  );
  if (plan.mode === 'ipip') checkKernelIpip();
  checkArtifacts(arts);
  if (plan.images) {
    checkContainerTools();
    await checkImages(Object.values(plan.images));
  }
  const kit = await import('@calico-ts/datastore/testing');
  const b = new LabBuilder(plan, arts, out, { tools: kubeTools(kit.kubeApiServerBinary()), kit });
  await checkNoLab(plan, b.net);
  mkdirSync(plan.stateDir, { recursive: true });
  b.save();
  out.step(
    `lab "${plan.name}": ${plan.nodes.length} nodes, mode ${plan.mode}, ` +
      `${plan.ipFamily !== undefined && plan.ipFamily !== '4' ? `IP family ${plan.ipFamily}, ` : ''}datastore ${plan.datastore}, ${plan.typha ? 'Typha, ' : ''}` +
      `${plan.images ? `images ${Object.values(plan.images).join(', ')}, ` : ''}state in ${plan.stateDir}`,
  );
  // Certificates are made while the namespaces and etcd come up.
  const credentials = Promise.all([b.kubeCredentials(), b.etcdCredentials()]);
  credentials.catch(() => {});
  let installed: Promise<void> = Promise.resolve();
  try {
    await b.fabric();
    // etcd's own certificates first, with --tls.
    await credentials;
    await b.etcd();
    // Started with etcd still coming up: it waits for its storage itself.
    b.startApiServer();
    for (const node of plan.nodes) await b.node(node);
    await b.cloudRoutes();
    out.step(
      `nodes: ${plan.nodes.map((n) => `${n.netns} ${n.ip}${n.ip6 ? ` ${n.ip6}` : ''}`).join(', ')} (default via ${[...new Set(plan.nodes.map((n) => n.subnet?.gateway ?? FABRIC_GATEWAY))].join(' or ')})`,
    );
    await b.waitEtcd();
    b.files();
    // install-cni needs nothing of the API server: it runs while the server starts.
    if (plan.images) {
      installed = b.installCni();
      installed.catch(() => {});
    }
    await b.waitApiServer('/livez');
    await b.kubeObjects();
    b.startTypha();
    await b.waitTypha();
    await installed;
    // Containers take a moment each to start: all at once, and all finished (started or failed)
    // before a failure is reported and the clean-up removes them.
    const started = await Promise.allSettled([
      b.startKubeControllers(),
      ...plan.nodes.map((node) => b.startNode(node)),
    ]);
    const failed = started.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    await Promise.all([b.waitReady(readyTimeoutMs), b.waitApiServer('/readyz'), b.waitKubeControllers()]);
    b.state.status = 'up';
    b.state.upSeconds = Math.round(out.seconds * 10) / 10;
    b.save();
  } catch (e) {
    return failedUp(b, e, [credentials, installed]);
  }
  out.step(`lab "${plan.name}" is up in ${b.state.upSeconds} s`);
  out.line(
    [
      '',
      'Next:',
      '  pnpm lab ns create demo --labels team=a',
      `  pnpm lab pod create demo/web --node ${plan.nodes[0]!.name} --labels app=web`,
      '  pnpm lab connectivity',
      '  pnpm lab calicoctl get nodes -o wide',
      '  pnpm lab kubectl get nodes,pods -A -o wide',
      '  pnpm lab status',
      '  pnpm lab down',
    ].join('\n'),
  );
  return b.state;
}
