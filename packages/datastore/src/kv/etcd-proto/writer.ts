/**
 * Builds one protobuf message: fields appended in order, scalars into a scratch array and nested
 * messages as finished buffers, joined once by `finish()`. Proto3's defaults are kept: a scalar or
 * bytes field at zero or empty is left out, except where presence matters (`uint`, `message`: a
 * oneof member must be present to be set). The request tables in `kv.ts`, `watch.ts`, `lease.ts`
 * and `auth.ts` use it. Pure calculation, no I/O.
 */
import { LEN, VARINT } from './wire.js';

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
