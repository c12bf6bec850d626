/**
 * The file `datastore migrate export` writes and `import` reads: upstream's three parts, each
 * ended by a `===` line (see datastore.ts for what goes in each):
 *
 *   <v3 resources as YAML lists> ===  <ClusterInformation as JSON> ===  <{"kvs": [{key, value}]}>
 *
 * Its own module because both imports read it: into etcd (datastore.ts) and into the Kubernetes
 * datastore (import-kdd.ts), which datastore.ts calls; neither needs the other to know the format.
 */
import { ApiError, decodeDocuments } from '@calico-ts/api';
import { CtlError } from '../errors.js';
import type { Obj } from '../output/columns.js';

/** What ends each of the first two parts. */
export const SEPARATOR = '===\n';

export interface ParsedExport {
  resources: Obj[];
  clusterInfo: Obj;
  kvs: { key: string; value: string }[];
}

/** Split and decode an export file (pure). */
export function parseExport(text: string, source: string): ParsedExport {
  const parts = text.split(SEPARATOR);
  if (parts.length !== 3) {
    throw new CtlError(
      'invalid-input',
      `Imported file: ${source} is improperly formatted. Try recreating with 'calicoctl datastore migrate export'`,
    );
  }
  const resources: Obj[] = [];
  try {
    resources.push(...(decodeDocuments(parts[0]!, source) as Obj[]));
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    throw new CtlError('invalid-input', `${source}: cannot decode the resource section: ${e.message}`);
  }
  let clusterInfo: Obj;
  let kvs: { key: string; value: string }[];
  try {
    clusterInfo = JSON.parse(parts[1]!) as Obj;
    const raw = JSON.parse(parts[2]!) as { kvs?: unknown };
    if (!Array.isArray(raw.kvs)) throw new Error('missing "kvs"');
    kvs = raw.kvs.map((kv: unknown, i: number) => {
      const o = kv as Obj;
      if (typeof o?.key !== 'string' || typeof o.value !== 'string')
        throw new Error(`kvs[${i}] needs key and value strings`);
      return { key: o.key, value: o.value };
    });
  } catch (e) {
    throw new CtlError('invalid-input', `${source}: cannot decode: ${(e as Error).message}`);
  }
  return { resources, clusterInfo, kvs };
}
