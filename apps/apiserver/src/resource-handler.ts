/**
 * One request for a resource, once it is authenticated and authorized: the query and body read,
 * the verb run on the `ResourceStore` (or the watch streamed), the answer written in the
 * representation the client accepts (the objects, a Table, PartialObjectMetadata).
 *
 *   get     200 object            list    200 <Kind>List (limit/continue, selectors)
 *   create  201 object            update  200 object       patch  200 object
 *   delete  200 the deleted object                         deletecollection  200 <Kind>List of them
 *   watch   200 a stream of WatchEvents, one JSON object a line, until timeoutSeconds (default
 *           30–60 min, as Kubernetes spreads them), the client leaves, or the revision is gone
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '@calico-ts/api/log';
import type { Datastore } from '@calico-ts/datastore';
import { ApiServerError } from './errors.js';
import { readObject, readText, sendJson } from './http-io.js';
import { contentTypeOf, negotiate, type Representation } from './media.js';
import { patchTypeOf } from './patch.js';
import type { ResourceTarget } from './request-info.js';
import { parseFieldSelector, parseLabelSelector } from './selectors.js';
import { type ListQuery, listObject, type ResourceStore } from './storage.js';
import {
  type IncludeObject,
  type ListMeta,
  parseIncludeObject,
  partialMetadata,
  partialMetadataList,
  tableOf,
} from './table.js';
import { watchObjects } from './watch.js';

type Obj = Record<string, unknown>;

export interface ResourceHandlerDeps {
  readonly store: ResourceStore;
  readonly datastore: Datastore;
  readonly log: Logger;
  /** A watch's length when the client sets no timeoutSeconds; default 30–60 min, random. */
  readonly watchTimeoutMs?: () => number;
}

const REPRESENTATIONS = new Set<Representation['kind']>(['object', 'table', 'partial-metadata']);

function dryRunOf(query: URLSearchParams): boolean {
  const values = query.getAll('dryRun');
  for (const v of values) {
    if (v !== 'All')
      throw new ApiServerError(
        'bad-request',
        `unsupported dry run value ${JSON.stringify(v)}: use dryRun=All`,
      );
  }
  return values.length > 0;
}

function listQuery(t: ResourceTarget, query: URLSearchParams): ListQuery & { filtered: boolean } {
  const labelText = query.get('labelSelector');
  let fieldText = query.get('fieldSelector');
  // The /watch/PLURAL/NAME form: a watch of one object.
  if (t.name !== undefined) fieldText = [fieldText, `metadata.name=${t.name}`].filter(Boolean).join(',');
  return {
    ...(t.namespace !== undefined ? { namespace: t.namespace } : {}),
    labels: parseLabelSelector(labelText),
    fields: parseFieldSelector(fieldText),
    limit: query.get('limit'),
    continue: query.get('continue'),
    filtered: !!(labelText?.trim() || fieldText?.trim()),
  };
}

/** One object in the representation `rep`. */
function renderOne(rep: Representation, o: Obj, include: IncludeObject): Obj {
  switch (rep.kind) {
    case 'table':
      return tableOf([o], { include, version: rep.version });
    case 'partial-metadata':
      return partialMetadata(o, rep.version);
    default:
      return o;
  }
}

function renderList(
  t: ResourceTarget,
  rep: Representation,
  items: Obj[],
  list: ListMeta,
  include: IncludeObject,
): Obj {
  switch (rep.kind) {
    case 'table':
      return tableOf(items, { include, version: rep.version, list });
    case 'partial-metadata':
      return partialMetadataList(items, list, rep.version);
    default:
      return listObject(t.resource, items, list);
  }
}

interface DeleteBody {
  preconditions?: { resourceVersion?: string; uid?: string };
  dryRun?: string[];
}

async function deleteBody(req: IncomingMessage): Promise<DeleteBody> {
  const text = await readText(req);
  if (text.trim() === '') return {};
  try {
    const v = JSON.parse(text) as unknown;
    return v !== null && typeof v === 'object' ? (v as DeleteBody) : {};
  } catch (e) {
    throw new ApiServerError('bad-request', `the DeleteOptions body is not JSON: ${(e as Error).message}`);
  }
}

