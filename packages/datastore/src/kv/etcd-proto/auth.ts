/**
 * The Auth service's messages (etcdserverpb rpc.proto): Authenticate's request (name and password)
 * and the token of its reply. Pure calculation, no I/O.
 */
import { whole } from './reader.js';
import { LEN, type ProtoMessage, tagOf } from './wire.js';
import { ProtoWriter } from './writer.js';

export function authenticateRequest(name: string, password: string): ProtoWriter {
  return new ProtoWriter().string(1, name).string(2, password);
}

export function decodeAuthenticateResponse(msg: ProtoMessage): { token: string } {
  const r = whole(msg);
  let token = '';
  while (r.more) {
    const t = r.tag();
    if (t === tagOf(2, LEN)) token = r.string();
    else r.skip(t);
  }
  return { token };
}
