/**
 * A hand-written protobuf codec for the etcd v3 messages this client sends and reads (etcdserverpb
 * rpc.proto and mvccpb kv.proto of etcd 3.4): ranges, puts, deletes, transactions, watches, lease
 * grants, authentication. Pure calculation, no I/O. It exists so a short-lived process can talk
 * gRPC to etcd without loading a protobuf library and a gRPC stack.
 *
 * Keys and values are decoded straight to UTF-8 strings (the datastore only stores text); int64
 * revisions to numbers (exact below 2^53, which `parseRevision` enforces on the way in); lease IDs,
 * which are random 64-bit numbers, to bigint. Fields this client does not need are skipped.
 */

// Field numbers and wire types, as rpc.proto and kv.proto declare them.
const VARINT = 0;
const I64 = 1;
const LEN = 2;
const I32 = 5;

/** Builds one message: fields appended in order, nested messages as finished buffers. */
export class ProtoWriter {
  private readonly parts: Buffer[] = [];
  private scratch: number[] = [];

  private flushScratch(): void {
    if (this.scratch.length > 0) {
      this.parts.push(Buffer.from(this.scratch));
      this.scratch = [];
    }
  }

  private varint(v: number | bigint): void {
    if (typeof v === 'bigint') {
      let x = BigInt.asUintN(64, v);
      while (x > 0x7fn) {
        this.scratch.push(Number(x & 0x7fn) | 0x80);
        x >>= 7n;
      }
      this.scratch.push(Number(x));
      return;
    }
    if (v < 0 || !Number.isSafeInteger(v)) {
      this.varint(BigInt(v));
      return;
    }
    while (v > 0x7f) {
      this.scratch.push((v % 0x80) | 0x80);
      v = Math.floor(v / 0x80);
    }
    this.scratch.push(v);
  }

  private tag(field: number, wire: number): void {
    this.varint(field * 8 + wire);
  }

  /** A varint field, written even when zero (a oneof member must be present to be set). */
  uint(field: number, v: number | bigint): this {
    this.tag(field, VARINT);
    this.varint(v);
    return this;
  }

  /** A varint field left out at zero, as proto3 writes its scalars. */
  optionalUint(field: number, v: number | bigint | undefined): this {
    if (v !== undefined && v !== 0 && v !== 0n) this.uint(field, v);
    return this;
  }

  bool(field: number, v: boolean | undefined): this {
    if (v) this.uint(field, 1);
    return this;
  }

  /** A bytes field, left out when empty (proto3's default). */
  bytes(field: number, v: Buffer | undefined): this {
    if (v === undefined || v.length === 0) return this;
    return this.delimited(field, v);
  }

  string(field: number, v: string | undefined): this {
    return v === undefined ? this : this.bytes(field, Buffer.from(v, 'utf8'));
  }

  /** A nested message, written even when empty (presence sets a oneof member). */
  message(field: number, m: ProtoWriter): this {
    return this.delimited(field, m.finish());
  }

  private delimited(field: number, v: Buffer): this {
    this.tag(field, LEN);
    this.varint(v.length);
    this.flushScratch();
    if (v.length > 0) this.parts.push(v);
    return this;
  }

  finish(): Buffer {
    this.flushScratch();
    return this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts);
  }
}

/** A field's tag as it appears on the wire: its number and its wire type in one varint. */
function tagOf(field: number, wire: number): number {
  return field * 8 + wire;
}

/**
 * Reads one message's fields from `buf[pos, end)`. Built for replies of thousands of key-values:
 * a tag is one number compared against constants (`tagOf`), and a nested message is read in place
 * (`nested`) by narrowing `end`, so decoding allocates only what it returns.
 */
class ProtoReader {
  pos: number;
  constructor(
    readonly buf: Buffer,
    start: number,
    public end: number,
  ) {
    this.pos = start;
  }

  get more(): boolean {
    return this.pos < this.end;
  }

  varint(): number {
    const buf = this.buf;
    let result = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new ProtoError('truncated varint');
      const b = buf[this.pos++]!;
      result += (b & 0x7f) * mul;
      if (b < 0x80) return result;
      mul *= 0x80;
    }
    throw new ProtoError('varint longer than 10 bytes');
  }

  bigVarint(): bigint {
    let result = 0n;
    let shift = 0n;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new ProtoError('truncated varint');
      const b = this.buf[this.pos++]!;
      result |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return BigInt.asIntN(64, result);
      shift += 7n;
    }
    throw new ProtoError('varint longer than 10 bytes');
  }

  /** The next tag (`tagOf(field, wire)`). */
  tag(): number {
    return this.varint();
  }

  /** A length-delimited field's payload length, checked against the message; `pos` is at its start. */
  private length(): number {
    const len = this.varint();
    if (this.pos + len > this.end) throw new ProtoError('field runs past the end of its message');
    return len;
  }

  string(): string {
    const len = this.length();
    const start = this.pos;
    this.pos = start + len;
    return this.buf.toString('utf8', start, this.pos);
  }

  /** The message in the next length-delimited field, read by `read` in place; then the field after it. */
  nested<T>(read: (r: ProtoReader) => T): T {
    const len = this.length();
    const outer = this.end;
    const end = this.pos + len;
    this.end = end;
    const out = read(this);
    this.pos = end;
    this.end = outer;
    return out;
  }

  /** Step over `n` bytes of this message. */
  advance(n: number): void {
    if (this.pos + n > this.end) throw new ProtoError('field runs past the end of its message');
    this.pos += n;
  }

  skip(tag: number): void {
    skipField(this, tag);
  }
}

