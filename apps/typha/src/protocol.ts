/**
 * The Typha wire protocol: newline-delimited JSON messages over one TCP (normally TLS) connection.
 *
 *   client                                     server
 *   hello {node, client, syncer, version} ──►
 *                                          ◄── hello-ok {server}         (or error {reason}, close)
 *                                          ◄── set… (the current state of the syncer's sources)
 *                                          ◄── snapshot-end
 *                                          ◄── in-sync                   (when the server's own
 *                                                                         syncer is; may come later)
 *                                          ◄── set / delete …            (deltas, in order)
 *                                          ◄── ping {ts} every PingInterval
 *   pong {ts} ──►                                                        (server drops a client
 *                                                                         silent past PongTimeout)
 *
 * Items are the syncer's own items (Calico resources, `{key, value}` records) as JSON, with
 * `bigint` values (IPAM sequence numbers) written as `{"$bigint":"<digits>"}`. Every message is
 * one line, so the server encodes an update once and writes the same bytes to every client.
 * Pure: encoding, decoding and line splitting only.
 */

/** The syncer types a client can ask for: Felix's, and bird-bridge's (upstream's `bgp`). */
export const SYNCER_TYPES = ['felix', 'bgp'] as const;
/** One of {@link SYNCER_TYPES}. */
export type SyncerType = (typeof SYNCER_TYPES)[number];

/** The protocol version spoken here; a server refuses a hello with another. */
export const PROTOCOL_VERSION = 1;

/** A message from a client. */
export type ClientMessage =
  | {
      readonly t: 'hello';
      readonly version: number;
      readonly node: string;
      readonly client: string;
      readonly syncer: SyncerType;
    }
  | { readonly t: 'pong'; readonly ts: number };

/** A message from the server. */
export type ServerMessage =
  | { readonly t: 'hello-ok'; readonly server: string }
  | { readonly t: 'error'; readonly reason: string }
  | { readonly t: 'set'; readonly s: string; readonly k: string; readonly v: unknown }
  | { readonly t: 'delete'; readonly s: string; readonly k: string; readonly v: unknown }
  | { readonly t: 'snapshot-end' }
  | { readonly t: 'in-sync' }
  | { readonly t: 'ping'; readonly ts: number };

function replacer(_key: string, v: unknown): unknown {
  return typeof v === 'bigint' ? { $bigint: v.toString() } : v;
}

function reviver(_key: string, v: unknown): unknown {
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
    const o = v as Record<string, unknown>;
    if (typeof o.$bigint === 'string' && Object.keys(o).length === 1) return BigInt(o.$bigint);
  }
  return v;
}

/** One message as a line (with its `\n`). */
export function encodeMessage(m: ClientMessage | ServerMessage): string {
  return `${JSON.stringify(m, replacer)}\n`;
}

/** Thrown for a line that is not a message of the protocol. */
export class ProtocolError extends Error {
  override readonly name = 'ProtocolError';
}

/** A server's line as a message; throws {@link ProtocolError} for anything else. */
export function decodeServerMessage(line: string): ServerMessage {
  const m = parseObject(line);
  switch (m.t) {
    case 'hello-ok':
    case 'error':
    case 'snapshot-end':
    case 'in-sync':
    case 'ping':
      return m as ServerMessage;
    case 'set':
    case 'delete':
      if (typeof m.s !== 'string' || typeof m.k !== 'string') throw new ProtocolError(`bad ${m.t}`);
      return m as ServerMessage;
    default:
      throw new ProtocolError(`unknown server message ${JSON.stringify(m.t)}`);
  }
}

/** A client's line as a message; throws {@link ProtocolError} for anything else. */
export function decodeClientMessage(line: string): ClientMessage {
  const m = parseObject(line);
  if (m.t === 'pong') return { t: 'pong', ts: Number(m.ts) };
  if (m.t === 'hello') {
    if (typeof m.node !== 'string' || m.node === '') throw new ProtocolError('hello without a node');
    if (!(SYNCER_TYPES as readonly unknown[]).includes(m.syncer)) {
      throw new ProtocolError(`unknown syncer type ${JSON.stringify(m.syncer)}`);
    }
    return {
      t: 'hello',
      version: Number(m.version),
      node: m.node,
      client: typeof m.client === 'string' ? m.client : '',
      syncer: m.syncer as SyncerType,
    };
  }
  throw new ProtocolError(`unknown client message ${JSON.stringify(m.t)}`);
}

function parseObject(line: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(line, reviver);
  } catch (e) {
    throw new ProtocolError(`not JSON: ${(e as Error).message}`);
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new ProtocolError('not an object');
  return v as Record<string, unknown>;
}

/**
 * Splits a byte stream into lines. `push` returns the complete lines so far; a line longer than
 * `maxLine` bytes throws {@link ProtocolError} (a peer that never sends a newline).
 */
export class LineSplitter {
  #rest = '';
  readonly #max: number;

  constructor(maxLine = 64 * 1024 * 1024) {
    this.#max = maxLine;
  }

  push(chunk: string): string[] {
    const text = this.#rest + chunk;
    const lines = text.split('\n');
    this.#rest = lines.pop()!;
    if (this.#rest.length > this.#max) throw new ProtocolError('line too long');
    return lines.filter((l) => l !== '');
  }
}
