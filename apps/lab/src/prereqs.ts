/**
 * What the lab needs before it makes anything: root, the system programs (and which Debian package
 * brings each), and calico-ts's own built executables. Each miss is reported with what to do.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LabError } from './errors.js';

/** The repository root (this file is apps/lab/{src,dist}/prereqs.*). */
export const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url));

export interface Artifacts {
  readonly calicoNode: string;
  readonly cniPlugin: string;
  readonly calicoctl: string;
  /** calico-kube-controllers (apps/kube-controllers), run with Node. */
  readonly kubeControllers: string;
  /** calico-typha (apps/typha), run with Node when the lab has `--typha`. */
  readonly typha: string;
  readonly listener: string;
  readonly prober: string;
}

/**
 * The executables the lab runs. The CNI plugin and calicoctl are the native builds
 * (`bin/native`, what a node or an operator runs) when they were built, else the Node bundles;
 * `CALICO_LAB_*_BIN` picks another.
 */
export function artifacts(
  env: Readonly<Record<string, string | undefined>> = process.env,
  exists: (path: string) => boolean = existsSync,
): Artifacts {
  const nativeOr = (native: string, bundle: string) =>
    exists(join(REPO_ROOT, native)) ? join(REPO_ROOT, native) : join(REPO_ROOT, bundle);
  return {
    calicoNode: env.CALICO_LAB_NODE_BIN || join(REPO_ROOT, 'apps/calico-node/bin/calico-node'),
    cniPlugin:
      env.CALICO_LAB_CNI_BIN ||
      nativeOr('packages/cni-plugin/bin/native/calico', 'packages/cni-plugin/bin/calico.mjs'),
    calicoctl:
      env.CALICO_LAB_CALICOCTL_BIN ||
      nativeOr('packages/ctl/bin/native/calicoctl', 'packages/ctl/bin/calicoctl'),
    kubeControllers:
      env.CALICO_LAB_KUBE_CONTROLLERS_BIN ||
      join(REPO_ROOT, 'apps/kube-controllers/bin/calico-kube-controllers'),
    typha: env.CALICO_LAB_TYPHA_BIN || join(REPO_ROOT, 'apps/typha/bin/calico-typha'),
    listener: join(REPO_ROOT, 'apps/lab/agents/listener.mjs'),
    prober: join(REPO_ROOT, 'apps/lab/agents/probe.mjs'),
  };
}

export interface SystemProgram {
  readonly name: string;
  readonly paths: readonly string[];
  readonly debianPackage: string;
}

export const SYSTEM_PROGRAMS: readonly SystemProgram[] = [
  { name: 'ip', paths: ['/usr/sbin/ip', '/sbin/ip', '/usr/bin/ip', '/bin/ip'], debianPackage: 'iproute2' },
  { name: 'nsenter', paths: ['/usr/bin/nsenter', '/bin/nsenter'], debianPackage: 'util-linux' },
  { name: 'etcd', paths: ['/usr/bin/etcd'], debianPackage: 'etcd-server' },
  { name: 'etcdctl', paths: ['/usr/bin/etcdctl'], debianPackage: 'etcd-client' },
  { name: 'bird', paths: ['/usr/sbin/bird'], debianPackage: 'bird2' },
  { name: 'nft', paths: ['/usr/sbin/nft', '/sbin/nft'], debianPackage: 'nftables' },
  {
    name: 'libnftables',
    paths: [
      '/usr/lib/x86_64-linux-gnu/libnftables.so.1',
      '/usr/lib/aarch64-linux-gnu/libnftables.so.1',
      '/usr/lib/libnftables.so.1',
    ],
    debianPackage: 'libnftables1',
  },
];

/** `--mode policy-only`: the reference host-local IPAM plugin the pods' CNI allocates with. */
export const HOST_LOCAL: SystemProgram = {
  name: 'host-local',
  paths: ['/usr/lib/cni/host-local', '/opt/cni/bin/host-local'],
  debianPackage: 'containernetworking-plugins',
};

export function findProgram(
  p: SystemProgram,
  exists: (path: string) => boolean = existsSync,
): string | undefined {
  return p.paths.find(exists);
}

/** The programs that are missing (pure given `exists`). */
export function missingPrograms(
  exists: (path: string) => boolean = existsSync,
  programs: readonly SystemProgram[] = SYSTEM_PROGRAMS,
): SystemProgram[] {
  return programs.filter((p) => findProgram(p, exists) === undefined);
}

export function programPath(name: string): string {
  const p = [...SYSTEM_PROGRAMS, HOST_LOCAL].find((x) => x.name === name)!;
  return findProgram(p) ?? p.paths[0]!;
}

export function checkRoot(): void {
  if (process.getuid?.() !== 0) {
    throw new LabError(
      'prerequisite',
      'the lab makes network namespaces and must run as root (try: sudo pnpm lab …)',
    );
  }
}

export function checkSystemPrograms(
  exists: (path: string) => boolean = existsSync,
  programs: readonly SystemProgram[] = SYSTEM_PROGRAMS,
): void {
  const missing = missingPrograms(exists, programs);
  if (missing.length === 0) return;
  const pkgs = [...new Set(missing.map((m) => m.debianPackage))];
  throw new LabError(
    'prerequisite',
    `missing: ${missing.map((m) => m.name).join(', ')}. Install them with ` +
      `\`apt-get install ${pkgs.join(' ')}\` or run ./scripts/setup.sh`,
  );
}

