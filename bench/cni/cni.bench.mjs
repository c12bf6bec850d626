// CNI ADD and DEL latency: `calico` with `calico-ipam` (the native executables from
// packages/cni-plugin/bin/native, or the node bundles in bin/ when those are not built) against
// `ptp` with `host-local` (Debian's containernetworking-plugins in /usr/lib/cni), in the same run.
// Each side does a single series (ADDs one after another, then DELs one after another) and a burst
// (all ADDs at once, then all DELs at once); p50 and p99 of the wall time around each plugin
// process are reported, with p50 ratios to ptp (aim: within 2×, single and burst). A floor row
// times CNI VERSION (process start-up only) on both sides. Reported, never
// asserted (a busy machine is not a failure).
//
// Everything happens in a "node" network namespace `cbench-<random>`: this script creates it and
// every pod namespace (`cbench-<random>-p<i>`, one per ADD), then runs itself again inside the
// node namespace (`ip netns exec`, the `--inner` half), which starts a private etcd on the node's
// 127.0.0.1, writes the datastore prerequisites (ClusterInformation, IPPool 198.19.0.0/16, Node)
// and spawns the plugins, so the node namespace is their current one. host-local hands out
// 198.18.128.0/17. Every pod is DELeted; every namespace, process and temp dir this made is
// removed at the end, also on failure.
//
//   node bench/cni/cni.bench.mjs [--iterations 30] [--burst 30] [--out file.json]
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { calicoExecutables, measure, report, runOuter } from './driver.mjs';

const { values: args } = parseArgs({
  options: {
    iterations: { type: 'string', default: '30' },
    burst: { type: 'string', default: '30' },
    out: { type: 'string' },
    // Internal: the half that runs inside the node namespace.
    inner: { type: 'boolean', default: false },
    id: { type: 'string' },
    tmp: { type: 'string' },
  },
});
const ITERATIONS = Number(args.iterations);
const BURST = Number(args.burst);
const HERE = dirname(fileURLToPath(import.meta.url));
const OUT = args.out ?? join(HERE, '..', 'results', 'cni.json');

function log(msg) {
  process.stderr.write(`cni bench: ${msg}\n`);
}

// Inner half: etcd, datastore and plugins, inside the node network namespace.
async function inner() {
  const { createDatastore } = await import('@calico-ts/datastore');
  const { clusterSeed, startEtcd } = await import('@calico-ts/datastore/testing');
  const id = args.id;
  const tmp = args.tmp;
  const started = new Date();
  const { dir: calicoDir, variant } = calicoExecutables();
  log(`calico: ${variant}`);

  const etcd = await startEtcd();
  try {
    const ds = await createDatastore({ datastoreType: 'etcdv3', etcdEndpoints: etcd.endpoints });
    try {
      for (const r of clusterSeed()) await ds.create(r);
      await ds.create({
        apiVersion: 'projectcalico.org/v3',
        kind: 'Node',
        metadata: { name: id },
        spec: { bgp: { ipv4Address: '198.18.0.10/24' } },
      });
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
      // No policy.type k8s: with it the plugin reads each pod from a Kubernetes API server, which
      // this etcd-only bench does not run (bench/kdd/cni-kdd.bench.mjs measures that path).
      nodename_file: nodenameFile,
      ipam_lock_file: join(tmp, 'calico-ipam.lock'),
      etcd_endpoints: etcd.clientUrl,
    };
    const result = await measure({ id, tmp, calicoDir, calicoConf, iterations: ITERATIONS, burst: BURST });
    await report({
      out: OUT,
      header: { bench: 'cni', started: started.toISOString() },
      variant,
      iterations: ITERATIONS,
      burst: BURST,
      result,
    });
    log(`wrote ${OUT}`);
  } finally {
    await etcd.stop();
  }
}

if (args.inner) await inner();
else
  await runOuter({
    prefix: 'cbench',
    script: fileURLToPath(import.meta.url),
    iterations: ITERATIONS,
    burst: BURST,
    innerArgs: ['--iterations', String(ITERATIONS), '--burst', String(BURST), '--out', OUT],
    log,
  });
