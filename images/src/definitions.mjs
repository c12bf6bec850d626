// What goes into each image (data only). Every image starts from calico-ts/base: a Debian
// bookworm minbase root filesystem with BIRD 2, nftables and iproute2, and one Node.js runtime
// that all programs of every image share (the layer is stored once on a node). Each image adds
// its programs as bundles run by that runtime, except what is installed onto the host: the CNI
// plugins run by the container runtime outside any image, so they are self-contained executables.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
const LIB = '/usr/lib/calico-ts';

/** The version every image is tagged with: the workspace's (all packages move together). */
export const VERSION = 'v0.1.0';
export const REPOSITORY = 'calico-ts';

export const BASE = {
  name: 'base',
  /** Debian packages beside minbase: BIRD for calico-node, libnftables for Felix, ip for both. */
  packages: ['bird2', 'nftables', 'libnftables1', 'iproute2'],
  suite: 'bookworm',
  mirror: 'http://deb.debian.org/debian',
};

/** The reference plugins upstream's cni image ships beside calico (portmap is in its conflist). */
const REFERENCE_PLUGINS = ['portmap', 'bandwidth', 'host-local', 'loopback', 'tuning'];

/**
 * Each image: `files` copied (`from` relative to the repository unless absolute, `to` in the
 * image; directories copied whole, symlinks followed), `links` made (`path` → `target`),
 * `bundle` programs made with esbuild from an app's sources, `dirs` created, and the config.
 */
export const IMAGES = {
  node: {
    description: 'calico-node: start-up, Felix and BIRD in one process',
    needs: ['apps/calico-node/bin/calico-node'],
    files: [
      { from: 'apps/calico-node/bin/calico-node', to: `${LIB}/calico-node.mjs` },
      // Felix programs nftables through libnftables with koffi, the one native module.
      { from: 'node_modules/.pnpm/koffi@3.3.4/node_modules/koffi', to: `${LIB}/node_modules/koffi` },
      {
        from: 'node_modules/.pnpm/@koromix+koffi-linux-x64@3.3.4/node_modules/@koromix/koffi-linux-x64',
        to: `${LIB}/node_modules/@koromix/koffi-linux-x64`,
      },
    ],
    links: [{ path: '/usr/bin/calico-node', target: `${LIB}/calico-node.mjs` }],
    dirs: ['/var/run/calico', '/var/lib/calico', '/var/log/calico', '/etc/calico/confd/config'],
    entrypoint: ['/usr/bin/calico-node'],
  },
  cni: {
    description: 'install-cni and the calico, calico-ipam and reference CNI plugins',
    needs: ['packages/cni-plugin/bin/native/calico', 'apps/cni/dist/main.js'],
    files: [
      // Self-contained: it runs on the host, which may have no Node.js.
      { from: 'packages/cni-plugin/bin/native/calico', to: '/opt/cni/bin/calico' },
      ...REFERENCE_PLUGINS.map((p) => ({ from: `/usr/lib/cni/${p}`, to: `/opt/cni/bin/${p}` })),
      { from: 'apps/cni/dist', to: `${LIB}/install-cni/dist` },
      { from: 'apps/cni/bin/install', to: `${LIB}/install-cni/bin/install` },
      { from: 'apps/cni/package.json', to: `${LIB}/install-cni/package.json` },
    ],
    links: [
      { path: '/opt/cni/bin/calico-ipam', target: 'calico' },
      { path: '/opt/cni/bin/install', target: `${LIB}/install-cni/bin/install` },
    ],
    // No /host/... directories: without the DaemonSet's mounts install-cni must fail, not fill the image.
    dirs: [],
    entrypoint: ['/opt/cni/bin/install'],
  },
  'kube-controllers': {
    description: 'calico-kube-controllers, with check-status for its probes',
    needs: ['apps/kube-controllers/dist/main.js'],
    bundle: [{ app: 'apps/kube-controllers', to: `${LIB}/kube-controllers.mjs`, etcd3: true }],
    links: [
      { path: '/usr/bin/kube-controllers', target: `${LIB}/kube-controllers.mjs` },
      // Upstream's probes run `check-status -r` / `-l`; the program answers those flags itself.
      { path: '/usr/bin/check-status', target: `${LIB}/kube-controllers.mjs` },
    ],
    dirs: ['/status'],
    entrypoint: ['/usr/bin/kube-controllers'],
  },
  typha: {
    description: 'calico-typha: one datastore syncer fanned out to every calico-node',
    needs: ['apps/typha/dist/main.js'],
    // Typha's main takes the environment only.
    bundle: [{ app: 'apps/typha', to: `${LIB}/calico-typha.mjs`, etcd3: true, call: 'env' }],
    links: [{ path: '/usr/bin/calico-typha', target: `${LIB}/calico-typha.mjs` }],
    dirs: [],
    entrypoint: ['/usr/bin/calico-typha'],
  },
  operator: {
    description: 'tigera-operator: installs Calico from the operator.tigera.io Installation',
    needs: ['apps/operator/dist/main.js', 'deploy/manifests/calico.yaml'],
    bundle: [{ app: 'apps/operator', to: `${LIB}/operator.mjs` }],
    // What the operator's render starts from: the manifest install's objects.
    files: [{ from: 'deploy/manifests/calico.yaml', to: '/usr/share/calico-ts/calico.yaml' }],
    links: [{ path: '/usr/bin/operator', target: `${LIB}/operator.mjs` }],
    dirs: [],
    entrypoint: ['/usr/bin/operator'],
  },
  apiserver: {
    description: 'calico-apiserver: projectcalico.org/v3 through the Kubernetes aggregation layer',
    needs: ['apps/apiserver/dist/main.js'],
    // etcd3 for DATASTORE_TYPE=etcdv3.
    bundle: [{ app: 'apps/apiserver', to: `${LIB}/calico-apiserver.mjs`, etcd3: true }],
    // Upstream's image runs `apiserver` (/code/apiserver); both names work here.
    links: [
      { path: '/usr/bin/calico-apiserver', target: `${LIB}/calico-apiserver.mjs` },
      { path: '/usr/bin/apiserver', target: `${LIB}/calico-apiserver.mjs` },
      { path: '/code/apiserver', target: `${LIB}/calico-apiserver.mjs` },
    ],
    dirs: [],
    entrypoint: ['/usr/bin/calico-apiserver'],
  },
  ctl: {
    description: 'calicoctl',
    needs: ['packages/ctl/bin/calicoctl'],
    files: [{ from: 'packages/ctl/bin/calicoctl', to: `${LIB}/calicoctl.mjs` }],
    links: [
      { path: '/calicoctl', target: `${LIB}/calicoctl.mjs` },
      { path: '/usr/bin/calicoctl', target: `${LIB}/calicoctl.mjs` },
    ],
    dirs: [],
    entrypoint: ['/calicoctl'],
  },
};