/** One `ip` command's outcome, for {@link checkKernelIpip}. */
export type IpRunner = (args: readonly string[]) => {
  readonly status: number | null;
  readonly stderr: string;
};

const runIp: IpRunner = (args) => {
  const r = spawnSync('ip', args, { encoding: 'utf8', env: { ...process.env, LC_ALL: 'C' } });
  return { status: r.status, stderr: r.stderr ?? '' };
};

/**
 * `--mode ipip` needs the kernel's `ipip` module (Felix's tunl0 is the module's fallback device).
 * Tried the way Felix will ask for it, `ip link add … type ipip`, in a namespace made for the test
 * and deleted whatever happens, so nothing of the host changes (a module the kernel can load is
 * loaded, as Felix would load it).
 */
export function checkKernelIpip(
  run: IpRunner = runIp,
  probeNetns = `calico-lab-ipip-probe-${process.pid}`,
): void {
  const made = run(['netns', 'add', probeNetns]);
  if (made.status !== 0) {
    throw new LabError(
      'setup',
      `could not make the namespace ${probeNetns} to check for IPIP support: ${made.stderr.trim()}`,
    );
  }
  let tried: { status: number | null; stderr: string };
  try {
    tried = run(['-n', probeNetns, 'link', 'add', 'ipipprobe0', 'type', 'ipip']);
  } finally {
    run(['netns', 'del', probeNetns]);
  }
  if (tried.status === 0) return;
  const why = tried.stderr.trim() || `ip exited with ${tried.status}`;
  throw new LabError(
    'prerequisite',
    `--mode ipip needs the kernel's ipip module, and this kernel has none: \`ip link add type ipip\` ` +
      `fails with "${why}". Load it (\`modprobe ipip\`) on a kernel that ships it, or use --mode bgp or ` +
      '--mode vxlan here',
  );
}

/** The Calico CRDs, as generated into deploy/ (`pnpm crds`). */
export const CALICO_CRDS = join(REPO_ROOT, 'deploy/crds/calico-crds.yaml');

/** The Kubernetes control plane's programs, which every lab runs. */
export interface KubeTools {
  readonly kubeApiServer: string;
  readonly kubectl: string;
  readonly openssl: string;
}

function onPath(
  name: string,
  env: Readonly<Record<string, string | undefined>>,
  exists: (p: string) => boolean,
) {
  for (const d of (env.PATH || '/usr/local/bin:/usr/bin:/bin').split(':')) {
    if (d && exists(join(d, name))) return join(d, name);
  }
  return undefined;
}

const KUBECTL_HINT = 'kubectl (on PATH, or CALICO_LAB_KUBECTL_BIN; any recent release)';

/** The kubectl the lab runs: `CALICO_LAB_KUBECTL_BIN`, else the machine's on PATH. */
export function kubectlPath(
  env: Readonly<Record<string, string | undefined>> = process.env,
  exists: (path: string) => boolean = existsSync,
): string {
  const path = env.CALICO_LAB_KUBECTL_BIN || onPath('kubectl', env, exists);
  if (!path) throw new LabError('prerequisite', `missing: ${KUBECTL_HINT}`);
  return path;
}

/**
 * kube-apiserver (`CALICO_LAB_KUBE_APISERVER_BIN`, else what scripts/setup.sh builds), kubectl
 * (`CALICO_LAB_KUBECTL_BIN`, else the machine's on PATH) and openssl (certificates). Throws a
 * `prerequisite` error naming each one missing and where it comes from.
 */
export function kubeTools(
  defaultApiServer: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
  exists: (path: string) => boolean = existsSync,
): KubeTools {
  const kubeApiServer = env.CALICO_LAB_KUBE_APISERVER_BIN || defaultApiServer;
  const kubectl = env.CALICO_LAB_KUBECTL_BIN || onPath('kubectl', env, exists);
  const openssl = onPath('openssl', env, exists);
  const missing: string[] = [];
  if (!exists(kubeApiServer)) missing.push(`kube-apiserver (${kubeApiServer}; ./scripts/setup.sh builds it)`);
  if (!kubectl) missing.push(KUBECTL_HINT);
  if (!openssl) missing.push('openssl (`apt-get install openssl`)');
  if (!exists(CALICO_CRDS)) missing.push(`the CRDs ${CALICO_CRDS} (\`pnpm crds\`)`);
  if (missing.length > 0) {
    throw new LabError('prerequisite', `the lab's Kubernetes API server needs: ${missing.join('; ')}`);
  }
  return { kubeApiServer, kubectl: kubectl!, openssl: openssl! };
}

export function checkArtifacts(
  a: Artifacts = artifacts(),
  exists: (path: string) => boolean = existsSync,
): void {
  const missing = Object.values(a).filter((p) => !exists(p));
  if (missing.length > 0) {
    throw new LabError('prerequisite', `not built yet: ${missing.join(', ')}. Run \`pnpm build\` first`);
  }
}
