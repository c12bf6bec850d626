/**
 * `lab up`'s control plane, in the etcd namespace: etcd (with `--tls`, its certificates), the
 * Kubernetes certificates and admin kubeconfig, kube-apiserver on that etcd, the Calico CRDs and
 * one v1 Node per lab node, calico-kube-controllers, and (`--typha`) calico-typha. Each start is
 * recorded in the state file before anything waits on it; each wait fails early, with the
 * program's log, when the program has exited.
 *
 *   etcd ─► waitEtcd          kubeCredentials ─► startApiServer ─► waitApiServer(/livez)
 *                                                 ─► kubeObjects (CRDs, Nodes) ─► startTypha ─► waitTypha
 *                                                 ─► startKubeControllers ─► waitKubeControllers
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { apiServerClusterArgs } from './cluster/plan.js';
import { kubeControllersContainer } from './containers.js';
import { LabError } from './errors.js';
import { kubeNode } from './k8s-model.js';
import { kubeControllersEnv, kubeControllersProbe, runKubectl } from './kube.js';
import { API_SERVER_PORT, ETCD_IP, fabricSubnets, type KubePlan } from './plan.js';
import { startContainer } from './podman.js';
import { CALICO_CRDS, programPath } from './prereqs.js';
import { isAlive, runAsync, spawnDetached } from './processes.js';
import { typhaEnv } from './program-config.js';
import { logTail, NetworkSteps, nsenter, PATH, sleep } from './up-network.js';

export class ControlPlaneSteps extends NetworkSteps {
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

  /** `--tls`: the etcd CA, server and client certificates in the state directory (mode 0700). */
  async etcdCredentials(): Promise<void> {
    const tls = this.plan.etcdTls;
    if (!tls) return;
    const { kit } = this.kubeParts();
    mkdirSync(tls.dir, { recursive: true, mode: 0o700 });
    await kit.makeEtcdCertificates(tls.dir, { serverIPs: [ETCD_IP], validDays: 365 });
  }

  /** The etcdctl flags of a client of the lab's etcd. */
  etcdctlTlsFlags(): string[] {
    const tls = this.plan.etcdTls;
    return tls ? [`--cacert=${tls.caFile}`, `--cert=${tls.certFile}`, `--key=${tls.keyFile}`] : [];
  }

  /** CA, serving and admin certificates, service-account keys and the admin kubeconfig. */
  async kubeCredentials(): Promise<void> {
    const { plan: kube, kit } = this.kubeParts();
    mkdirSync(kube.dir, { recursive: true, mode: 0o700 });
    // Valid as long as anyone keeps a lab up; the server also answers for 127.0.0.1 in its namespace.
    const certs = await kit.makeKubeCertificates(kube.dir, { serverIPs: [ETCD_IP], validDays: 365 });
    writeFileSync(
      kube.kubeconfig,
      kit.adminKubeconfig({ server: kube.apiServerUrl, name: `calico-lab-${this.plan.name}`, ...certs }),
      { mode: 0o600 },
    );
  }

  startApiServer(): void {
    const { plan: kube, tools, kit } = this.kubeParts();
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
    const { plan: kube, tools } = this.kubeParts();
    const end = Date.now() + timeoutMs;
    for (;;) {
      const r = await runKubectl(this.plan, tools.kubectl, ['get', `--raw=${path}`], { timeoutMs: 5000 });
      if (r.status === 0 && r.stdout.trim() === 'ok') break;
      this.checkApiServer(kube);
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

  protected checkApiServer(kube: KubePlan): void {
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
    const { plan: kube, tools } = this.kubeParts();
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
      this.checkApiServer(kube);
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
      this.checkApiServer(kube);
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

  /** calico-kube-controllers in the etcd namespace, its Deployment's environment pointed at the lab. */
  async startKubeControllers(): Promise<void> {
    const { plan: kube } = this.kubeParts();
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

  /** Until kube-controllers' own readiness probe (`-r`, its status file) passes. */
  async waitKubeControllers(timeoutMs = 90_000): Promise<void> {
    const { plan: kube } = this.kubeParts();
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
}
