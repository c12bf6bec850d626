// Goldmane's memory and intake: the heap the flow store holds for 10,000 active flows (one window,
// then ten windows each: the default budget of 100,000 rows), beside the JSON size of the same
// flows as a reference, and the rate at which a gRPC client's FlowUpdates are taken in over
// Connect on loopback (plaintext here: the bench measures the store and the codec, not TLS).
// Never asserts. Usage:
//   node bench/goldmane/memory.bench.mjs [--flows 10000] [--out file.json]
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { decodeFlowUpdate, FlowStore, GoldmaneServer, loadGoldmaneProto } from '@calico-ts/goldmane';
import { credentials } from '@grpc/grpc-js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc');

const { values: args } = parseArgs({
  options: { flows: { type: 'string', default: '10000' }, out: { type: 'string' } },
});
const N = Number(args.flows);
const HERE = dirname(fileURLToPath(import.meta.url));
const OUT = args.out ?? join(HERE, '..', 'results', 'goldmane-memory.json');
const WINDOW = 15;
const NOW = Math.floor(Date.now() / 1000);

/** A FlowUpdate as Felix sends one: 100 sources × N/100 destinations, a two-hit policy trace. */
function update(i, start) {
  const src = i % 100;
  const dst = Math.floor(i / 100);
  return {
    flow: {
      Key: {
        source_name: `client-${src}-*`,
        source_namespace: `team-${src % 10}`,
        source_type: 'WorkloadEndpoint',
        dest_name: `server-${dst}-*`,
        dest_namespace: `team-${dst % 10}`,
        dest_type: 'WorkloadEndpoint',
        dest_port: 8000 + (dst % 100),
        proto: 'tcp',
        reporter: 'Dst',
        action: i % 7 === 0 ? 'Deny' : 'Allow',
        policies: {
          enforced_policies: [
            {
              kind: 'CalicoNetworkPolicy',
              namespace: `team-${dst % 10}`,
              name: `allow-clients-${dst % 50}`,
              tier: 'application',
              action: i % 7 === 0 ? 'Pass' : 'Allow',
              policy_index: 0,
              rule_index: 1,
            },
            ...(i % 7 === 0
              ? [
                  {
                    kind: 'EndOfTier',
                    tier: 'default',
                    action: 'Deny',
                    policy_index: 1,
                    rule_index: -1,
                    trigger: {
                      kind: 'NetworkPolicy',
                      namespace: `team-${dst % 10}`,
                      name: 'default-deny',
                      tier: 'default',
                    },
                  },
                ]
              : []),
          ],
          pending_policies: [],
        },
      },
      start_time: start,
      end_time: start + WINDOW,
      source_labels: ['app=client', `team=team-${src % 10}`, 'pod-template-hash=5d8f7c'],
      dest_labels: ['app=server', `team=team-${dst % 10}`],
      packets_in: 120,
      packets_out: 80,
      bytes_in: 64000,
      bytes_out: 12000,
      num_connections_started: 3,
      num_connections_completed: 2,
      num_connections_live: 1,
    },
  };
}

function heap() {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

function storeRow(windows) {
  const jsonBytes = JSON.stringify(update(0, NOW)).length;
  const before = heap();
  const store = new FlowStore({ intervalSeconds: WINDOW, historyBuckets: 240, maxFlows: N * windows });
  // Each flow is decoded from its wire form as the server does; the store keeps the key of the
  // first flow of each key and a row per window, the rest is garbage by the time the heap is read.
  const t0 = performance.now();
  for (let w = 0; w < windows; w++) {
    const start = NOW - (windows - w) * WINDOW;
    for (let i = 0; i < N; i++) store.ingest(decodeFlowUpdate(update(i, start)), NOW);
  }
  const ms = performance.now() - t0;
  const held = heap() - before;
  const st = store.stats();
  return {
    windows,
    rows: st.rows,
    uniqueFlows: st.uniqueFlows,
    heapMiB: held / 2 ** 20,
    bytesPerRow: held / st.rows,
    jsonBytesPerRow: jsonBytes,
    ingestPerSec: st.rows / (ms / 1000),
    keep: store,
  };
}

async function grpcIntake() {
  const server = new GoldmaneServer({
    host: '127.0.0.1',
    port: 0,
    plaintext: true,
    store: { maxFlows: 2 * N },
  });
  await server.start();
  const { grpc } = loadGoldmaneProto();
  const client = new grpc.FlowCollector(`127.0.0.1:${server.port}`, credentials.createInsecure());
  const call = client.Connect();
  const t0 = performance.now();
  await new Promise((resolve, reject) => {
    let receipts = 0;
    call.on('data', () => {
      if (++receipts === N) resolve();
    });
    call.on('error', reject);
    for (let i = 0; i < N; i++) call.write(update(i, NOW));
  });
  const ms = performance.now() - t0;
  const flows = new grpc.Flows(`127.0.0.1:${server.port}`, credentials.createInsecure());
  const t1 = performance.now();
  const listed = await new Promise((resolve, reject) =>
    flows.List({ page_size: 100, filter: { actions: ['Deny'] } }, (e, r) => (e ? reject(e) : resolve(r))),
  );
  const listMs = performance.now() - t1;
  call.end();
  client.close();
  flows.close();
  await server.stop();
  return { updatesPerSec: N / (ms / 1000), listMs, listTotal: listed.meta.totalResults };
}

let one = storeRow(1);
const oneRow = { ...one, keep: undefined };
one = undefined;
const ten = storeRow(10);
const rpc = await grpcIntake();
void ten.keep;

const rows = [oneRow, ten].map(({ keep, ...r }) => r);
const result = {
  when: new Date().toISOString(),
  machine: { cpus: cpus().length, load1: loadavg()[0], node: process.version },
  flows: N,
  store: rows,
  grpc: rpc,
};
await mkdir(dirname(OUT), { recursive: true });
await writeFile(OUT, `${JSON.stringify(result, null, 2)}\n`);

const f = (n, d = 1) => n.toFixed(d);
console.log(`goldmane flow store, ${N} active flows (load ${f(loadavg()[0], 2)})\n`);
console.log(
  '| windows | rows | heap MiB | bytes/row | JSON bytes/row (ref) | heap ÷ JSON | decode + ingest rows/s |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- |');
for (const r of rows) {
  console.log(
    `| ${r.windows} | ${r.rows} | ${f(r.heapMiB)} | ${f(r.bytesPerRow, 0)} | ${f(r.jsonBytesPerRow, 0)} | ${f(r.bytesPerRow / r.jsonBytesPerRow, 2)} | ${f(r.ingestPerSec, 0)} |`,
  );
}
console.log(
  `\ngRPC Connect on loopback: ${f(rpc.updatesPerSec, 0)} FlowUpdates/s (each answered); List of the denied (${rpc.listTotal}) out of ${N}, page of 100: ${f(rpc.listMs)} ms`,
);
console.log(`\nwritten: ${OUT}`);