/** Serve `t` (already authorized). */
export async function handleResource(
  deps: ResourceHandlerDeps,
  t: ResourceTarget,
  req: IncomingMessage,
  res: ServerResponse,
  query: URLSearchParams,
): Promise<void> {
  const rep = negotiate(req.headers.accept, REPRESENTATIONS);
  const include = parseIncludeObject(query.get('includeObject'));
  const ctype = (list: boolean) => contentTypeOf(rep, list);
  const { store } = deps;
  const ns = t.namespace;
  const name = t.name ?? '';
  switch (t.verb) {
    case 'get':
      sendJson(res, 200, renderOne(rep, await store.get(t.resource, name, ns), include), {
        contentType: ctype(false),
      });
      return;
    case 'list': {
      const { items, list } = await store.list(t.resource, listQuery(t, query));
      sendJson(res, 200, renderList(t, rep, items, list, include), { contentType: ctype(true) });
      return;
    }
    case 'watch':
      await streamWatch(deps, t, res, query, rep, include);
      return;
    case 'create': {
      const dryRun = dryRunOf(query);
      const w = await store.create(t.resource, ns, await readObject(req), dryRun);
      sendJson(res, 201, renderOne(rep, w.object, include), {
        contentType: ctype(false),
        warnings: w.warnings,
      });
      return;
    }
    case 'update': {
      const dryRun = dryRunOf(query);
      const w = await store.update(t.resource, ns, name, await readObject(req), dryRun);
      sendJson(res, 200, renderOne(rep, w.object, include), {
        contentType: ctype(false),
        warnings: w.warnings,
      });
      return;
    }
    case 'patch': {
      const type = patchTypeOf(req.headers['content-type']);
      const dryRun = dryRunOf(query);
      const w = await store.patch(t.resource, ns, name, type, await readText(req), dryRun);
      sendJson(res, 200, renderOne(rep, w.object, include), {
        contentType: ctype(false),
        warnings: w.warnings,
      });
      return;
    }
    case 'delete': {
      const body = await deleteBody(req);
      const dryRun = dryRunOf(query) || (body.dryRun ?? []).includes('All');
      const rv = body.preconditions?.resourceVersion;
      const uid = body.preconditions?.uid;
      const o = await store.delete(t.resource, ns, name, {
        dryRun,
        ...(rv ? { resourceVersion: rv } : {}),
        ...(uid ? { uid } : {}),
      });
      sendJson(res, 200, renderOne(rep, o, include), { contentType: ctype(false) });
      return;
    }
    case 'deletecollection': {
      const body = await deleteBody(req);
      const dryRun = dryRunOf(query) || (body.dryRun ?? []).includes('All');
      const { items, list } = await store.deleteCollection(t.resource, listQuery(t, query), dryRun);
      sendJson(res, 200, renderList(t, rep, items, list, include), { contentType: ctype(true) });
      return;
    }
  }
}

function watchTimeout(deps: ResourceHandlerDeps, query: URLSearchParams): number {
  const text = query.get('timeoutSeconds');
  if (text !== null && text !== '') {
    if (!/^\d+$/.test(text))
      throw new ApiServerError(
        'bad-request',
        `timeoutSeconds must be a whole number, got ${JSON.stringify(text)}`,
      );
    return Number(text) * 1000;
  }
  return deps.watchTimeoutMs?.() ?? (30 + Math.random() * 30) * 60_000;
}

async function streamWatch(
  deps: ResourceHandlerDeps,
  t: ResourceTarget,
  res: ServerResponse,
  query: URLSearchParams,
  rep: Representation,
  include: IncludeObject,
): Promise<void> {
  const q = listQuery(t, query);
  const timeoutMs = watchTimeout(deps, query);
  const rv = query.get('resourceVersion');
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), timeoutMs);
  res.once('close', () => stop.abort());
  res.statusCode = 200;
  res.setHeader('Content-Type', contentTypeOf(rep, false));
  res.setHeader('Cache-Control', 'no-cache, private');
  res.flushHeaders();
  try {
    const events = watchObjects(
      deps.datastore,
      t.resource,
      { ...q, ...(rv !== null ? { resourceVersion: rv } : {}), signal: stop.signal },
      deps.log,
    );
    for await (const ev of events) {
      if (stop.signal.aborted) break;
      const object = ev.type === 'ERROR' ? ev.object : renderOne(rep, ev.object as Obj, include);
      res.write(`${JSON.stringify({ type: ev.type, object })}\n`);
      if (ev.type === 'ERROR') break;
    }
  } finally {
    clearTimeout(timer);
    stop.abort();
    res.end();
  }
}
