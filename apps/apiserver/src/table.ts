/**
 * The meta.k8s.io Table of `kubectl get` and the PartialObjectMetadata forms (pure). The columns
 * are upstream calico-apiserver's, Kubernetes' default for a resource without printer columns:
 * NAME and CREATED AT (RFC 3339). Each row carries, per `includeObject`, nothing (`None`), the
 * object's PartialObjectMetadata (`Metadata`, the default; kubectl reads the namespace from it)
 * or the object itself (`Object`).
 */
import { ApiServerError } from './errors.js';

type Obj = Record<string, unknown>;

export type IncludeObject = 'None' | 'Metadata' | 'Object';

/** What a list carries beside its items. */
export interface ListMeta {
  readonly resourceVersion?: string;
  readonly continue?: string;
  readonly remainingItemCount?: number;
}

const COLUMNS = [
  {
    name: 'Name',
    type: 'string',
    format: 'name',
    description:
      'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated.',
    priority: 0,
  },
  {
    name: 'Created At',
    type: 'date',
    format: '',
    description:
      'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.',
    priority: 0,
  },
];

/** `includeObject` from the query; absent is `Metadata`. */
export function parseIncludeObject(text: string | null): IncludeObject {
  if (text === null || text === '') return 'Metadata';
  if (text === 'None' || text === 'Metadata' || text === 'Object') return text;
  throw new ApiServerError(
    'bad-request',
    `includeObject must be None, Metadata or Object, got ${JSON.stringify(text)}`,
  );
}

function metaOf(o: Obj): Obj {
  return (o.metadata ?? {}) as Obj;
}

/** An object's PartialObjectMetadata. */
export function partialMetadata(o: Obj, version: 'v1' | 'v1beta1' = 'v1'): Obj {
  return { kind: 'PartialObjectMetadata', apiVersion: `meta.k8s.io/${version}`, metadata: metaOf(o) };
}

/** A PartialObjectMetadataList of the items. */
export function partialMetadataList(
  items: readonly Obj[],
  list: ListMeta,
  version: 'v1' | 'v1beta1' = 'v1',
): Obj {
  return {
    kind: 'PartialObjectMetadataList',
    apiVersion: `meta.k8s.io/${version}`,
    metadata: listMetadata(list),
    items: items.map((o) => partialMetadata(o, version)),
  };
}

export function listMetadata(list: ListMeta): Obj {
  return {
    ...(list.resourceVersion !== undefined ? { resourceVersion: list.resourceVersion } : {}),
    ...(list.continue !== undefined ? { continue: list.continue } : {}),
    ...(list.remainingItemCount !== undefined ? { remainingItemCount: list.remainingItemCount } : {}),
  };
}

function rowObject(o: Obj, include: IncludeObject, version: 'v1' | 'v1beta1'): Obj | undefined {
  switch (include) {
    case 'None':
      return undefined;
    case 'Metadata':
      return partialMetadata(o, version);
    case 'Object':
      return o;
  }
}

/** A Table of the items, one row each, in their order. */
export function tableOf(
  items: readonly Obj[],
  opts: { include: IncludeObject; version?: 'v1' | 'v1beta1'; list?: ListMeta },
): Obj {
  const version = opts.version ?? 'v1';
  return {
    kind: 'Table',
    apiVersion: `meta.k8s.io/${version}`,
    metadata: listMetadata(opts.list ?? {}),
    columnDefinitions: COLUMNS,
    rows: items.map((o) => {
      const m = metaOf(o);
      const object = rowObject(o, opts.include, version);
      return {
        cells: [
          String(m.name ?? ''),
          typeof m.creationTimestamp === 'string' ? m.creationTimestamp : '<unknown>',
        ],
        ...(object ? { object } : {}),
      };
    }),
  };
}