/**
 * The images a lab cluster's own workloads run, from scratch with Debian's static busybox (no
 * registry is reachable, so no image can be pulled): `pause`, the pod sandbox every pod starts
 * with (containerd's `sandbox_image`), and `httpd`, a small web server with the usual tools
 * (`sh`, `ping`, `nc`, `iperf3`, `ab`) for Deployments and the benchmarks' shapes. `cmd` is each
 * image's command; busybox answers to the applet names linked in `applets`.
 */
export const WORKLOAD_IMAGES = {
  pause: {
    description: 'the pod sandbox: waits until it is stopped',
    applets: ['sh', 'sleep'],
    // PID 1 of a sandbox only waits; TERM and INT end it at once (no init to forward them).
    cmd: ['/bin/sh', '-c', 'trap "exit 0" TERM INT; while :; do sleep 3600 & wait $!; done'],
  },
  httpd: {
    // No wget: Debian's static busybox 1.35 wget dies of a segmentation fault on any URL.
    description: 'busybox httpd serving /www on port 80, with sh, ping, nc, iperf3 and ab',
    applets: [
      ...['sh', 'ls', 'cat', 'echo', 'sleep', 'ping', 'nc', 'ip', 'hostname', 'httpd', 'env', 'ps'],
      ...['touch', 'grep', 'head', 'tail', 'wc', 'seq', 'mkdir', 'rm', 'kill', 'true', 'false', 'date'],
    ],
    cmd: ['/bin/httpd', '-f', '-v', '-p', '80', '-h', '/www'],
    // The benchmarks' shapes (iperf3 between pods, ab against a Service): the machine's programs
    // (Debian iperf3, apache2-utils), copied with the shared libraries ldd names for them.
    programs: ['/usr/bin/iperf3', '/usr/bin/ab'],
    // The page answers with the pod's name, so a request says who answered. The shell stays PID 1
    // and ends the command on TERM: busybox programs as PID 1 ignore it, and each pod deletion
    // would wait out its grace period.
    entry: [
      '/bin/sh',
      '-c',
      'hostname > /www/index.html; "$@" & c=$!; trap "kill $c; exit 0" TERM INT; wait $c',
      'httpd',
    ],
  },
};

export const imageRef = (name) => `${REPOSITORY}/${name}:${VERSION}`;
/** Where `pnpm images` leaves each image as an OCI archive. */
export const archivePath = (name) => join(ROOT, 'images/out', `${name}.oci.tar`);
