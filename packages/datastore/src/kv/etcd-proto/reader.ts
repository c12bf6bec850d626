/**
 * Reads protobuf messages: `ProtoReader` over one buffer, `ChunkedReader` over the chunks a large
 * reply arrived in, both seen as a `FieldReader` by the reply tables in `kv.ts`, `watch.ts`,
 * `lease.ts` and `auth.ts`. Pure calculation, no I/O.
 */
import { I32, I64, LEN, ProtoError, type ProtoMessage, VARINT } from './wire.js';

/**
 * Reads one message's fields from `buf[pos, end)`. Built for replies of thousands of key-values:
 * a tag is one number compared against constants (`tagOf`), and a nested message is read in place
 * (`nested`) by narrowing `end`, so decoding allocates only what it returns.
 */
export class ProtoReader {
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
export class ChunkedReader {
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

/** What the reply tables read fields through: one buffer, or the chunks a message came in. */
export type FieldReader = Pick<ProtoReader, 'more' | 'tag' | 'varint' | 'nested' | 'skip'>;

function joined(msg: ProtoMessage): Buffer {
  if (Buffer.isBuffer(msg)) return msg;
  return msg.length === 1 ? msg[0]! : Buffer.concat(msg);
}

/** A reader over the whole of `msg`, its chunks joined first when it came in several. */
export function whole(msg: ProtoMessage): ProtoReader {
  const buf = joined(msg);
  return new ProtoReader(buf, 0, buf.length);
}
