/**
 * What clients asked of a kube-apiserver, from its own request counters (`apiserver_request_total`
 * on `/metrics`), summed by verb and resource: `{ 'GET pods': 12, 'PUT ipamblocks': 3, … }`. Two
 * readings apart, diffed (`requestsBetween`), say what happened in between: the tests that assert
 * a CNI ADD's requests and the bench/kdd rows that print them read the counters this way.
 * Requests without a resource (`/metrics`, `/readyz`, discovery) are left out; a subresource is
 * named after its resource (`PATCH pods/status`).
 */
import { request } from 'node:https';
import type { KubeApiServer } from './kube-apiserver.js';

/** Requests by `"<VERB> <resource>[/<subresource>]"`. */
export type ApiRequestCounts = Record<string, number>;

/** The `apiserver_request_total` lines of a `/metrics` text, summed by verb and resource. */
export function parseApiRequestCounts(metrics: string): ApiRequestCounts {
  const out: ApiRequestCounts = {};
  for (const line of metrics.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const verb = /[{,]verb="([^"]*)"/.exec(line)?.[1];
    const resource = /[{,]resource="([^"]*)"/.exec(line)?.[1];
    const sub = /[{,]subresource="([^"]*)"/.exec(line)?.[1];
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (!verb || !resource || !Number.isFinite(value)) continue;
    const k = `${verb} ${resource}${sub ? `/${sub}` : ''}`;
    out[k] = (out[k] ?? 0) + value;
  }
  return out;
}

/** Reads the server's `/metrics` with its admin client certificate and parses the request counters. */
export function readApiRequestCounts(
  server: Pick<KubeApiServer, 'url' | 'caPem' | 'clientCertPem' | 'clientKeyPem'>,
): Promise<ApiRequestCounts> {
  const url = new URL('/metrics', server.url);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { ca: server.caPem, cert: server.clientCertPem, key: server.clientKeyPem, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode !== 200)
            reject(new Error(`GET ${url}: ${res.statusCode}: ${text.slice(0, 300)}`));
          else resolve(parseApiRequestCounts(text));
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/**
 * What changed between two readings, per operation when `ops` is given (rounded to `digits`),
 * keys in order; only counts that grew. `only`, when given, keeps the keys it accepts (e.g. the
 * resources a test's client touches, without the server's own lease renewals).
 */
export function requestsBetween(
  before: ApiRequestCounts,
  after: ApiRequestCounts,
  options: { ops?: number; digits?: number; only?: (key: string) => boolean } = {},
): ApiRequestCounts {
  const ops = options.ops ?? 1;
  const scale = 10 ** (options.digits ?? 2);
  const out: ApiRequestCounts = {};
  for (const k of Object.keys(after).sort()) {
    const d = (after[k] ?? 0) - (before[k] ?? 0);
    if (d > 0 && (options.only?.(k) ?? true)) out[k] = Math.round((d / ops) * scale) / scale;
  }
  return out;
}
