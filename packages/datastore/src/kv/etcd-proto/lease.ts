/**
 * The Lease service's messages (etcdserverpb rpc.proto): LeaseGrant's request and reply. The
 * lease ID is a random 64-bit number, so it is a bigint. Pure calculation, no I/O.
 */
import { whole } from './reader.js';
import { LEN, type ProtoMessage, tagOf, VARINT } from './wire.js';
import { ProtoWriter } from './writer.js';

export function leaseGrantRequest(ttlSeconds: number): ProtoWriter {
  return new ProtoWriter().optionalUint(1, ttlSeconds);
}

export interface LeaseGrantResponse {
  id: bigint;
  ttl: number;
  error: string;
}

export function decodeLeaseGrantResponse(msg: ProtoMessage): LeaseGrantResponse {
  const r = whole(msg);
  const out: LeaseGrantResponse = { id: 0n, ttl: 0, error: '' };
  while (r.more) {
    const t = r.tag();
    if (t === tagOf(2, VARINT)) out.id = r.bigVarint();
    else if (t === tagOf(3, VARINT)) out.ttl = r.varint();
    else if (t === tagOf(4, LEN)) out.error = r.string();
    else r.skip(t);
  }
  return out;
}
