/**
 * The executable's side of the plugin service (protocol.ts): one request, one reply.
 *
 * `callPluginService` resolves undefined when there is no service to take the invocation (no
 * socket, nobody listening, or it declined): the caller then runs the invocation itself. Once the
 * request has been sent, a failure is not retried here (the service may have done part of it); it
 * is a `try-again` error, as the runtime's next ADD or DEL will sort it out.
 *
 * Under Bun (the native executable) the socket is Bun's own: node:net costs a compiled program
 * about 10 ms of start-up, which is most of what the service saves.
 */
import { CniPluginError } from '../errors.js';
import { MAX_MESSAGE_BYTES, PROTOCOL_VERSION, type ServiceReply, type ServiceRequest } from './protocol.js';

export interface CallOptions {
  /** Give up on a reply after this long (the request stays sent). Default 5 minutes. */
  timeoutMs?: number;
  /** Why the service was not used, for the debug log. */
  onUnavailable?: (reason: string) => void;
}

type Answered = { v: number; stdout: string; stderr: string; exitCode: number };

export async function callPluginService(
  socketPath: string,
  req: ServiceRequest,
  opts: CallOptions = {},
): Promise<Answered | undefined> {
  const line = `${JSON.stringify(req)}\n`;
  const timeoutMs = opts.timeoutMs ?? 300_000;
  const exchange = isBun() ? bunExchange : nodeExchange;
  const r = await exchange(socketPath, line, timeoutMs);
  if (r.kind === 'unavailable') {
    opts.onUnavailable?.(r.reason);
    return undefined;
  }
  const reply = parseReply(r.text, socketPath);
  if ('declined' in reply) {
    opts.onUnavailable?.(`the service declined: ${reply.declined}`);
    return undefined;
  }
  return reply;
}

function parseReply(text: string, socketPath: string): ServiceReply {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new CniPluginError(
      'try-again',
      `the plugin service at ${socketPath} closed the connection without a complete reply`,
      { details: text.slice(0, 200) },
    );
  }
  const o = v as Record<string, unknown> | null;
  if (o === null || typeof o !== 'object' || o.v !== PROTOCOL_VERSION) {
    throw new CniPluginError('internal', `the plugin service at ${socketPath} answered in another protocol`);
  }
  if (typeof o.declined === 'string') return { v: PROTOCOL_VERSION, declined: o.declined };
  if (typeof o.stdout !== 'string' || typeof o.stderr !== 'string' || !Number.isInteger(o.exitCode)) {
    throw new CniPluginError('internal', `the plugin service at ${socketPath} sent a malformed reply`);
  }
  return { v: PROTOCOL_VERSION, stdout: o.stdout, stderr: o.stderr, exitCode: o.exitCode as number };
}

type Exchange = (
  socketPath: string,
  line: string,
  timeoutMs: number,
) => Promise<{ kind: 'unavailable'; reason: string } | { kind: 'answered'; text: string }>;

/**
 * `finish(f)` runs `f` for the first outcome only, and stops the timer that `onTimeout` starts
 * after `timeoutMs`.
 */
function oneOutcome(timeoutMs: number, onTimeout: () => void): (f: () => void) => void {
  let settled = false;
  const timer = setTimeout(onTimeout, timeoutMs);
  return (f) => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    f();
  };
}

function lostAfterSending(socketPath: string, why: string): CniPluginError {
  return new CniPluginError('try-again', `the plugin service at ${socketPath} ${why}`);
}

// ---------------------------------------------------------------------------------------------
// Bun

interface BunSocket {
  write(data: Uint8Array): number;
  end(): void;
}
interface BunGlobal {
  connect(o: {
    unix: string;
    socket: {
      open?(s: BunSocket): void;
      data?(s: BunSocket, chunk: Uint8Array): void;
      drain?(s: BunSocket): void;
      close?(s: BunSocket): void;
      end?(s: BunSocket): void;
      error?(s: BunSocket, e: Error): void;
    };
  }): Promise<BunSocket>;
}

function isBun(): boolean {
  return typeof (globalThis as { Bun?: unknown }).Bun === 'object';
}

const bunExchange: Exchange = (socketPath, line, timeoutMs) =>
  new Promise((resolve, reject) => {
    const bun = (globalThis as unknown as { Bun: BunGlobal }).Bun;
    let pending = new TextEncoder().encode(line);
    const chunks: Uint8Array[] = [];
    let size = 0;
    const finish = oneOutcome(timeoutMs, () =>
      finish(() => reject(lostAfterSending(socketPath, `did not answer within ${timeoutMs} ms`))),
    );
    const flush = (s: BunSocket) => {
      if (pending.length === 0) return;
      const n = s.write(pending);
      if (n > 0) pending = pending.subarray(n);
    };
    bun
      .connect({
        unix: socketPath,
        socket: {
          open: flush,
          drain: flush,
          data(s, chunk) {
            size += chunk.length;
            if (size > MAX_MESSAGE_BYTES) {
              s.end();
              finish(() => reject(lostAfterSending(socketPath, 'sent a reply that is too large')));
              return;
            }
            chunks.push(chunk.slice());
          },
          close() {
            const text = Buffer.concat(chunks).toString('utf8');
            finish(() => resolve({ kind: 'answered', text }));
          },
          error(_s, e) {
            finish(() => reject(lostAfterSending(socketPath, `failed: ${e.message}`)));
          },
        },
      })
      .catch((e: NodeJS.ErrnoException) =>
        finish(() =>
          resolve({ kind: 'unavailable', reason: `cannot connect to ${socketPath}: ${e.code ?? e.message}` }),
        ),
      );
  });

// ---------------------------------------------------------------------------------------------
// Node

const nodeExchange: Exchange = async (socketPath, line, timeoutMs) => {
  const { createConnection } = await import('node:net');
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let connected = false;
    const sock = createConnection({ path: socketPath });
    const finish = oneOutcome(timeoutMs, () => {
      sock.destroy();
      finish(() => reject(lostAfterSending(socketPath, `did not answer within ${timeoutMs} ms`)));
    });
    sock.on('connect', () => {
      connected = true;
      sock.write(line);
    });
    sock.on('data', (b: Buffer) => {
      size += b.length;
      if (size > MAX_MESSAGE_BYTES) {
        sock.destroy();
        finish(() => reject(lostAfterSending(socketPath, 'sent a reply that is too large')));
        return;
      }
      chunks.push(b);
    });
    sock.on('error', (e: NodeJS.ErrnoException) => {
      if (!connected) {
        finish(() =>
          resolve({ kind: 'unavailable', reason: `cannot connect to ${socketPath}: ${e.code ?? e.message}` }),
        );
      } else {
        finish(() => reject(lostAfterSending(socketPath, `failed: ${e.message}`)));
      }
    });
    sock.on('close', () => {
      finish(() => resolve({ kind: 'answered', text: Buffer.concat(chunks).toString('utf8') }));
    });
  });
};
