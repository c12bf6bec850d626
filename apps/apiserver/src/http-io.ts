/**
 * Reading request bodies and writing answers (I/O on node:http objects): JSON bodies with their
 * Content-Type, Status objects for errors, `Warning` headers (`299 - "text"`, which kubectl prints),
 * and a body size limit (3 MiB, as Kubernetes').
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseYaml } from 'yaml';
import { ApiServerError, statusOf } from './errors.js';
import { bodyTypeOf } from './media.js';

export const MAX_BODY_BYTES = 3 * 1024 * 1024;

/** The request body as text; throws `too-large` past the limit. */
export function readText(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        reject(new ApiServerError('too-large', `the request body is larger than ${limit} bytes`));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** A create or update body: JSON or YAML per Content-Type. */
export async function readObject(req: IncomingMessage): Promise<unknown> {
  const type = bodyTypeOf(req.headers['content-type']);
  const text = await readText(req);
  if (text.trim() === '') throw new ApiServerError('bad-request', 'the request has no body');
  try {
    return type === 'json' ? JSON.parse(text) : parseYaml(text);
  } catch (e) {
    throw new ApiServerError(
      'bad-request',
      `the request body is not valid ${type.toUpperCase()}: ${(e as Error).message}`,
    );
  }
}

/** Kubernetes' warning header value: code 299, agent `-`, the text quoted. */
export function warningHeader(text: string): string {
  return `299 - ${JSON.stringify(text.replace(/[\r\n]+/g, ' '))}`;
}

export function sendJson(
  res: ServerResponse,
  code: number,
  body: unknown,
  opts: { contentType?: string; warnings?: readonly string[]; headers?: Record<string, string> } = {},
): void {
  const text = `${JSON.stringify(body)}\n`;
  res.statusCode = code;
  res.setHeader('Content-Type', opts.contentType ?? 'application/json');
  res.setHeader('Cache-Control', 'no-cache, private');
  for (const [k, v] of Object.entries(opts.headers ?? {})) res.setHeader(k, v);
  if (opts.warnings && opts.warnings.length > 0) res.setHeader('Warning', opts.warnings.map(warningHeader));
  res.end(text);
}

export function sendError(res: ServerResponse, e: ApiServerError): void {
  const status = statusOf(e);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, status.code, status);
}

export function sendText(res: ServerResponse, code: number, text: string): void {
  res.statusCode = code;
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.end(text);
}
