// CNI ADD and DEL latency on the Kubernetes datastore (issue 15): `calico` with `calico-ipam`
// (the native executables from packages/cni-plugin/bin/native, or the node bundles in bin/ when
// those are not built) with `datastore_type: kubernetes` against a real kube-apiserver, and
// `ptp` with `host-local` (Debian's containernetworking-plugins in /usr/lib/cni) in the same run.
// bench/cni does the same on etcd. Each side does a single series (ADDs one after another, then
// DELs one after another) and a burst (all ADDs at once, then all DELs at once); p50 and p99 of
// the wall time around each plugin process are reported, with ratios to ptp (aim: p50 within 2×).
// Two calico sides: every invocation in its own process (`service_socket: ""`), and the same
// executables handing the work to the plugin service (`calico --serve`), which is how calico-node
// serves ADDs. A floor row times CNI VERSION (process start-up only). Reported, never asserted.
//
// As a kubelet would, the Pod exists before its ADD: every Pod (namespace `bench`, bound to the
// Node) is created first; the ADD writes its CNI annotations, which make it a WorkloadEndpoint.
// Everything happens in a "node" network namespace `ckbench-<random>`: this script creates it and
// every pod namespace, then runs itself again inside it (`ip netns exec`, the `--inner` half),
// which starts kube-apiserver (with its own etcd) on the node's 127.0.0.1, installs the CRDs,
// writes ClusterInformation, the IPPool 198.19.0.0/16, the Node and the Pods, and spawns the
// plugins. host-local hands out 198.18.128.0/17. Every pod is DELeted; every namespace, process
// and temp dir this made is removed at the end, also on failure.
//
//   node bench/kdd/cni-kdd.bench.mjs [--iterations 30] [--burst 30] [--plugin-dir dir] [--out file.json]
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { calicoExecutables, LABELS, measure, podNames, report, runOuter } from '../cni/driver.mjs';

const { values: args } = parseArgs({
  options: {
    iterations: { type: 'string', default: '30' },
    burst: { type: 'string', default: '30' },
    out: { type: 'string' },
    // Another build of the plugins to measure: a directory with calico and calico-ipam in it
    // (e.g. `node packages/cni-plugin/scripts/bundle.mjs /tmp/cni` makes /tmp/cni/native).
    'plugin-dir': { type: 'string' },
    // Internal: the half that runs inside the node namespace.
    inner: { type: 'boolean', default: false },
    id: { type: 'string' },
    tmp: { type: 'string' },
  },
});
const ITERATIONS = Number(args.iterations);
const BURST = Number(args.burst);
const HERE = dirname(fileURLToPath(import.meta.url));
const OUT = args.out ?? join(HERE, '..', 'results', 'kdd-cni.json');

function log(msg) {
  process.stderr.write(`kdd cni bench: ${msg}\n`);
}

// Inner half: kube-apiserver, datastore and plugins, inside the node network namespace.
async function inner() {
  const { createDatastore } = await import('@calico-ts/datastore');
  const { clusterSeed } = await import('@calico-ts/datastore/testing');
  const { apiRequestCounts, kubeRest, requestsPer, startClusterWithCrds } = await import(
    './kube-cluster.mjs'
  );
  const id = args.id;
  const tmp = args.tmp;
  const started = new Date();
  const { dir: calicoDir, variant } = calicoExecutables(args['plugin-dir']);
  log(`calico: ${variant}`);

  const apiServer = await startClusterWithCrds(log);
  try {
    const kubeconfig = apiServer.kubeconfigPath;
    const ds = await createDatastore({ datastoreType: 'kubernetes', etcdEndpoints: [], kubeconfig });
    const rest = kubeRest(apiServer, 16);
    try {
      for (const r of clusterSeed()) await ds.create(r);
      await rest.call('POST', '/api/v1/nodes', {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name: id, labels: { 'kubernetes.io/hostname': id } },
      });
      await rest.call('POST', '/api/v1/namespaces', {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: 'bench' },
      });
      // The Pods of every calico ADD, bound to this node, as the scheduler leaves them for kubelet.
      const pods = podNames(id, ['calico', 'service'], Math.max(ITERATIONS, BURST));
      await Promise.all(
        pods.map((name) =>
          rest.call('POST', '/api/v1/namespaces/bench/pods', {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name, namespace: 'bench', labels: { app: 'bench' } },
            spec: { nodeName: id, containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }] },
          }),
        ),
      );
      log(`${pods.length} pods bound to node ${id}`);
    } finally {
      await ds.close();
    }
    const nodenameFile = join(tmp, 'nodename');
    await writeFile(nodenameFile, id);

    const calicoConf = {
      cniVersion: '1.0.0',
      name: 'k8s-pod-network',
      type: 'calico',
      log_level: 'warning',
      ipam: { type: 'calico-ipam' },
      policy: { type: 'k8s' },
      nodename_file: nodenameFile,
      ipam_lock_file: join(tmp, 'calico-ipam.lock'),
      datastore_type: 'kubernetes',
      kubernetes: { kubeconfig },
    };
    // What each single ADD and DEL asked of the API server (kube-apiserver's request counters).
    const apiRequests = {};
    try {
      const result = await measure({
        id,
        tmp,
        calicoDir,
        calicoConf,
        iterations: ITERATIONS,
        burst: BURST,
        aroundSingle: async (side, n, series) => {
          const c0 = await apiRequestCounts(rest);
          const dels = await series();
          const c1 = await apiRequestCounts(rest);
          await dels();
          apiRequests[side] = {
            ADD: requestsPer(c0, c1, n),
            DEL: requestsPer(c1, await apiRequestCounts(rest), n),
          };
        },
      });
      // The API server's own housekeeping (lease renewals, the kubernetes Service's endpoints)
      // runs on its timers whatever the plugins do.
      const own = (k) => !/^\S+ (leases|endpoints|endpointslices)$/.test(k);
      const fmt = (o) => {
        const e = Object.entries(o).filter(([k]) => own(k));
        const total = e.reduce((n, [, v]) => n + v, 0);
        return `${Number(total.toFixed(2))} (${e.map(([k, v]) => `${k} ${v}`).join(', ')})`;
      };
      await report({
        out: OUT,
        header: { bench: 'kdd-cni', datastore: 'kubernetes', started: started.toISOString() },
        variant,
        iterations: ITERATIONS,
        burst: BURST,
        result,
        extraLines: [
          "\nAPI server requests per single ADD / DEL (kube-apiserver request counters; the series' first ADD claims the node's block):",
          ...Object.entries(apiRequests).map(
            ([side, r]) => `  ${LABELS[side]}: ADD ${fmt(r.ADD)}; DEL ${fmt(r.DEL)}`,
          ),
        ],
        extra: { apiRequests },
      });
      log(`wrote ${OUT}`);
    } finally {
      rest.close();
    }
  } finally {
    await apiServer.stop();
  }
}

if (args.inner) await inner();
else
  await runOuter({
    prefix: 'ckbench',
    script: fileURLToPath(import.meta.url),
    iterations: ITERATIONS,
    burst: BURST,
    innerArgs: [
      '--iterations',
      String(ITERATIONS),
      '--burst',
      String(BURST),
      '--out',
      OUT,
      ...(args['plugin-dir'] ? ['--plugin-dir', args['plugin-dir']] : []),
    ],
    log,
  });
