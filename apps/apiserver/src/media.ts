/**
 * Content negotiation (pure): which representation a client asks for in `Accept`, in its order of
 * preference, among what is served. Only JSON is served (kubectl and the aggregator ask for it; a
 * client that accepts protobuf alone is told so):
 *
 *   application/json                                           the objects themselves
 *   application/json;as=Table;v=v1;g=meta.k8s.io               a Table (kubectl get)
 *   application/json;as=PartialObjectMetadata[List];v=v1;g=meta.k8s.io   metadata only
 *                                                              (the garbage collector, namespace
 *                                                              deletion)
 *   application/json;as=APIGroupDiscoveryList;v=v2;g=apidiscovery.k8s.io   aggregated discovery (/apis)
 *
 * `v1beta1` of Table and PartialObjectMetadata and `v2beta1` of discovery are answered too.
 */
import { ApiServerError } from './errors.js';

export type Representation =
  | { readonly kind: 'object' }
  | { readonly kind: 'table'; readonly version: 'v1' | 'v1beta1' }
  | { readonly kind: 'partial-metadata'; readonly version: 'v1' | 'v1beta1' }
  | { readonly kind: 'discovery'; readonly version: 'v2' | 'v2beta1' };

interface MediaRange {
  readonly type: string;
  readonly params: Readonly<Record<string, string>>;
  readonly q: number;
}

function parseAccept(header: string): MediaRange[] {
  const out: MediaRange[] = [];
  for (const part of header.split(',')) {
    const [type, ...ps] = part.split(';').map((s) => s.trim());
    if (!type) continue;
    const params: Record<string, string> = {};
    let q = 1;
    for (const p of ps) {
      const eq = p.indexOf('=');
      if (eq < 0) continue;
      const k = p.slice(0, eq).trim().toLowerCase();
      const v = p
        .slice(eq + 1)
        .trim()
        .replace(/^"|"$/g, '');
      if (k === 'q') q = Number.isFinite(Number(v)) ? Number(v) : 0;
      else params[k] = v;
    }
    out.push({ type: type.toLowerCase(), params, q });
  }
  // Stable: equal q keeps the client's order.
  return out.filter((m) => m.q > 0).sort((a, b) => b.q - a.q);
}

const JSON_TYPES = new Set(['application/json', 'application/*', '*/*']);

function representationOf(
  m: MediaRange,
  allowed: ReadonlySet<Representation['kind']>,
): Representation | undefined {
  if (!JSON_TYPES.has(m.type)) return undefined;
  const { as, v, g } = m.params;
  if (as === undefined) return allowed.has('object') ? { kind: 'object' } : undefined;
  if (g === 'meta.k8s.io' && (v === 'v1' || v === 'v1beta1')) {
    if (as === 'Table' && allowed.has('table')) return { kind: 'table', version: v };
    if (
      (as === 'PartialObjectMetadata' || as === 'PartialObjectMetadataList') &&
      allowed.has('partial-metadata')
    ) {
      return { kind: 'partial-metadata', version: v };
    }
  }
  if (as === 'APIGroupDiscoveryList' && g === 'apidiscovery.k8s.io' && (v === 'v2' || v === 'v2beta1')) {
    return allowed.has('discovery') ? { kind: 'discovery', version: v } : undefined;
  }
  return undefined;
}

/** The representation to answer with; throws `not-acceptable` naming what is served. */
export function negotiate(
  accept: string | undefined,
  allowed: ReadonlySet<Representation['kind']>,
): Representation {
  if (accept === undefined || accept.trim() === '') {
    if (allowed.has('object')) return { kind: 'object' };
  } else {
    for (const m of parseAccept(accept)) {
      const r = representationOf(m, allowed);
      if (r) return r;
    }
  }
  const offered = ['application/json'];
  if (allowed.has('table')) offered.push('application/json;as=Table;v=v1;g=meta.k8s.io');
  if (allowed.has('partial-metadata'))
    offered.push('application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io');
  if (allowed.has('discovery'))
    offered.push('application/json;as=APIGroupDiscoveryList;v=v2;g=apidiscovery.k8s.io');
  throw new ApiServerError(
    'not-acceptable',
    `only the following media types are accepted: ${offered.join(', ')} (Accept: ${accept ?? ''})`,
  );
}

/** The Content-Type of a response in representation `r`. */
export function contentTypeOf(r: Representation, list: boolean): string {
  switch (r.kind) {
    case 'object':
      return 'application/json';
    case 'table':
      return `application/json;as=Table;v=${r.version};g=meta.k8s.io`;
    case 'partial-metadata':
      return `application/json;as=${list ? 'PartialObjectMetadataList' : 'PartialObjectMetadata'};v=${r.version};g=meta.k8s.io`;
    case 'discovery':
      return `application/json;g=apidiscovery.k8s.io;v=${r.version};as=APIGroupDiscoveryList`;
  }
}

/** The body type of a create or update: JSON or YAML; anything else is refused. */
export function bodyTypeOf(contentType: string | undefined): 'json' | 'yaml' {
  const t = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (t === '' || t === 'application/json') return 'json';
  if (t === 'application/yaml' || t === 'application/x-yaml' || t === 'text/yaml') return 'yaml';
  throw new ApiServerError(
    'unsupported-media-type',
    `the body of the request was in an unknown format (${t}) - accepted media types include: application/json, application/yaml`,
  );
}
