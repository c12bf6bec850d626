/**
 * The hand-written etcd codec against protobufjs reading etcd's own rpc.proto (the definitions
 * etcd3 ships): what we encode decodes there to the intended request, and replies encoded there
 * decode here to the same fields.
 */
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { authenticateRequest, decodeAuthenticateResponse } from './auth.js';
import {
  decodeDeleteRangeResponse,
  decodePutResponse,
  decodeRangeResponse,
  decodeTxnResponse,
  deleteRangeRequest,
  putRequest,
  rangeRequest,
  txnRequest,
} from './kv.js';
import { decodeLeaseGrantResponse, leaseGrantRequest } from './lease.js';
import { decodeWatchResponse, watchCreateRequest } from './watch.js';
import { ProtoError } from './wire.js';

interface PbType {
  encode(m: unknown): { finish(): Uint8Array };
  decode(b: Uint8Array): unknown;
  fromObject(o: unknown): unknown;
  toObject(m: unknown, o: unknown): Record<string, unknown>;
}

const requireHere = createRequire(import.meta.url);
const etcd3Main = requireHere.resolve('etcd3');
const requireLoader = createRequire(createRequire(etcd3Main).resolve('@grpc/proto-loader'));
const protobuf = requireLoader('protobufjs') as {
  util: { Long: unknown };
  configure(): void;
  Root: new () => {
    resolvePath: (o: string, t: string) => string;
    loadSync(f: string, o: unknown): void;
    lookupType(n: string): PbType;
  };
};
// 64-bit lease IDs must survive the reference codec too.
const long = requireLoader('long') as { default?: unknown };
protobuf.util.Long = long.default ?? long;
protobuf.configure();
const protoDir = resolve(dirname(etcd3Main), '../proto');
const root = new protobuf.Root();
root.resolvePath = (origin, target) => resolve(origin ? dirname(origin) : protoDir, target);
root.loadSync(join(protoDir, 'rpc.proto'), { keepCase: true });
const T = (name: string) => root.lookupType(`etcdserverpb.${name}`);

/** Decode with protobufjs, int64 as strings, bytes as UTF-8 text, defaults shown. */
function theirs(type: string, buf: Buffer): Record<string, unknown> {
  const t = T(type);
  return JSON.parse(
    JSON.stringify(
      t.toObject(t.decode(buf), { longs: String, enums: String, defaults: false, oneofs: false }),
      (_, v) =>
        v && v.type === 'Buffer' && Array.isArray(v.data) ? Buffer.from(v.data).toString('utf8') : v,
    ),
  );
}

function encodeTheirs(type: string, obj: unknown): Buffer {
  const t = T(type);
  return Buffer.from(t.encode(t.fromObject(obj)).finish());
}

const b = (s: string) => Buffer.from(s, 'utf8');

