// The server end to end on loopback: mTLS with a throwaway CA made by openssl in a temp dir, flows
// pushed through FlowCollector.Connect by a gRPC client and read back through List, Stream and
// FilterHints; bad requests get INVALID_ARGUMENT naming the field; /metrics counts what the flow
// budget dropped.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Server as HttpServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Client, type ClientDuplexStream, credentials, type ServiceError, status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Wire } from './codec.js';
import { GoldmaneMetrics } from './metrics.js';
import { loadGoldmaneProto } from './proto.js';
import { GoldmaneServer } from './server.js';

const dir = mkdtempSync(join(tmpdir(), 'goldmane-int-'));

function openssl(...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

function makePki(): void {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  for (const ca of ['ca', 'rogue-ca']) {
    openssl(
      'req',
      '-x509',
      ...ec,
      '-keyout',
      `${ca}.key`,
      '-out',
      `${ca}.crt`,
      '-days',
      '1',
      '-subj',
      `/CN=${ca}`,
    );
  }
  const issue = (name: string, ca: string, ext: string) => {
    writeFileSync(join(dir, `${name}.ext`), ext);
    openssl('req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
    openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      `${ca}.crt`,
      '-CAkey',
      `${ca}.key`,
      '-CAcreateserial',
      '-out',
      `${name}.crt`,
      '-days',
      '1',
      '-extfile',
      `${name}.ext`,
    );
  };
  issue('server', 'ca', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  issue('felix', 'ca', 'extendedKeyUsage=clientAuth\n');
  issue('intruder', 'rogue-ca', 'extendedKeyUsage=clientAuth\n');
}

const pem = (f: string) => readFileSync(join(dir, f));

type Ctor = new (
  address: string,
  creds: ReturnType<typeof credentials.createSsl>,
  options: Record<string, string>,
) => Client & Record<string, (...args: unknown[]) => unknown>;

function client(service: 'Flows' | 'FlowCollector' | 'Statistics', who: 'felix' | 'intruder' | 'none') {
  const { grpc } = loadGoldmaneProto();
  const creds =
    who === 'none'
      ? credentials.createSsl(pem('ca.crt'))
      : credentials.createSsl(pem('ca.crt'), pem(`${who}.key`), pem(`${who}.crt`));
  const Ctor = grpc[service] as unknown as Ctor;
  // The server's certificate names localhost; the address is the loopback IP.
  return new Ctor(`127.0.0.1:${server.port}`, creds, { 'grpc.ssl_target_name_override': 'localhost' });
}

function unary(c: ReturnType<typeof client>, method: string, req: Wire): Promise<Wire> {
  return new Promise((resolve, reject) => {
    c[method]!(req, { deadline: Date.now() + 5000 }, (err: ServiceError | null, res: Wire) =>
      err ? reject(err) : resolve(res),
    );
  });
}

const now = () => Math.floor(Date.now() / 1000);

function update(
  over: { dest?: string; action?: string; port?: number; bytes?: number; ns?: string } = {},
): Wire {
  const action = over.action ?? 'Allow';
  return {
    flow: {
      Key: {
        source_name: 'web-*',
        source_namespace: over.ns ?? 'shop',
        source_type: 'WorkloadEndpoint',
        dest_name: over.dest ?? 'db-*',
        dest_namespace: 'shop',
        dest_type: 'WorkloadEndpoint',
        dest_port: over.port ?? 5432,
        proto: 'tcp',
        reporter: 'Dst',
        action,
        policies: {
          enforced_policies: [
            action === 'Deny'
              ? {
                  kind: 'EndOfTier',
                  tier: 'default',
                  action: 'Deny',
                  policy_index: 0,
                  rule_index: -1,
                  trigger: {
                    kind: 'NetworkPolicy',
                    namespace: 'shop',
                    name: 'default-deny',
                    tier: 'default',
                  },
                }
              : {
                  kind: 'NetworkPolicy',
                  namespace: 'shop',
                  name: 'allow-web',
                  tier: 'default',
                  action: 'Allow',
                },
          ],
        },
      },
      start_time: now(),
      end_time: now() + 1,
      source_labels: ['app=web'],
      dest_labels: ['app=db'],
      packets_in: 3,
      packets_out: 2,
      bytes_in: over.bytes ?? 300,
      bytes_out: 200,
      num_connections_started: 1,
    },
  };
}

/** Pushes updates over one Connect call; resolves with the receipts, or rejects with the call's status. */
function push(updates: readonly Wire[]): Promise<number> {
  const c = client('FlowCollector', 'felix');
  const call = c.Connect!() as ClientDuplexStream<Wire, Wire>;
  return new Promise((resolve, reject) => {
    let receipts = 0;
    call.on('data', () => {
      receipts++;
      if (receipts === updates.length) call.end();
    });
    call.on('error', (e: ServiceError) => {
      c.close();
      reject(e);
    });
    call.on('status', (s: { code: number }) => {
      if (s.code === status.OK) {
        c.close();
        resolve(receipts);
      }
    });
    for (const u of updates) call.write(u);
  });
}

let server: GoldmaneServer;
let metricsHttp: HttpServer;
let metricsUrl: string;

beforeAll(async () => {
  makePki();
  server = new GoldmaneServer({
    host: '127.0.0.1',
    port: 0,
    tls: { ca: pem('ca.crt'), cert: pem('server.crt'), key: pem('server.key') },
    store: { intervalSeconds: 1, historyBuckets: 600, maxFlows: 4 },
  });
  await server.start();
  metricsHttp = await new GoldmaneMetrics(() => server.stats()).serve('127.0.0.1', 0);
  const addr = metricsHttp.address() as { port: number };
  metricsUrl = `http://127.0.0.1:${addr.port}/metrics`;
});

afterAll(async () => {
  await server?.stop();
  await new Promise((r) => (metricsHttp ? metricsHttp.close(r) : r(undefined)));
  rmSync(dir, { recursive: true, force: true });
});

describe('goldmane over gRPC with mTLS', () => {
  it('takes flows from a collector client and lists, streams and hints them', async () => {
    const flows = client('Flows', 'felix');
    // A stream of denied flows, open before anything arrives.
    const stream = flows.Stream!({ filter: { actions: ['Deny'] } }) as NodeJS.ReadableStream & {
      cancel(): void;
    };
    const streamed: Wire[] = [];
    stream.on('data', (r: Wire) => streamed.push(r));
    stream.on('error', () => {});

    expect(
      await push([
        update({ bytes: 100 }),
        update({ bytes: 20 }),
        update({ dest: 'admin-*', action: 'Deny', port: 22 }),
      ]),
    ).toBe(3);

    const all = await unary(flows, 'List', { sort_by: [{ sort_by: 'DestName' }] });
    expect(all.meta).toEqual({ totalPages: 1, totalResults: 2 });
    const list = all.flows as { id: number; flow: Wire & { Key: Wire } }[];
    expect(list.map((r) => [r.flow.Key.dest_name, r.flow.Key.action, r.flow.bytes_in])).toEqual([
      ['admin-*', 'Deny', 300],
      ['db-*', 'Allow', 120],
    ]);
    const denied = list[0]!.flow.Key.policies as { enforced_policies: Wire[] };
    expect(denied.enforced_policies[0]).toMatchObject({
      kind: 'EndOfTier',
      rule_index: -1,
      trigger: { kind: 'NetworkPolicy', name: 'default-deny' },
    });

    const port22 = await unary(flows, 'List', { filter: { dest_ports: [{ port: 22 }] } });
    expect((port22.flows as Wire[]).length).toBe(1);
    const byPolicy = await unary(flows, 'List', { filter: { policies: [{ name: 'allow-web' }] } });
    expect((byPolicy.flows as { flow: { Key: Wire } }[]).map((r) => r.flow.Key.dest_name)).toEqual(['db-*']);

    const hints = await unary(flows, 'FilterHints', { type: 'FilterTypePolicyName' });
    expect(hints.hints).toEqual([{ value: 'allow-web' }, { value: 'default-deny' }]);

    // The stream sends the denied flow once its 1 s bucket has closed.
    const deadline = Date.now() + 5000;
    while (streamed.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    stream.cancel();
    expect(streamed.map((r) => (r.flow as { Key: Wire }).Key.dest_name)).toEqual(['admin-*']);
    expect((streamed[0] as { id: number }).id).toBe(list[0]!.id);

    // A new stream with a start time gets the history first.
    const back = flows.Stream!({ start_time_gte: -60 }) as NodeJS.ReadableStream & { cancel(): void };
    const backfilled: Wire[] = [];
    back.on('error', () => {});
    await new Promise<void>((resolve) => {
      back.on('data', (r: Wire) => {
        backfilled.push(r);
        if (backfilled.length === 2) resolve();
      });
    });
    back.cancel();
    expect(backfilled.map((r) => (r.flow as { Key: Wire }).Key.dest_name).sort()).toEqual([
      'admin-*',
      'db-*',
    ]);
    flows.close();
  });

  it('ends a Connect call at a bad FlowUpdate with INVALID_ARGUMENT naming the field', async () => {
    const err = (await push([update({ port: 70000 })]).catch((e) => e)) as ServiceError;
    expect(err.code).toBe(status.INVALID_ARGUMENT);
    expect(err.details).toMatch(/^flow\.Key\.dest_port: 70000 is not a port/);
    const noKey = (await push([{ flow: { start_time: now(), end_time: now() + 1 } }]).catch(
      (e) => e,
    )) as ServiceError;
    expect(noKey.details).toBe('flow.Key: is required');
  });

  it('refuses a bad List, Stream or FilterHints request, naming the field, and Statistics as unimplemented', async () => {
    const flows = client('Flows', 'felix');
    const e1 = (await unary(flows, 'List', { page_size: -1 }).catch((e) => e)) as ServiceError;
    expect([e1.code, e1.details]).toEqual([status.INVALID_ARGUMENT, 'page_size: -1 is below 0']);
    const e2 = (await unary(flows, 'List', { sort_by: [{}, {}] }).catch((e) => e)) as ServiceError;
    expect(e2.details).toBe('sort_by: at most one sort order is supported');
    const badStream = flows.Stream!({ aggregation_interval: 30 }) as NodeJS.ReadableStream;
    const e5 = await new Promise<ServiceError>((resolve) => badStream.on('error', resolve));
    expect([e5.code, e5.details]).toEqual([
      status.INVALID_ARGUMENT,
      'aggregation_interval: 30 is not the aggregation window (1 s); streams send one window at a time',
    ]);
    const e3 = (await unary(flows, 'FilterHints', {}).catch((e) => e)) as ServiceError;
    expect(e3.code).toBe(status.INVALID_ARGUMENT);
    expect(e3.details).toMatch(/^type: /);
    flows.close();

    const stats = client('Statistics', 'felix');
    const call = stats.List!({}) as NodeJS.ReadableStream;
    const e4 = await new Promise<ServiceError>((resolve) => call.on('error', resolve));
    expect(e4.code).toBe(status.UNIMPLEMENTED);
    stats.close();
  });

  it('refuses clients without a certificate from its CA', async () => {
    for (const who of ['none', 'intruder'] as const) {
      const flows = client('Flows', who);
      const e = (await unary(flows, 'List', {}).catch((x) => x)) as ServiceError;
      expect(e.code).toBe(status.UNAVAILABLE);
      flows.close();
    }
  });

  it('drops the oldest flows over the budget and counts them on /metrics', async () => {
    const before = server.stats();
    // Budget 4 rows; 2 kept so far (same bucket or not, each key × second is one row) plus these.
    await push([
      update({ dest: 'a-*' }),
      update({ dest: 'b-*' }),
      update({ dest: 'c-*' }),
      update({ dest: 'd-*' }),
    ]);
    const after = server.stats();
    expect(after.rows).toBe(4);
    expect(after.dropped - before.dropped).toBe(before.rows + 4 - 4);
    const text = await (await fetch(metricsUrl)).text();
    expect(text).toContain(`goldmane_aggr_dropped_flows_total ${after.dropped}`);
    expect(text).toContain(`goldmane_aggr_received_flows_total ${after.received}`);
    expect(text).toContain('goldmane_aggr_stored_flows 4');
    expect(text).toContain('goldmane_aggr_rejected_flows_total{reason="invalid"} 2');
  });
});
