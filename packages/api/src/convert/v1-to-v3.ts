/**
 * Calico v2.x resources (`apiVersion: v1`, kinds `ipPool`, `policy`, `profile`, `hostEndpoint`,
 * `workloadEndpoint`, `node`, `bgpPeer`, `tier`) → projectcalico.org/v3, as `calicoctl convert`
 * did up to v3.31 (`libcalico-go/lib/upgrade/converters/*.go`: v1 API → v1 backend → v3 API).
 *
 * Accepted shapes: one document, a YAML/JSON list of documents, or a `<kind>List` document with
 * `items`. Unknown fields are refused (upstream read v1 documents strictly). The output is not
 * validated or defaulted beyond what the upstream converters set; run `validateResource` on it.
 *
 * This file reads the document shapes and dispatches on kind through `CONVERTERS`; each kind's
 * conversion is in `v1/`, grouped as upstream groups the resources:
 *
 *   ipPool, bgpPeer                 v1/network.ts
 *   policy, profile, tier           v1/policy.ts      (rules: v1-rules.ts)
 *   hostEndpoint, workloadEndpoint  v1/endpoints.ts
 *   node                            v1/node.ts
 *   shared readers, note lines      v1/readers.ts, v1/converted.ts
 */
import { ApiError } from '../errors.js';
import type { Resource } from '../resources/index.js';
import { FieldPath, isObj, optList, readObj } from './fields.js';
import { API_V3, type KindConverter } from './v1/converted.js';
import { convertHostEndpoint, convertWorkloadEndpoint } from './v1/endpoints.js';
import { convertBGPPeer, convertIPPool } from './v1/network.js';
import { convertNode } from './v1/node.js';
import { convertPolicy, convertProfile, convertTier } from './v1/policy.js';

/** The Calico v1 kinds `convertV1ToV3` converts, spelled as v1 spelled them. */
export const V1_KINDS = [
  'ipPool',
  'policy',
  'profile',
  'hostEndpoint',
  'workloadEndpoint',
  'node',
  'bgpPeer',
  'tier',
] as const;
/** One of `V1_KINDS`. */
export type V1Kind = (typeof V1_KINDS)[number];

function isV1Kind(k: string): k is V1Kind {
  return (V1_KINDS as readonly string[]).includes(k);
}

/** The v1 kind a `<kind>List` names, if it names one. */
function listItemKind(k: string): V1Kind | undefined {
  if (!k.endsWith('List')) return undefined;
  const item = k.slice(0, -'List'.length);
  return isV1Kind(item) ? item : undefined;
}

/**
 * True for a Calico v1 document (`apiVersion: v1` and one of the v1 kinds, spelled exactly as v1
 * spelled them, so Kubernetes' own `v1` kinds such as `Node` or `List` are not mistaken for one),
 * a `<kind>List` of them, or a non-empty list whose every element is one.
 */
export function isV1Document(doc: unknown): boolean {
  if (Array.isArray(doc)) return doc.length > 0 && doc.every(isV1Document);
  if (!isObj(doc) || doc.apiVersion !== 'v1' || typeof doc.kind !== 'string') return false;
  return isV1Kind(doc.kind) || listItemKind(doc.kind) !== undefined;
}

/** What `convertV1ToV3` made of a v1 document. */
export interface V1ConversionResult {
  /** The v3 resources, in the order of the v1 documents. */
  resources: Resource[];
  /** One line per converted resource, plus lines about anything renamed or rewritten on the way. */
  notes: string[];
}

/** Convert a v1 document (or list of them) to v3 resources. Throws `ApiError('conversion-failed')`. */
export function convertV1ToV3(doc: unknown): V1ConversionResult {
  const out: V1ConversionResult = { resources: [], notes: [] };
  if (Array.isArray(doc)) {
    if (doc.length === 0)
      throw new ApiError('conversion-failed', 'cannot convert an empty list of v1 documents');
    doc.forEach((d, i) => {
      convertOne(d, `[${i}]`, undefined, out);
    });
  } else {
    convertOne(doc, '', undefined, out);
  }
  return out;
}

function convertOne(
  doc: unknown,
  path: string,
  impliedKind: V1Kind | undefined,
  out: V1ConversionResult,
): void {
  const where = path ? ` (${path})` : '';
  if (!isObj(doc)) {
    throw new ApiError('conversion-failed', `cannot convert${where}: a v1 document must be a map`);
  }
  const kind = doc.kind ?? impliedKind;
  const apiVersion = doc.apiVersion ?? (impliedKind ? 'v1' : undefined);
  if (apiVersion !== 'v1' || typeof kind !== 'string') {
    throw new ApiError(
      'conversion-failed',
      `cannot convert${where}: not a Calico v1 document (want apiVersion: v1 and kind one of ${V1_KINDS.join(', ')}; got apiVersion ${JSON.stringify(apiVersion)}, kind ${JSON.stringify(kind)})`,
    );
  }
  if (impliedKind && kind !== impliedKind) {
    throw new FieldPath(`v1 ${impliedKind}List`, `${path}.kind`).error(
      `item of a ${impliedKind}List must be kind ${impliedKind}`,
    );
  }
  const itemKind = listItemKind(kind);
  if (itemKind && !impliedKind) {
    const at = new FieldPath(`v1 ${kind}`, path);
    const list = readObj(doc, at, ['apiVersion', 'kind', 'metadata', 'items'], false);
    const items = optList(list, 'items', at) ?? [];
    items.forEach((item, i) => {
      convertOne(item, `${path ? `${path}.` : ''}items[${i}]`, itemKind, out);
    });
    return;
  }
  if (!isV1Kind(kind)) {
    throw new FieldPath('v1 document', path ? `${path}.kind` : 'kind').error(
      `conversion of kind ${JSON.stringify(kind)} is not supported (v1 kinds: ${V1_KINDS.join(', ')})`,
    );
  }
  const at = new FieldPath(`v1 ${kind}`, path);
  readObj(doc, at, ['apiVersion', 'kind', 'metadata', 'spec'], false);
  const c = CONVERTERS[kind as V1Kind](doc, at);
  const md = c.resource.metadata;
  const v3Name = md.namespace ? `${md.namespace}/${md.name}` : md.name;
  out.resources.push(c.resource);
  out.notes.push(`converted v1 ${kind} ${c.from} to ${API_V3} ${c.resource.kind} ${v3Name}`, ...c.notes);
}

const CONVERTERS: Record<V1Kind, KindConverter> = {
  ipPool: convertIPPool,
  policy: convertPolicy,
  profile: convertProfile,
  hostEndpoint: convertHostEndpoint,
  workloadEndpoint: convertWorkloadEndpoint,
  node: convertNode,
  bgpPeer: convertBGPPeer,
  tier: convertTier,
};