describe('etcd protobuf codec', () => {
  it('encodes requests as etcd reads them', () => {
    expect(
      theirs(
        'RangeRequest',
        rangeRequest({ key: b('/a/ü'), rangeEnd: b('/a0'), revision: 2 ** 40, keysOnly: true }).finish(),
      ),
    ).toEqual({ key: '/a/ü', range_end: '/a0', revision: String(2 ** 40), keys_only: true });
    expect(theirs('RangeRequest', rangeRequest({ key: Buffer.from([0]), countOnly: true }).finish())).toEqual(
      {
        key: '\u0000',
        count_only: true,
      },
    );
    expect(
      theirs(
        'PutRequest',
        putRequest({ key: b('k'), value: b(''), lease: 7587872963553445891n, prevKv: true }).finish(),
      ),
    ).toEqual({ key: 'k', lease: '7587872963553445891', prev_kv: true });
    expect(theirs('DeleteRangeRequest', deleteRangeRequest({ key: b('k'), prevKv: true }).finish())).toEqual({
      key: 'k',
      prev_kv: true,
    });
    const big = 'x'.repeat(70_000);
    expect(
      theirs(
        'TxnRequest',
        txnRequest({
          compare: [
            { key: b('k'), target: 'version', equals: 0 },
            { key: b('k'), target: 'mod', equals: 300 },
          ],
          success: [{ put: { key: b('k'), value: b(big), prevKv: true } }, { deleteRange: { key: b('d') } }],
          failure: [{ range: { key: b('k'), keysOnly: true } }],
        }).finish(),
      ),
    ).toEqual({
      compare: [
        { key: 'k', version: '0' },
        { target: 'Mod', key: 'k', mod_revision: '300' },
      ],
      success: [
        { request_put: { key: 'k', value: big, prev_kv: true } },
        { request_delete_range: { key: 'd' } },
      ],
      failure: [{ request_range: { key: 'k', keys_only: true } }],
    });
    expect(
      theirs(
        'WatchRequest',
        watchCreateRequest({ key: b('/p/'), rangeEnd: b('/p0'), startRevision: 12, prevKv: true }).finish(),
      ),
    ).toEqual({ create_request: { key: '/p/', range_end: '/p0', start_revision: '12', prev_kv: true } });
    expect(theirs('LeaseGrantRequest', leaseGrantRequest(30).finish())).toEqual({ TTL: '30' });
    expect(theirs('AuthenticateRequest', authenticateRequest('root', 'pä$$').finish())).toEqual({
      name: 'root',
      password: 'pä$$',
    });
  });

  it('decodes replies as etcd writes them', () => {
    const header = {
      cluster_id: '18446744073709551615',
      member_id: '3',
      revision: String(2 ** 45),
      raft_term: '2',
    };
    const kv = (k: string, v: string, c: number, m: number) => ({
      key: b(k),
      value: b(v),
      create_revision: c,
      mod_revision: m,
      version: 3,
      lease: '9223372036854775807',
    });
    expect(
      decodeRangeResponse(
        encodeTheirs('RangeResponse', {
          header,
          kvs: [kv('/a/ü', '{"x":1}', 5, 9), kv('/b', '', 6, 6)],
          count: 2,
          more: true,
        }),
      ),
    ).toEqual({
      revision: 2 ** 45,
      kvs: [
        { key: '/a/ü', value: '{"x":1}', createRevision: 5, modRevision: 9 },
        { key: '/b', value: '', createRevision: 6, modRevision: 6 },
      ],
    });
    expect(decodeRangeResponse(encodeTheirs('RangeResponse', {}))).toEqual({ revision: 0, kvs: [] });
    expect(decodePutResponse(encodeTheirs('PutResponse', { header, prev_kv: kv('k', 'v', 1, 2) }))).toEqual({
      revision: 2 ** 45,
      prevKv: { key: 'k', value: 'v', createRevision: 1, modRevision: 2 },
    });
    expect(
      decodeDeleteRangeResponse(
        encodeTheirs('DeleteRangeResponse', { header, deleted: 1, prev_kvs: [kv('k', 'v', 1, 2)] }),
      ),
    ).toEqual({ revision: 2 ** 45, prevKvs: [{ key: 'k', value: 'v', createRevision: 1, modRevision: 2 }] });
    expect(
      decodeTxnResponse(
        encodeTheirs('TxnResponse', {
          header,
          succeeded: true,
          responses: [
            { response_put: { header, prev_kv: kv('k', 'v', 1, 2) } },
            { response_range: { header, kvs: [kv('r', '', 3, 4)] } },
            { response_delete_range: { header, prev_kvs: [] } },
          ],
        }),
      ),
    ).toEqual({
      revision: 2 ** 45,
      succeeded: true,
      responses: [
        { put: { revision: 2 ** 45, prevKv: { key: 'k', value: 'v', createRevision: 1, modRevision: 2 } } },
        { range: { revision: 2 ** 45, kvs: [{ key: 'r', value: '', createRevision: 3, modRevision: 4 }] } },
        { deleteRange: { revision: 2 ** 45, prevKvs: [] } },
      ],
    });
    expect(decodeTxnResponse(encodeTheirs('TxnResponse', { header })).succeeded).toBe(false);
    expect(
      decodeWatchResponse(
        encodeTheirs('WatchResponse', {
          header,
          watch_id: 4,
          created: true,
          events: [
            { type: 0, kv: kv('a', '1', 7, 7) },
            { type: 1, kv: { key: b('a'), mod_revision: 8 }, prev_kv: kv('a', '1', 7, 7) },
          ],
        }),
      ),
    ).toEqual({
      revision: 2 ** 45,
      watchId: 4,
      created: true,
      canceled: false,
      compactRevision: 0,
      cancelReason: '',
      events: [
        { type: 'put', kv: { key: 'a', value: '1', createRevision: 7, modRevision: 7 } },
        {
          type: 'delete',
          kv: { key: 'a', value: '', createRevision: 0, modRevision: 8 },
          prevKv: { key: 'a', value: '1', createRevision: 7, modRevision: 7 },
        },
      ],
    });
    expect(
      decodeWatchResponse(
        encodeTheirs('WatchResponse', {
          header,
          canceled: true,
          compact_revision: 17,
          cancel_reason: 'gone',
        }),
      ),
    ).toMatchObject({ canceled: true, compactRevision: 17, cancelReason: 'gone' });
    expect(
      decodeLeaseGrantResponse(
        encodeTheirs('LeaseGrantResponse', { header, ID: '7587872963553445891', TTL: 30 }),
      ),
    ).toEqual({ id: 7587872963553445891n, ttl: 30, error: '' });
    expect(
      decodeAuthenticateResponse(encodeTheirs('AuthenticateResponse', { header, token: 'tok.en' })),
    ).toEqual({
      token: 'tok.en',
    });
  });

  it('decodes a range reply from the chunks it arrived in, wherever they were cut', () => {
    const reply = encodeTheirs('RangeResponse', {
      header: { revision: '300' },
      kvs: [
        { key: b('/a/ü'), value: b('{"x":"é"}'), create_revision: 200, mod_revision: 290, lease: '7' },
        { key: b('/b'), value: b(''), create_revision: 201, mod_revision: 201 },
        { key: b('/c'), value: b('x'.repeat(300)), create_revision: 1, mod_revision: 2 },
      ],
      count: 3,
    });
    const expected = decodeRangeResponse(reply);
    expect(expected.kvs.map((kv) => kv.key)).toEqual(['/a/ü', '/b', '/c']);
    for (let cut = 0; cut <= reply.length; cut++) {
      expect(decodeRangeResponse([reply.subarray(0, cut), reply.subarray(cut)])).toEqual(expected);
    }
    const bytes = [...reply].map((x) => Buffer.from([x]));
    expect(decodeRangeResponse(bytes)).toEqual(expected);
    expect(decodeRangeResponse([])).toEqual({ revision: 0, kvs: [] });
    // Cut short anywhere inside a field, the chunks are refused as the joined buffer is.
    for (const end of [1, 3, reply.length - 1]) {
      const parts = [reply.subarray(0, 2), reply.subarray(2, end)];
      expect(() => decodeRangeResponse(parts)).toThrow(ProtoError);
    }
  });

  it('rejects a truncated reply instead of inventing fields', () => {
    const full = encodeTheirs('RangeResponse', { kvs: [{ key: b('/a'), value: b('abcdef') }] });
    expect(() => decodeRangeResponse(full.subarray(0, full.length - 2))).toThrow(ProtoError);
    expect(() => decodeRangeResponse(Buffer.from([0x10, 0xff]))).toThrow(/truncated varint/);
  });
});
