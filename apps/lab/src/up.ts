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
 *
 * The steps are methods of `LabBuilder`, in three files by concern, each class extending the one
 * before: `NetworkSteps` (up-network.ts: namespaces, fabric, veths, routes), `ControlPlaneSteps`
 * (up-control-plane.ts: etcd, certificates, kube-apiserver, CRDs and Nodes, kube-controllers,
 * Typha), and `LabBuilder` here (CNI files, install-cni, calico-node, readiness), with `labUp`,
 * which runs them in the order above.
 */
import { closeSync, existsSync, mkdirSync, openSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Netlinux } from '@calico-ts/netlinux';
import {
  CNI_CONF_NAME,
  calicoNodeContainer,
  calicoNodeContainerName,
  calicoNodeReadinessProbe,
  installCniContainer,
  kubeControllersStatusDir,
  nodeHostDirs,
} from './containers.js';
import { tearDown } from './down.js';
import { errorMessage, LabError } from './errors.js';
import { FABRIC_GATEWAY, type LabPlan, type NodePlan, usesBird } from './plan.js';
import {
  checkContainerTools,
  checkImages,
  execInContainer,
  runContainerOnce,
  startContainer,
} from './podman.js';
import {
  type Artifacts,
  checkArtifacts,
  checkKernelIpip,
  checkRoot,
  checkSystemPrograms,
  HOST_LOCAL,
  kubeTools,
  programPath,
  SYSTEM_PROGRAMS,
} from './prereqs.js';
import { isAlive, runAsync, spawnDetached, stopRecorded } from './processes.js';
import { calicoctlConfigText, calicoNodeEnv, cniConflist, nodeCniBinDir } from './program-config.js';
import type { Progress } from './progress.js';
import { type LabState, readState } from './state.js';
import { ControlPlaneSteps } from './up-control-plane.js';
import { logTail, nsenter, PATH, sleep } from './up-network.js';

export { logTail, nsenter } from './up-network.js';

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

/** The whole lab: the network and control plane steps, then the CNI files and calico-node. */
export class LabBuilder extends ControlPlaneSteps {
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
