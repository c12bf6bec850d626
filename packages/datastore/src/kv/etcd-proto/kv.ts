/**
 * The KV service's messages (etcdserverpb rpc.proto): Range, Put, DeleteRange and Txn requests
 * as `ProtoWriter`s, their replies decoded. A range reply of thousands of key-values is read from
 * the chunks it arrived in without joining them. Pure calculation, no I/O.
 */
import { header, keyValue, type WireKV } from './key-value.js';
import { ChunkedReader, type FieldReader, type ProtoReader, whole } from './reader.js';
import { LEN, type ProtoMessage, tagOf, VARINT } from './wire.js';
import { ProtoWriter } from './writer.js';

export interface RangeRequest {
  key: Buffer;
  rangeEnd?: Buffer;
  revision?: number;
  keysOnly?: boolean;
  countOnly?: boolean;
}

export function rangeRequest(r: RangeRequest): ProtoWriter {
  return new ProtoWriter()
    .bytes(1, r.key)
    .bytes(2, r.rangeEnd)
    .optionalUint(4, r.revision)
    .bool(8, r.keysOnly)
    .bool(9, r.countOnly);
}

export interface PutRequest {
  key: Buffer;
  value: Buffer;
  lease?: bigint;
  prevKv?: boolean;
}

export function putRequest(r: PutRequest): ProtoWriter {
  return new ProtoWriter().bytes(1, r.key).bytes(2, r.value).optionalUint(3, r.lease).bool(4, r.prevKv);
}

export interface DeleteRangeRequest {
  key: Buffer;
  rangeEnd?: Buffer;
  prevKv?: boolean;
}

export function deleteRangeRequest(r: DeleteRangeRequest): ProtoWriter {
  return new ProtoWriter().bytes(1, r.key).bytes(2, r.rangeEnd).bool(3, r.prevKv);
}

/** Compare.CompareTarget and the oneof member that carries its operand. */
export type Compare =
  | { key: Buffer; target: 'version'; equals: number }
  | { key: Buffer; target: 'mod'; equals: number };

export type RequestOp = { range: RangeRequest } | { put: PutRequest } | { deleteRange: DeleteRangeRequest };

export interface TxnRequest {
  compare: Compare[];
  success: RequestOp[];
  failure?: RequestOp[];
}

function compareMessage(c: Compare): ProtoWriter {
  // result EQUAL (0) is the default and left out; target VERSION = 0, MOD = 2.
  const w = new ProtoWriter();
  if (c.target === 'mod') w.uint(2, 2);
  w.bytes(3, c.key);
  return c.target === 'version' ? w.uint(4, c.equals) : w.uint(6, c.equals);
}

function requestOp(op: RequestOp): ProtoWriter {
  if ('range' in op) return new ProtoWriter().message(1, rangeRequest(op.range));
  if ('put' in op) return new ProtoWriter().message(2, putRequest(op.put));
  return new ProtoWriter().message(3, deleteRangeRequest(op.deleteRange));
}

export function txnRequest(r: TxnRequest): ProtoWriter {
  const w = new ProtoWriter();
  for (const c of r.compare) w.message(1, compareMessage(c));
  for (const op of r.success) w.message(2, requestOp(op));
  for (const op of r.failure ?? []) w.message(3, requestOp(op));
  return w;
}

export interface RangeResponse {
  revision: number;
  kvs: WireKV[];
}

export interface PutResponse {
  revision: number;
  prevKv?: WireKV;
}

export interface DeleteRangeResponse {
  revision: number;
  prevKvs: WireKV[];
}

export interface ResponseOp {
  range?: RangeResponse;
  put?: PutResponse;
  deleteRange?: DeleteRangeResponse;
}

export interface TxnResponse {
  revision: number;
  succeeded: boolean;
  responses: ResponseOp[];
}

function rangeResponseOf(r: FieldReader): RangeResponse {
  const out: RangeResponse = { revision: 0, kvs: [] };
  while (r.more) {
    const t = r.tag();
    if (t === tagOf(1, LEN)) out.revision = r.nested(header);
    else if (t === tagOf(2, LEN)) out.kvs.push(r.nested(keyValue));
    else r.skip(t);
  }
  return out;
}

function putResponseOf(r: ProtoReader): PutResponse {
  const out: PutResponse = { revision: 0 };
  while (r.more) {
    const t = r.tag();
    if (t === tagOf(1, LEN)) out.revision = r.nested(header);
    else if (t === tagOf(2, LEN)) out.prevKv = r.nested(keyValue);
    else r.skip(t);
  }
  return out;
}

function deleteRangeResponseOf(r: ProtoReader): DeleteRangeResponse {
  const out: DeleteRangeResponse = { revision: 0, prevKvs: [] };
  while (r.more) {
    const t = r.tag();
    if (t === tagOf(1, LEN)) out.revision = r.nested(header);
    else if (t === tagOf(3, LEN)) out.prevKvs.push(r.nested(keyValue));
    else r.skip(t);
  }
  return out;
}

function responseOp(r: ProtoReader): ResponseOp {
  const out: ResponseOp = {};
  while (r.more) {
    const t = r.tag();
    if (t === tagOf(1, LEN)) out.range = r.nested(rangeResponseOf);
    else if (t === tagOf(2, LEN)) out.put = r.nested(putResponseOf);
    else if (t === tagOf(3, LEN)) out.deleteRange = r.nested(deleteRangeResponseOf);
    else r.skip(t);
  }
  return out;
}

/** A range reply; one of thousands of key-values is decoded from its chunks without joining them. */
export function decodeRangeResponse(msg: ProtoMessage): RangeResponse {
  return rangeResponseOf(Buffer.isBuffer(msg) || msg.length === 1 ? whole(msg) : new ChunkedReader(msg));
}

export function decodePutResponse(msg: ProtoMessage): PutResponse {
  return putResponseOf(whole(msg));
}

export function decodeDeleteRangeResponse(msg: ProtoMessage): DeleteRangeResponse {
  return deleteRangeResponseOf(whole(msg));
}

export function decodeTxnResponse(msg: ProtoMessage): TxnResponse {
  const r = whole(msg);
  const out: TxnResponse = { revision: 0, succeeded: false, responses: [] };
  while (r.more) {
    const t = r.tag();
    if (t === tagOf(1, LEN)) out.revision = r.nested(header);
    else if (t === tagOf(2, VARINT)) out.succeeded = r.varint() !== 0;
    else if (t === tagOf(3, LEN)) out.responses.push(r.nested(responseOp));
    else r.skip(t);
  }
  return out;
}
