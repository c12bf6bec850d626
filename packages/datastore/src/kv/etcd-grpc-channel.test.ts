import { EventEmitter } from 'node:events';
import type { ClientHttp2Stream } from 'node:http2';
import { describe, expect, it } from 'vitest';
import { readReplies } from './etcd-grpc-channel.js';
import { EtcdStatusError } from './etcd-http2-errors.js';

/** A reply stream as node:http2 would deliver it: `data` chunks, trailers, close. */
class FakeStream extends EventEmitter {
  rstCode = 0;
  closedWith: number | undefined;
  close(code: number): void {
    this.closedWith = code;
  }
}

function framed(...messages: string[]): Buffer {
  return Buffer.concat(
    messages.map((m) => {
      const body = Buffer.from(m);
      const head = Buffer.alloc(5);
      head.writeUInt32BE(body.length, 1);
      return Buffer.concat([head, body]);
    }),
  );
}

/** Feed `chunks`, then a clean gRPC status; the messages (joined) and how the stream ended. */
function read(chunks: Buffer[], status = '0') {
  const stream = new FakeStream();
  const messages: string[] = [];
  const parts: number[] = [];
  let ended: { error: Error | undefined } | undefined;
  readReplies(stream as unknown as ClientHttp2Stream, {
    message: (m) => {
      parts.push(m.length);
      messages.push(Buffer.concat(m).toString());
    },
    end: (error) => {
      ended = { error };
    },
  });
  stream.emit('response', { ':status': 200 });
  for (const c of chunks) stream.emit('data', c);
  stream.emit('trailers', { 'grpc-status': status, 'grpc-message': 'no%20leader' });
  stream.emit('close');
  return { messages, parts, ended, stream };
}

describe('gRPC reply framing', () => {
  const wire = framed('first', '', 'a longer third message');

  it('cuts messages out wherever the chunks were split', () => {
    for (let a = 0; a <= wire.length; a++) {
      for (let b = a; b <= wire.length; b += 3) {
        const r = read([wire.subarray(0, a), wire.subarray(a, b), wire.subarray(b)]);
        expect(r.messages).toEqual(['first', '', 'a longer third message']);
        expect(r.ended).toEqual({ error: undefined });
      }
    }
  });

  it('hands a message over as the chunks it came in, not one copy', () => {
    const big = framed('x'.repeat(100));
    const r = read([big.subarray(0, 40), big.subarray(40, 70), big.subarray(70)]);
    expect(r.messages).toEqual(['x'.repeat(100)]);
    expect(r.parts).toEqual([3]);
  });

  it("ends with etcd's status when it is not OK", () => {
    const r = read([framed('partial')], '14');
    expect(r.ended?.error).toBeInstanceOf(EtcdStatusError);
    expect(r.ended?.error?.message).toMatch(/no leader/);
  });

  it('refuses a compressed message and cancels the stream', () => {
    const wire = framed('zipped');
    wire[0] = 1;
    const r = read([wire]);
    expect(r.messages).toEqual([]);
    expect(r.ended?.error?.message).toMatch(/compressed/);
    expect(r.stream.closedWith).toBe(8);
  });
});
