// What the Kubernetes-datastore benches share: a real kube-apiserver (startKubeApiServer: its own
// etcd, free ports, certificates made now) with Calico's CRDs from deploy/crds installed, a small
// keep-alive HTTPS client for writing Kubernetes objects (namespaces, Nodes, Pods, Kubernetes
// NetworkPolicies) the way a cluster's own controllers would, and a worker pool.
import { execFile } from 'node:child_process';
import { Agent, request } from 'node:https';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { findKubectl, parseApiRequestCounts, startKubeApiServer } from '@calico-ts/datastore/testing';

const HERE = dirname(fileURLToPath(import.meta.url));
export const REPO = join(HERE, '..', '..');
export const CRDS = join(REPO, 'deploy', 'crds', 'calico-crds.yaml');

export function median(xs) {
  const s = xs.filter((x) => x !== null && x !== undefined && !Number.isNaN(x)).sort((a, b) => a - b);
  if (s.length === 0) return null;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export function round(x, digits) {
  return x === null || x === undefined ? null : Number(x.toFixed(digits));
}

/** Run `count` operations with `conc` in flight; returns elapsed ms. */
export async function runPool(count, conc, op) {
  let next = 0;
  const t0 = performance.now();
  const worker = async () => {
    while (next < count) await op(next++);
  };
  await Promise.all(Array.from({ length: Math.min(conc, count) }, worker));
  return performance.now() - t0;
}

export async function kubectl(kubeconfig, argv) {
  const bin = findKubectl();
  if (!bin) throw new Error('kubectl not found (set CALICO_TEST_KUBECTL_BIN or put kubectl on PATH)');
  const { stdout } = await promisify(execFile)(bin, ['--kubeconfig', kubeconfig, ...argv], {
    maxBuffer: 1 << 26,
  });
  return stdout;
}

/**
 * A kube-apiserver with the CRDs established. The caller stops it (`apiServer.stop()`), also on
 * failure; a server that started but whose CRDs failed is stopped here.
 */
export async function startClusterWithCrds(log, options = {}) {
  const t0 = performance.now();
  const apiServer = await startKubeApiServer(options);
  try {
    await kubectl(apiServer.kubeconfigPath, ['apply', '--server-side', '-f', CRDS]);
    await kubectl(apiServer.kubeconfigPath, [
      'wait',
      '--for',
      'condition=established',
      '--timeout',
      '60s',
      'crd',
      '--all',
    ]);
  } catch (e) {
    await apiServer.stop();
    throw e;
  }
  log(
    `kube-apiserver ${apiServer.url} ready with the CRDs in ${((performance.now() - t0) / 1000).toFixed(1)}s`,
  );
  return apiServer;
}

/**
 * Plain JSON requests to the API server over one keep-alive agent with the admin client
 * certificate; a reply that is not JSON (`/metrics`) resolves as its text. Throws on a status
 * ≥ 300 (with the server's message).
 */
export function kubeRest(apiServer, maxSockets = 32) {
  const url = new URL(apiServer.url);
  const agent = new Agent({
    keepAlive: true,
    maxSockets,
    ca: apiServer.caPem,
    cert: apiServer.clientCertPem,
    key: apiServer.clientKeyPem,
  });
  const call = (method, path, body) =>
    new Promise((resolve, reject) => {
      const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          method,
          path,
          agent,
          headers: {
            accept: 'application/json',
            ...(data ? { 'content-type': 'application/json', 'content-length': data.length } : {}),
          },
        },
        (res) => {
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            if ((res.statusCode ?? 500) >= 300) {
              reject(new Error(`${method} ${path}: ${res.statusCode}: ${text.slice(0, 300)}`));
              return;
            }
            const json = /json/.test(String(res.headers['content-type'] ?? ''));
            resolve(text && json ? JSON.parse(text) : text || undefined);
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(data);
    });
  return { call, close: () => agent.destroy() };
}

/**
 * The API server's request counters (`apiserver_request_total`) summed by verb and resource:
 * `{ 'GET pods': 12, 'PUT ipamblocks': 3, … }` (parsed as the tests that assert request counts
 * parse them). Two readings apart say what a client asked for.
 */
export async function apiRequestCounts(rest) {
  return parseApiRequestCounts(await rest.call('GET', '/metrics'));
}

/** Requests per operation between two `apiRequestCounts` readings, largest first. */
export function requestsPer(before, after, ops) {
  const per = {};
  for (const [k, v] of Object.entries(after)) {
    const d = v - (before[k] ?? 0);
    if (d > 0) per[k] = Number((d / ops).toFixed(2));
  }
  return Object.fromEntries(Object.entries(per).sort((a, b) => b[1] - a[1]));
}
