// Per-call cost of the write path's pure steps, without etcd: `validateResource` (api) on
// representative objects, the encoding of what it returns to the stored JSON (`encodeResource`,
// datastore), and the decoding of those bytes on read (`decodeResource`). Reports µs per call as
// the median of several timed batches (the machine is shared; the median is the figure to quote),
// beside the fastest batch. Never asserts. Usage:
//   node bench/api/validate.bench.mjs [--batches 15] [--iters 4000] [--out file.json]
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { validateResource } from '@calico-ts/api';
import { decodeResource, encodeResource } from '@calico-ts/datastore/internal';

const { values: args } = parseArgs({
  options: {
    batches: { type: 'string', default: '15' },
    iters: { type: 'string', default: '4000' },
    out: { type: 'string' },
  },
});
const BATCHES = Number(args.batches);
const ITERS = Number(args.iters);
const HERE = dirname(fileURLToPath(import.meta.url));
const OUT = args.out ?? join(HERE, '..', 'results', 'validate.json');

const meta = (name, extra = {}) => ({ name, labels: { app: 'bench' }, ...extra });
const SAMPLES = {
  // The datastore bench's IPPool: every field given.
  IPPool: {
    apiVersion: 'projectcalico.org/v3',
    kind: 'IPPool',
    metadata: meta('pool-1'),
    spec: {
      cidr: '198.19.1.0/26',
      vxlanMode: 'Never',
      ipipMode: 'Always',
      natOutgoing: true,
      disabled: false,
      disableBGPExport: false,
      blockSize: 26,
      nodeSelector: 'all()',
      allowedUses: ['Workload', 'Tunnel'],
      assignmentMode: 'Automatic',
    },
  },
  GlobalNetworkPolicy: {
    apiVersion: 'projectcalico.org/v3',
    kind: 'GlobalNetworkPolicy',
    metadata: meta('allow-dns'),
    spec: {
      order: 100,
      selector: "role == 'web' && has(zone)",
      ingress: [
        {
          action: 'Allow',
          protocol: 'TCP',
          source: { selector: "app == 'lb'" },
          destination: { ports: [80, '8080:8090'] },
        },
        { action: 'Deny', protocol: 'ICMP', icmp: { type: 8 } },
      ],
      egress: [{ action: 'Allow', protocol: 'UDP', destination: { nets: ['198.18.0.0/24'], ports: [53] } }],
    },
  },
  WorkloadEndpoint: {
    apiVersion: 'projectcalico.org/v3',
    kind: 'WorkloadEndpoint',
    metadata: meta('node1-k8s-web--0-eth0', { namespace: 'prod' }),
    spec: {
      orchestrator: 'k8s',
      node: 'node1',
      containerID: 'a1b2c3d4e5f6',
      pod: 'web-0',
      endpoint: 'eth0',
      serviceAccountName: 'default',
      ipNetworks: ['198.19.1.5/32'],
      profiles: ['kns.prod', 'ksa.prod.default'],
      interfaceName: 'cali0123456789a',
      ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
    },
  },
};

const PLURAL = {
  IPPool: 'ippools',
  GlobalNetworkPolicy: 'globalnetworkpolicies',
  WorkloadEndpoint: 'workloadendpoints',
};

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** µs per call of `fn`, as [median batch, fastest batch]. */
function measure(fn) {
  for (let i = 0; i < ITERS; i++) fn(i); // warm-up: let the JIT settle
  const perCall = [];
  for (let b = 0; b < BATCHES; b++) {
    const t0 = performance.now();
    for (let i = 0; i < ITERS; i++) fn(i);
    perCall.push(((performance.now() - t0) * 1000) / ITERS);
  }
  return [Number(median(perCall).toFixed(2)), Number(Math.min(...perCall).toFixed(2))];
}

const rows = [];
for (const [kind, sample] of Object.entries(SAMPLES)) {
  const r = validateResource(sample);
  if (!r.ok) throw new Error(`${kind} sample is invalid: ${JSON.stringify(r.errors)}`);
  const stamped = {
    ...r.value,
    metadata: {
      ...r.value.metadata,
      uid: '2b6c4a3e-1f0d-4c1e-9a53-4b6f7f0c8e11',
      creationTimestamp: '2026-01-02T03:04:05Z',
    },
  };
  const text = encodeResource(stamped);
  const ns = sample.metadata.namespace;
  const key = `/calico/resources/v3/projectcalico.org/${PLURAL[kind]}/${ns ? `${ns}/` : ''}${sample.metadata.name}`;
  const kv = { key, value: text, modRevision: '7', createRevision: '7' };
  const parts = { kind, name: sample.metadata.name, ...(ns ? { namespace: ns } : {}) };
  let sink = 0;
  const [validateUs, validateBest] = measure(() => {
    sink += validateResource(sample).ok ? 1 : 0;
  });
  const [encodeUs, encodeBest] = measure(() => {
    sink += encodeResource(stamped).length;
  });
  const [decodeUs, decodeBest] = measure(() => {
    sink += decodeResource(kv, parts).metadata.name.length;
  });
  if (sink === 0) throw new Error('unreachable');
  rows.push({
    kind,
    validateUs,
    validateBest,
    encodeUs,
    encodeBest,
    decodeUs,
    decodeBest,
    valueBytes: text.length,
  });
  console.error(
    `  ${kind}: validate ${validateUs} µs, encode ${encodeUs} µs, decode ${decodeUs} µs (medians)`,
  );
}

const result = {
  bench: 'validate',
  description: 'validateResource, encodeResource and decodeResource per call, no I/O',
  date: new Date().toISOString(),
  node: process.version,
  cpus: cpus().length,
  cpuModel: cpus()[0]?.model,
  loadAverage: loadavg(),
  batches: BATCHES,
  iters: ITERS,
  rows,
};
await mkdir(dirname(OUT), { recursive: true });
await writeFile(OUT, `${JSON.stringify(result, null, 2)}\n`);

console.log(`## api write path: µs per call, median of ${BATCHES} batches of ${ITERS} (fastest batch)\n`);
console.log('| kind | validateResource | encodeResource | decodeResource | stored bytes |');
console.log('| --- | ---: | ---: | ---: | ---: |');
for (const r of rows) {
  console.log(
    `| ${r.kind} | ${r.validateUs} (${r.validateBest}) | ${r.encodeUs} (${r.encodeBest}) | ${r.decodeUs} (${r.decodeBest}) | ${r.valueBytes} |`,
  );
}
console.log(`\nJSON: ${OUT}`);
