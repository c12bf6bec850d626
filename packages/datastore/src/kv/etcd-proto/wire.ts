/**
 * The protobuf wire format, as much as the etcd codec needs: wire types, tags, the reply envelope
 * and the error a malformed reply raises. The writer (`writer.ts`) and the readers (`reader.ts`)
 * build on it; the message tables (`kv.ts`, `watch.ts`, `lease.ts`, `auth.ts`) use `tagOf` and the
 * wire types to name the fields they read. Pure calculation, no I/O.
 *
 * The codec as a whole: a hand-written protobuf codec for the etcd v3 messages this client sends
 * and reads (etcdserverpb rpc.proto and mvccpb kv.proto of etcd 3.4), so a short-lived process can
 * talk gRPC to etcd without loading a protobuf library and a gRPC stack. Keys and values are
 * decoded straight to UTF-8 strings (the datastore only stores text); int64 revisions to numbers
 * (exact below 2^53, which `parseRevision` enforces on the way in); lease IDs, which are random
 * 64-bit numbers, to bigint. Fields this client does not need are skipped.
 */

// Wire types, as the protobuf encoding defines them.
export const VARINT = 0;
export const I64 = 1;
export const LEN = 2;
export const I32 = 5;

/** A field's tag as it appears on the wire: its number and its wire type in one varint. */
export function tagOf(field: number, wire: number): number {
  return field * 8 + wire;
}

/** A reply message as the transport hands it over: one buffer, or the chunks it arrived in. */
export type ProtoMessage = Buffer | readonly Buffer[];

export class ProtoError extends Error {
  constructor(message: string) {
    super(`malformed etcd reply: ${message}`);
    this.name = 'ProtoError';
  }
}