/**
 * The top-level fields of a message that arrived as several chunks (a large range reply comes in
 * hundreds), read without joining the chunks: a field's payload is a view of its chunk, or a copy
 * of just its bytes when it straddles two. Nested messages are then read by a `ProtoReader`.
 */
class ChunkedReader {
  private part = 0;
  private pos = 0;
  constructor(private readonly parts: readonly Buffer[]) {
    this.settle();
  }

  get more(): boolean {
    return this.part < this.parts.length;
  }

  /** Step over exhausted (and empty) chunks. */
  private settle(): void {
    const parts = this.parts;
    while (this.part < parts.length && this.pos >= parts[this.part]!.length) {
      this.pos -= parts[this.part]!.length;
      this.part++;
    }
  }

  varint(): number {
    let result = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      if (!this.more) throw new ProtoError('truncated varint');
      const chunk = this.parts[this.part]!;
      const b = chunk[this.pos++]!;
      if (this.pos === chunk.length) this.settle();
      result += (b & 0x7f) * mul;
      if (b < 0x80) return result;
      mul *= 0x80;
    }
    throw new ProtoError('varint longer than 10 bytes');
  }

  tag(): number {
    return this.varint();
  }

  /** The next `len` bytes: a view when they lie in one chunk, else a copy. */
  private bytes(len: number): Buffer {
    const chunk = this.parts[this.part];
    if (chunk && this.pos + len <= chunk.length) {
      const out = chunk.subarray(this.pos, this.pos + len);
      this.pos += len;
      this.settle();
      return out;
    }
    const out = Buffer.allocUnsafe(len);
    for (let filled = 0; filled < len; ) {
      if (!this.more) throw new ProtoError('field runs past the end of its message');
      const c = this.parts[this.part]!;
      const n = Math.min(len - filled, c.length - this.pos);
      c.copy(out, filled, this.pos, this.pos + n);
      filled += n;
      this.pos += n;
      this.settle();
    }
    return out;
  }

  nested<T>(read: (r: ProtoReader) => T): T {
    const payload = this.bytes(this.varint());
    return read(new ProtoReader(payload, 0, payload.length));
  }

  advance(n: number): void {
    while (n > 0) {
      if (!this.more) throw new ProtoError('field runs past the end of its message');
      const step = Math.min(n, this.parts[this.part]!.length - this.pos);
      this.pos += step;
      n -= step;
      this.settle();
    }
  }

  skip(tag: number): void {
    skipField(this, tag);
  }
}

/** Step over one field's value, of wire type `tag & 7`. */
function skipField(r: { varint(): number; advance(n: number): void }, tag: number): void {
  switch (tag & 7) {
    case VARINT:
      r.varint();
      return;
    case I64:
      r.advance(8);
      return;
    case LEN:
      r.advance(r.varint());
      return;
    case I32:
      r.advance(4);
      return;
    default:
      throw new ProtoError(`unsupported wire type ${tag & 7}`);
  }
}

/** What the decoders below read fields through: one buffer, or the chunks a message came in. */
type FieldReader = Pick<ProtoReader, 'more' | 'tag' | 'varint' | 'nested' | 'skip'>;

/** A reply message as the transport hands it over: one buffer, or the chunks it arrived in. */
export type ProtoMessage = Buffer | readonly Buffer[];

function joined(msg: ProtoMessage): Buffer {
  if (Buffer.isBuffer(msg)) return msg;
  return msg.length === 1 ? msg[0]! : Buffer.concat(msg);
}

export class ProtoError extends Error {
  constructor(message: string) {
    super(`malformed etcd reply: ${message}`);
    this.name = 'ProtoError';
  }
}

// ---- requests ----

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

export function leaseGrantRequest(ttlSeconds: number): ProtoWriter {
  return new ProtoWriter().optionalUint(1, ttlSeconds);
}

export function authenticateRequest(name: string, password: string): ProtoWriter {
  return new ProtoWriter().string(1, name).string(2, password);
}

// ---- replies ----

/** mvccpb.KeyValue, key and value as UTF-8 text. */
export interface WireKV {
  key: string;
  value: string;
  createRevision: number;
  modRevision: number;
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

export interface LeaseGrantResponse {
  id: bigint;
  ttl: number;
  error: string;
}

/** ResponseHeader: only the revision is used. */
function header(r: ProtoReader): number {
  let revision = 0;
  while (r.more) {
    const t = r.tag();
    if (t === tagOf(3, VARINT)) revision = r.varint();
    else r.skip(t);
  }
  return revision;
}

function keyValue(r: ProtoReader): WireKV {
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

function whole(msg: ProtoMessage): ProtoReader {
  const buf = joined(msg);
  return new ProtoReader(buf, 0, buf.length);
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
