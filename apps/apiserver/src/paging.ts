/**
 * `limit` and `continue` of a list (pure). Items are ordered by namespace, then name; a page ends
 * after `limit` items and its continue token names the last key returned, so the next page starts
 * after it. Unlike Kubernetes' (an etcd snapshot), a later page is read fresh: an object created
 * or deleted between pages shows or not by its key, nothing is returned twice.
 */
import { ApiServerError } from './errors.js';

type Obj = Record<string, unknown>;

export interface Page {
  readonly items: Obj[];
  /** Token for the next page; absent on the last one. */
  readonly continue?: string;
  /** How many items follow this page. */
  readonly remainingItemCount?: number;
}

interface Token {
  readonly v: 1;
  readonly after: string;
}

function keyOf(o: Obj): string {
  const m = (o.metadata ?? {}) as Obj;
  return `${String(m.namespace ?? '')}/${String(m.name ?? '')}`;
}

/** The items in page order (namespace, then name). */
export function sortItems(items: readonly Obj[]): Obj[] {
  return [...items].sort((a, b) => {
    const ka = keyOf(a);
    const kb = keyOf(b);
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  });
}

function parseToken(text: string): Token {
  try {
    const t = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as Token;
    if (t.v === 1 && typeof t.after === 'string') return t;
  } catch {
    // fall through
  }
  throw new ApiServerError('bad-request', 'continue key is not valid: it was not made by this server');
}

function parseLimit(text: string | null): number | undefined {
  if (text === null || text === '' || text === '0') return undefined;
  if (!/^\d+$/.test(text))
    throw new ApiServerError('bad-request', `limit must be a whole number, got ${JSON.stringify(text)}`);
  return Number(text);
}

/** One page of `sorted` (from `sortItems`) for the `limit` and `continue` query values. */
export function pageOf(sorted: readonly Obj[], limitText: string | null, continueText: string | null): Page {
  const limit = parseLimit(limitText);
  let start = 0;
  if (continueText) {
    const { after } = parseToken(continueText);
    start = sorted.findIndex((o) => keyOf(o) > after);
    if (start < 0) start = sorted.length;
  }
  if (limit === undefined || start + limit >= sorted.length) return { items: sorted.slice(start) };
  const items = sorted.slice(start, start + limit);
  const token: Token = { v: 1, after: keyOf(items[items.length - 1]!) };
  return {
    items,
    continue: Buffer.from(JSON.stringify(token)).toString('base64url'),
    remainingItemCount: sorted.length - start - limit,
  };
}
