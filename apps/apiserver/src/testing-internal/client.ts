/**
 * An HTTPS client for tests of calico-apiserver: one request with a client certificate (or none),
 * headers and a body; the answer's status, headers, text and JSON. `watchLines` reads a watch
 * stream until `until` says enough, then hangs up.
 */

import type { IncomingHttpHeaders } from 'node:http';
import { request } from 'node:https';

export interface Identity {
  readonly cert?: string;
  readonly key?: string;
  readonly headers?: Readonly<Record<string, string | string[]>>;
}

export interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
  // biome-ignore lint/suspicious/noExplicitAny: test answers are read field by field.
  readonly json: any;
}

export interface Client {
  call(
    method: string,
    path: string,
    o?: { as?: Identity; body?: unknown; contentType?: string; accept?: string },
  ): Promise<Answer>;
  watchLines(
    path: string,
    o: { as?: Identity; accept?: string; until: (events: unknown[]) => boolean; timeoutMs?: number },
  ): Promise<unknown[]>;
}

export function client(port: number, ca: string, host = '127.0.0.1'): Client {
  const options = (
    method: string,
    path: string,
    as: Identity | undefined,
    extra: Record<string, string>,
  ) => ({
    host,
    port,
    method,
    path,
    ca,
    servername: 'localhost',
    ...(as?.cert ? { cert: as.cert, key: as.key } : {}),
    headers: { ...(as?.headers ?? {}), ...extra },
    agent: false as const,
  });
  return {
    call(method, path, o = {}) {
      const body =
        o.body === undefined ? undefined : typeof o.body === 'string' ? o.body : JSON.stringify(o.body);
      const extra: Record<string, string> = {};
      if (body !== undefined) {
        extra['content-type'] = o.contentType ?? 'application/json';
        extra['content-length'] = String(Buffer.byteLength(body));
      }
      if (o.accept) extra.accept = o.accept;
      return new Promise((resolve, reject) => {
        const req = request(options(method, path, o.as, extra), (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => {
            text += c;
          });
          res.on('end', () => {
            let json: unknown;
            try {
              json = JSON.parse(text);
            } catch {
              json = undefined;
            }
            resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
          });
        });
        req.on('error', reject);
        req.end(body);
      });
    },
    watchLines(path, o) {
      return new Promise((resolve, reject) => {
        const events: unknown[] = [];
        const req = request(options('GET', path, o.as, o.accept ? { accept: o.accept } : {}), (res) => {
          let buf = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => {
            buf += c;
            for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
              events.push(JSON.parse(buf.slice(0, nl)));
              buf = buf.slice(nl + 1);
            }
            if (o.until(events)) {
              clearTimeout(timer);
              req.destroy();
              resolve(events);
            }
          });
          res.on('end', () => {
            clearTimeout(timer);
            resolve(events);
          });
        });
        const timer = setTimeout(() => {
          req.destroy();
          reject(
            new Error(
              `watch ${path}: no end within ${o.timeoutMs ?? 10_000} ms; got ${JSON.stringify(events)}`,
            ),
          );
        }, o.timeoutMs ?? 10_000);
        req.on('error', (e) => {
          if (!req.destroyed) reject(e);
        });
        req.end();
      });
    },
  };
}
