/**
 * Every request, in Kubernetes' filter order:
 *
 *   health (/healthz /livez /readyz: no authentication) ──► authenticate (401) ──► route (404)
 *     ──► discovery, /openapi, /version: any authenticated user
 *     ──► resources: SubjectAccessReview of the request's attributes (403) ──► handleResource
 *
 * Errors end as metav1 Status objects; nothing else reaches a client. One log line per request at
 * debug, and each failure of the server's own (500) at error.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '@calico-ts/api/log';
import type { User } from './auth/authenticator.js';
import type { ResourceAttributes } from './auth/authorizer.js';
import { aggregatedDiscovery, apiGroup, apiGroupList, apiResourceList } from './discovery.js';
import { ApiServerError } from './errors.js';
import { sendError, sendJson, sendText } from './http-io.js';
import { contentTypeOf, negotiate } from './media.js';
import { documentHash, openApiV2, openApiV3GroupVersion, openApiV3Index } from './openapi.js';
import { requestTarget, type Target } from './request-info.js';
import { handleResource, type ResourceHandlerDeps } from './resource-handler.js';
import type { ServedResource } from './resources.js';

export interface HandlerDeps {
  readonly resources: readonly ServedResource[];
  readonly resourceDeps: ResourceHandlerDeps;
  /** The request's user, or undefined (401). */
  readonly authenticate: (req: IncomingMessage) => Promise<User | undefined>;
  /** Throws Forbidden unless the user may. */
  readonly authorize: (user: User, a: ResourceAttributes) => Promise<void>;
  /** Undefined when ready to serve, else why not. */
  readonly notReady: () => Promise<string | undefined>;
  readonly log: Logger;
  readonly version: string;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

function unauthorized(): ApiServerError {
  return new ApiServerError('unauthorized', 'Unauthorized');
}

export function createRequestHandler(deps: HandlerDeps): Handler {
  const byPlural = new Map(deps.resources.map((r) => [r.plural, r]));
  const v3 = openApiV3GroupVersion(deps.resources);
  const v3Hash = documentHash(v3);
  const serve = async (req: IncomingMessage, res: ServerResponse, url: URL): Promise<string | undefined> => {
    const target = requestTarget(req.method ?? 'GET', url.pathname, url.searchParams, byPlural);
    if (target.kind === 'health') {
      const why = target.check === 'readyz' ? await deps.notReady() : undefined;
      if (why) sendText(res, 503, `[-]${why}\nreadyz check failed\n`);
      else sendText(res, 200, 'ok');
      return undefined;
    }
    const user = await deps.authenticate(req);
    if (!user) throw unauthorized();
    await serveAuthenticated(deps, target, user, req, res, url, { v3, v3Hash });
    return user.name;
  };
  return (req, res) => {
    const started = Date.now();
    const url = new URL(req.url ?? '/', 'https://calico-apiserver');
    serve(req, res, url).then(
      (user) =>
        deps.log.debug(
          { method: req.method, path: url.pathname, code: res.statusCode, user, ms: Date.now() - started },
          'request',
        ),
      (e: unknown) => {
        const err =
          e instanceof ApiServerError
            ? e
            : new ApiServerError('internal', `Internal error occurred: ${(e as Error).message}`, {
                cause: e,
              });
        if (err.code === 'internal')
          deps.log.error({ method: req.method, path: url.pathname, err: err.message }, 'request failed');
        else deps.log.debug({ method: req.method, path: url.pathname, err: err.message }, 'request refused');
        sendError(res, err);
      },
    );
  };
}

async function serveAuthenticated(
  deps: HandlerDeps,
  target: Exclude<Target, { kind: 'health' }>,
  user: User,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  openapi: { v3: Record<string, unknown>; v3Hash: string },
): Promise<void> {
  const readOnly = req.method === 'GET' || req.method === 'HEAD';
  if (target.kind !== 'resource' && !readOnly) {
    throw new ApiServerError(
      'method-not-allowed',
      `the server does not allow ${req.method} on ${url.pathname}`,
    );
  }
  switch (target.kind) {
    case 'version':
      sendJson(res, 200, {
        major: '0',
        minor: '1',
        gitVersion: deps.version,
        platform: `${process.platform}/${process.arch}`,
      });
      return;
    case 'discovery':
      serveDiscovery(deps, target.level, req, res);
      return;
    case 'openapi':
      serveOpenApi(target.document, req, res, url, openapi);
      return;
    case 'resource':
      await deps.authorize(user, {
        verb: target.verb,
        resource: target.resource.plural,
        ...(target.namespace !== undefined ? { namespace: target.namespace } : {}),
        ...(target.name !== undefined && target.verb !== 'watch' ? { name: target.name } : {}),
      });
      await handleResource(deps.resourceDeps, target, req, res, url.searchParams);
      return;
  }
}

function serveDiscovery(
  deps: HandlerDeps,
  level: 'apis' | 'group' | 'version',
  req: IncomingMessage,
  res: ServerResponse,
): void {
  switch (level) {
    case 'apis': {
      const rep = negotiate(req.headers.accept, new Set(['object', 'discovery']));
      if (rep.kind === 'discovery') {
        sendJson(res, 200, aggregatedDiscovery(deps.resources, rep.version), {
          contentType: contentTypeOf(rep, true),
        });
      } else sendJson(res, 200, apiGroupList());
      return;
    }
    case 'group':
      sendJson(res, 200, apiGroup());
      return;
    case 'version':
      sendJson(res, 200, apiResourceList(deps.resources));
      return;
  }
}

function serveOpenApi(
  document: 'v2' | 'v3' | 'v3-group-version',
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  openapi: { v3: Record<string, unknown>; v3Hash: string },
): void {
  switch (document) {
    case 'v2':
      sendJson(res, 200, openApiV2());
      return;
    case 'v3':
      sendJson(res, 200, openApiV3Index(openapi.v3Hash));
      return;
    case 'v3-group-version': {
      const etag = `"${openapi.v3Hash}"`;
      const immutable = url.searchParams.get('hash') === openapi.v3Hash;
      const headers = { ETag: etag, ...(immutable ? { 'Cache-Control': 'public, immutable' } : {}) };
      if (req.headers['if-none-match'] === etag) {
        res.writeHead(304, headers);
        res.end();
        return;
      }
      sendJson(res, 200, openapi.v3, { headers });
      return;
    }
  }
}
