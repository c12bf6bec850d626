/**
 * A client of BIRD's control socket (what `birdc` speaks), without birdc.
 *
 * API: `command(text)` sends one command and returns the raw reply; `showProtocols()`,
 * `showRoutes()`, `showStatus()`, `configure()` parse theirs (see `control-protocol.ts`).
 * Design: one connection per command — connect, read the `0001` greeting, send, read one reply,
 * close — so a BIRD restart between calls needs no reconnection logic.
 * Errors: `control-connect` (no socket, refused), `control-timeout`, `control-protocol`,
 * `command-failed` (BIRD's 8xxx/9xxx reply, its text as the message).
 */
import { createConnection } from 'node:net';
import { BirdBridgeError } from '../errors.js';
import {
  type BirdReply,
  type BirdStatus,
  birdString,
  type ConfigureResult,
  isErrorReply,
  type ProtocolRow,
  parseConfigure,
  parseProtocols,
  parseRoutes,
  parseStatus,
  ReplySplitter,
  type RouteRow,
} from './control-protocol.js';

export interface BirdControlClientOptions {
  /** Longest wait for a whole reply, ms. Default 5000. */
  timeoutMs?: number;
}

export class BirdControlClient {
  readonly socketPath: string;
  private readonly timeoutMs: number;

  constructor(socketPath: string, opts: BirdControlClientOptions = {}) {
    this.socketPath = socketPath;
    this.timeoutMs = opts.timeoutMs ?? 5000;
  }

  /** Send one command line; resolves with BIRD's reply, error replies included. */
  command(text: string): Promise<BirdReply> {
    if (text.includes('\n')) {
      return Promise.reject(new BirdBridgeError('invalid-input', 'a BIRD command is one line'));
    }
    return new Promise<BirdReply>((resolve, reject) => {
      const sock = createConnection(this.socketPath);
      const splitter = new ReplySplitter();
      let greeted = false;
      let done = false;
      const finish = (err: Error | undefined, reply?: BirdReply) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        sock.destroy();
        if (err) reject(err);
        else resolve(reply!);
      };
      const timer = setTimeout(
        () =>
          finish(
            new BirdBridgeError(
              'control-timeout',
              `BIRD at ${this.socketPath} did not answer "${text}" within ${this.timeoutMs} ms`,
            ),
          ),
        this.timeoutMs,
      );
      sock.setEncoding('utf8');
      sock.on('data', (chunk: string) => {
        let replies: BirdReply[];
        try {
          replies = splitter.push(chunk);
        } catch (e) {
          finish(e as Error);
          return;
        }
        for (const r of replies) {
          if (!greeted) {
            if (r.code !== 1) {
              finish(new BirdBridgeError('control-protocol', `expected BIRD's greeting, got: ${r.message}`));
              return;
            }
            greeted = true;
            sock.write(`${text}\n`);
            continue;
          }
          finish(undefined, r);
          return;
        }
      });
      sock.on('error', (e: NodeJS.ErrnoException) => {
        finish(
          new BirdBridgeError(
            greeted ? 'control-protocol' : 'control-connect',
            `BIRD control socket ${this.socketPath}: ${e.code ?? e.message}`,
            { cause: e },
          ),
        );
      });
      sock.on('close', () => {
        finish(
          new BirdBridgeError(
            'control-protocol',
            `BIRD closed ${this.socketPath} before replying to "${text}"`,
          ),
        );
      });
    });
  }

  /** Like `command`, but an 8xxx/9xxx reply throws `command-failed`. */
  async commandOk(text: string): Promise<BirdReply> {
    const r = await this.command(text);
    if (isErrorReply(r)) throw new BirdBridgeError('command-failed', `${text}: ${r.message}`);
    return r;
  }

  async showProtocols(name?: string): Promise<ProtocolRow[]> {
    return parseProtocols(await this.commandOk(name ? `show protocols "${name}"` : 'show protocols'));
  }

  async showRoutes(args = ''): Promise<RouteRow[]> {
    return parseRoutes(await this.commandOk(`show route${args ? ` ${args}` : ''}`));
  }

  async showStatus(): Promise<BirdStatus> {
    return parseStatus(await this.commandOk('show status'));
  }

  /** Re-read the configuration file BIRD was started with, or `file`. Parse errors throw. */
  async configure(file?: string): Promise<ConfigureResult> {
    const r = await this.command(file === undefined ? 'configure' : `configure ${birdString(file)}`);
    if (isErrorReply(r)) throw new BirdBridgeError('command-failed', `configure: ${r.message}`);
    return parseConfigure(r);
  }

  /** True if BIRD answers its greeting on the socket. */
  async ping(): Promise<boolean> {
    try {
      await this.command('show status');
      return true;
    } catch {
      return false;
    }
  }
}
