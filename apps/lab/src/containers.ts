/**
 * `lab up --images`: what each container is (pure). The DaemonSet and the Deployment of
 * deploy/manifests/calico.yaml, translated to one host whose "hosts" are network namespaces:
 *
 *   host netns          install-cni (cni image, --rm, no network) per node:
 *                         <node>/cni-bin ─► /host/opt/cni/bin, <node>/net.d ─► /host/etc/cni/net.d
 *   node netns nX       calico-node (node image, privileged, the namespace as its host network):
 *                         <node>/run ─► /var/run/calico   <node>/lib ─► /var/lib/calico
 *                         <node>/log ─► /var/log/calico   /lib/modules (ro, if the host has it)
 *                         <node>/xtables.lock ─► /run/xtables.lock
 *   etcd netns          calico-kube-controllers (kube-controllers image, the namespace as its host
 *                         network): <state>/kube-controllers ─► /status
 *
 * The one difference from a cluster: no pod has a service account here, so calico-node and
 * kube-controllers read the API server through the lab's admin kubeconfig, mounted read-only at
 * KUBECONFIG_IN_CONTAINER (upstream's clients accept KUBECONFIG in place of in-cluster config).
 * Everything else each program reads, it reads where the manifests put it; the lab finds the
 * same files at the node's paths (BIRD's socket, the node name, the CNI plugin's socket).
 *
 * Every container carries the labels LAB_LABEL and STATE_DIR_LABEL, so `lab down` finds and
 * removes exactly this lab's containers, also ones a crash left unrecorded.
 */
import { dirname, join } from 'node:path';
import type { ImageName } from '@calico-ts/images/definitions';
import { type LabImages, type LabPlan, labFamilies, type NodePlan, usesBird } from './plan.js';
import { calicoNodeEnv, cniConflist, kubeControllersEnv, nodeCniBinDir } from './program-config.js';

export const LAB_LABEL = 'org.calico-ts.lab';
export const STATE_DIR_LABEL = 'org.calico-ts.lab.state-dir';
export const KUBECONFIG_IN_CONTAINER = '/etc/calico-lab/kubeconfig';
/** What install-cni names the config it writes (the manifests' CNI_CONF_NAME). */
export const CNI_CONF_NAME = '10-calico.conflist';

/** The images a lab runs, given how they are tagged (`imageRef` of @calico-ts/images). */
export function labImages(imageRef: (name: ImageName) => string): LabImages {
  return { node: imageRef('node'), cni: imageRef('cni'), kubeControllers: imageRef('kube-controllers') };
}

export interface ContainerSpec {
  readonly name: string;
  readonly image: string;
  /**
   * The network namespace whose network the container uses as its host network (`podman run
   * --network host` started inside it); undefined: no network at all.
   */
  readonly netns?: string;
  /** Flags after `podman run` and the host's own (podmanRun), before the image. */
  readonly flags: readonly string[];
  /** Runs in the background until removed (`-d`), else once to completion and removed (`--rm`). */
  readonly detach: boolean;
  /** Where its output goes (podman's k8s-file log driver); `podman logs NAME` reads it too. */
  readonly log?: string;
}

/** `calico-lab-<lab>-<role>`: unique on the host, as lab names are. */
export function containerName(plan: LabPlan, role: string): string {
  return `calico-lab-${plan.name}-${role}`;
}

export function calicoNodeContainerName(plan: LabPlan, node: NodePlan): string {
  return containerName(plan, node.name);
}

export function kubeControllersContainerName(plan: LabPlan): string {
  return containerName(plan, 'kube-controllers');
}

/** A node's own "host" directories the DaemonSet mounts, beside its run and lib directories. */
export function nodeHostDirs(plan: LabPlan, node: NodePlan) {
  return {
    log: join(node.dir, 'log'),
    xtablesLock: join(node.dir, 'xtables.lock'),
    cniBin: nodeCniBinDir(plan, node),
    cniNet: node.cniConfDir,
  };
}

function env(vars: Readonly<Record<string, string>>): string[] {
  return Object.entries(vars).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
}

const mount = (host: string, inContainer: string, ro = false) => [
  '-v',
  `${host}:${inContainer}${ro ? ':ro' : ''}`,
];

function common(plan: LabPlan, name: string): string[] {
  return [
    '--name',
    name,
    '--label',
    `${LAB_LABEL}=${plan.name}`,
    '--label',
    `${STATE_DIR_LABEL}=${plan.stateDir}`,
  ];
}

function logFlags(log: string): string[] {
  return ['--log-driver', 'k8s-file', '--log-opt', `path=${log}`];
}

function requireImages(plan: LabPlan): LabImages {
  if (!plan.images) throw new Error(`internal: the lab "${plan.name}" does not run images`);
  return plan.images;
}

/**
 * Without what the lab sets only for processes on the host (PATH, the node's directories, a felix.cfg
 * that does not exist): the image's defaults are the DaemonSet's, and the mounts put them at the
 * node's directories.
 */
const HOST_ONLY = [
  'PATH',
  'FELIX_CONFIGFILE',
  'CALICO_VAR_LIB_DIR',
  'CALICO_VAR_RUN_DIR',
  'CALICO_BIRD_CONFIG_DIR',
];

function withoutHostOnly(vars: Record<string, string>, more: readonly string[] = []): Record<string, string> {
  const out = { ...vars };
  for (const k of [...HOST_ONLY, ...more]) delete out[k];
  if (out.KUBECONFIG !== undefined) out.KUBECONFIG = KUBECONFIG_IN_CONTAINER;
  return out;
}

function kubeconfigMount(plan: LabPlan): string[] {
  return mount(plan.kube.kubeconfig, KUBECONFIG_IN_CONTAINER, true);
}

