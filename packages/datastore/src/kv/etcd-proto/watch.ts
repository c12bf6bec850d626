/**
 * The Watch service's messages (etcdserverpb rpc.proto): a WatchRequest carrying a create_request,
 * and the WatchResponse with its events (mvccpb.Event). Pure calculation, no I/O.
 */
import { header, keyValue, type WireKV } from './key-value.js';
import { type ProtoReader, whole } from './reader.js';
import { LEN, type ProtoMessage, tagOf, VARINT } from './wire.js';
import { ProtoWriter } from './writer.js';

export interface WatchCreateRequest {
  key: Buffer;
  rangeEnd?: Buffer;
  startRevision?: number;
  prevKv?: boolean;
}

/** A WatchRequest carrying a create_request. */
export function watchCreateRequest(r: WatchCreateRequest): ProtoWriter {
  const create = new ProtoWriter()
    .bytes(1, r.key)
    .bytes(2, r.rangeEnd)
    .optionalUint(3, r.startRevision)
    .bool(6, r.prevKv);
  return new ProtoWriter().message(1, create);
}

export interface WatchEvent {
  type: 'put' | 'delete';
  kv: WireKV;
  prevKv?: WireKV;
}

export interface WatchResponse {
  revision: number;
  watchId: number;
  created: boolean;
  canceled: boolean;
  compactRevision: number;
  cancelReason: string;
  events: WatchEvent[];
}

function watchEvent(r: ProtoReader): WatchEvent {
  let type: WatchEvent['type'] = 'put';
  let kv: WireKV | undefined;
  let prevKv: WireKV | undefined;
  while (r.more) {
    const t = r.tag();
    if (t === tagOf(1, VARINT)) type = r.varint() === 1 ? 'delete' : 'put';
    else if (t === tagOf(2, LEN)) kv = r.nested(keyValue);
    else if (t === tagOf(3, LEN)) prevKv = r.nested(keyValue);
    else r.skip(t);
  }
  const ev: WatchEvent = { type, kv: kv ?? { key: '', value: '', createRevision: 0, modRevision: 0 } };
  if (prevKv) ev.prevKv = prevKv;
  return ev;
}

export function decodeWatchResponse(msg: ProtoMessage): WatchResponse {
  const r = whole(msg);
  const out: WatchResponse = {
    revision: 0,
    watchId: 0,
    created: false,
    canceled: false,
    compactRevision: 0,
    cancelReason: '',
    events: [],
  };
  while (r.more) {
    const t = r.tag();
    if (t === tagOf(1, LEN)) out.revision = r.nested(header);
    else if (t === tagOf(2, VARINT)) out.watchId = r.varint();
    else if (t === tagOf(3, VARINT)) out.created = r.varint() !== 0;
    else if (t === tagOf(4, VARINT)) out.canceled = r.varint() !== 0;
    else if (t === tagOf(5, VARINT)) out.compactRevision = r.varint();
    else if (t === tagOf(6, LEN)) out.cancelReason = r.string();
    else if (t === tagOf(11, LEN)) out.events.push(r.nested(watchEvent));
    else r.skip(t);
  }
  return out;
}
