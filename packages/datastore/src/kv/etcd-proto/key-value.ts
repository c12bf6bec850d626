/**
 * What the KV and Watch replies share: `etcdserverpb.ResponseHeader` (only its revision is read)
 * and `mvccpb.KeyValue` (`WireKV`, key and value as UTF-8 text). Pure calculation, no I/O.
 */
import type { ProtoReader } from './reader.js';
import { LEN, tagOf, VARINT } from './wire.js';

/** mvccpb.KeyValue, key and value as UTF-8 text. */
export interface WireKV {
  key: string;
  value: string;
  createRevision: number;
  modRevision: number;
}

/** ResponseHeader: only the revision is used. */
export function header(r: ProtoReader): number {
  let revision = 0;
  while (r.more) {
    const t = r.tag();
    if (t === tagOf(3, VARINT)) revision = r.varint();
    else r.skip(t);
  }
  return revision;
}

export function keyValue(r: ProtoReader): WireKV {
  const kv: WireKV = { key: '', value: '', createRevision: 0, modRevision: 0 };
  while (r.more) {
    const t = r.tag();
    if (t === tagOf(1, LEN)) kv.key = r.string();
    else if (t === tagOf(5, LEN)) kv.value = r.string();
    else if (t === tagOf(2, VARINT)) kv.createRevision = r.varint();
    else if (t === tagOf(3, VARINT)) kv.modRevision = r.varint();
    else r.skip(t);
  }
  return kv;
}