/**
 * The calico-node container of the DaemonSet, on one lab node. `libModules`: whether the host has
 * /lib/modules to lend (a host without loadable modules, as some containers and VMs, has none).
 */
export function calicoNodeContainer(
  plan: LabPlan,
  node: NodePlan,
  host: { readonly libModules: boolean } = { libModules: true },
): ContainerSpec {
  const images = requireImages(plan);
  const dirs = nodeHostDirs(plan, node);
  const vars = withoutHostOnly(calicoNodeEnv(plan, node, ''));
  return {
    name: calicoNodeContainerName(plan, node),
    image: images.node,
    netns: node.netns,
    detach: true,
    log: node.log,
    flags: [
      ...common(plan, calicoNodeContainerName(plan, node)),
      '--privileged',
      ...(host.libModules ? mount('/lib/modules', '/lib/modules', true) : []),
      ...mount(dirs.xtablesLock, '/run/xtables.lock'),
      ...mount(node.runDir, '/var/run/calico'),
      ...mount(node.libDir, '/var/lib/calico'),
      ...mount(dirs.log, '/var/log/calico'),
      ...(vars.KUBECONFIG ? kubeconfigMount(plan) : []),
      ...env(vars),
    ],
  };
}

/**
 * The network config template install-cni renders on a node: the lab's conflist with upstream's
 * placeholders where the manifests' template has them (the node name, the MTU).
 */
export function cniNetworkConfigTemplate(plan: LabPlan, node: NodePlan): string {
  const conf = cniConflist(plan, node);
  const plugins = (conf.plugins as Record<string, unknown>[]).map((p, i) =>
    i === 0 ? { ...p, nodename: '__KUBERNETES_NODE_NAME__', mtu: '__CNI_MTU__' } : p,
  );
  return JSON.stringify({ ...conf, plugins }, null, 2).replace('"__CNI_MTU__"', '__CNI_MTU__');
}

/** The MTU install-cni puts in the node's config (what the lab writes itself without images). */
export function cniMtu(plan: LabPlan, node: NodePlan): number {
  const first = (cniConflist(plan, node).plugins as { mtu?: number }[])[0];
  return first?.mtu ?? 1500;
}

/** The DaemonSet's install-cni init container, on one lab node: plugins and config, then exit. */
export function installCniContainer(plan: LabPlan, node: NodePlan): ContainerSpec {
  const images = requireImages(plan);
  const dirs = nodeHostDirs(plan, node);
  const name = containerName(plan, `install-cni-${node.name}`);
  return {
    name,
    image: images.cni,
    detach: false,
    flags: [
      ...common(plan, name),
      '--privileged',
      ...mount(dirs.cniBin, '/host/opt/cni/bin'),
      ...mount(dirs.cniNet, '/host/etc/cni/net.d'),
      ...env({
        CNI_CONF_NAME,
        CNI_NETWORK_CONFIG: cniNetworkConfigTemplate(plan, node),
        DATASTORE_TYPE: plan.datastore,
        KUBERNETES_NODE_NAME: node.name,
        CNI_MTU: String(cniMtu(plan, node)),
        // The node's own path of net.d, for paths rendered into the files.
        CNI_NET_DIR: dirs.cniNet,
        SLEEP: 'false',
      }),
    ],
  };
}

/** The status directory kube-controllers' probes read (`/status/status.json` in its image). */
export function kubeControllersStatusDir(plan: LabPlan): string {
  return dirname(plan.kube.controllersStatusFile);
}

/** The calico-kube-controllers Deployment's container, in the etcd namespace. */
export function kubeControllersContainer(plan: LabPlan): ContainerSpec {
  const images = requireImages(plan);
  const name = kubeControllersContainerName(plan);
  const vars = withoutHostOnly(kubeControllersEnv(plan, ''), ['STATUS_FILE']);
  return {
    name,
    image: images.kubeControllers,
    netns: plan.etcdNetns,
    detach: true,
    log: plan.kube.controllersLog,
    flags: [
      ...common(plan, name),
      ...mount(kubeControllersStatusDir(plan), '/status'),
      ...kubeconfigMount(plan),
      ...env(vars),
    ],
  };
}

/** The full `podman …` argv after `nsenter` (if any): run flags, then the container's own. */
export function podmanRunArgs(spec: ContainerSpec, hostRunFlags: readonly string[]): string[] {
  return [
    ...hostRunFlags,
    spec.detach ? '-d' : '--rm',
    '--network',
    spec.netns ? 'host' : 'none',
    ...(spec.log ? logFlags(spec.log) : []),
    ...spec.flags,
    spec.image,
  ];
}

/**
 * The readiness probe the DaemonSet runs in calico-node's container: BIRD's sessions of each
 * family the pods have (`-bird-ready`, `-bird6-ready`, as upstream's IPv6 manifests set them).
 */
export function calicoNodeReadinessProbe(plan: LabPlan): string[] {
  const families = labFamilies(plan);
  const bird = usesBird(plan.mode)
    ? [...(families.includes(4) ? ['-bird-ready'] : []), ...(families.includes(6) ? ['-bird6-ready'] : [])]
    : [];
  return ['/usr/bin/calico-node', '-felix-ready', ...bird];
}

/** The probes the Deployment runs in kube-controllers' container. */
export function kubeControllersProbeCommand(flag: '-r' | '-l'): string[] {
  return ['/usr/bin/check-status', flag];
}

/** Strips what podman's k8s-file log driver puts before each line (time, stream, P/F). */
export function logLineText(line: string): string {
  const m = /^\d{4}-\d\d-\d\dT\S+ (?:stdout|stderr) [FP] (.*)$/.exec(line);
  return m ? m[1]! : line;
}
