/** What the stores share about `KVStore.writeAll`: which precondition broke, named as single writes do. */
import { DatastoreError } from '../errors.js';
import type { KVWrite } from './kv-store.js';
import { parseRevision } from './revision.js';

/**
 * The error of the first write of a `writeAll` whose precondition does not hold against the keys'
 * current mod revisions (undefined: absent), as `create`/`update` would give it alone; undefined
 * when they all hold.
 */
export function failedWrite(
  writes: readonly KVWrite[],
  current: readonly (number | string | undefined)[],
): DatastoreError | undefined {
  for (const [i, w] of writes.entries()) {
    const cur = current[i];
    if (w.modRevision === undefined) {
      if (cur !== undefined) return new DatastoreError('already-exists', `key ${w.key} already exists`);
    } else if (cur === undefined) {
      return new DatastoreError('not-found', `key ${w.key} does not exist`);
    } else if (String(cur) !== String(parseRevision(w.modRevision, 'modRevision'))) {
      return new DatastoreError('conflict', `key ${w.key} is at revision ${cur}, not ${w.modRevision}`);
    }
  }
  return undefined;
}

/** The error of a `writeAll` that etcd refused, from the keys' revisions read in its failure branch. */
export function transactionFailure(
  writes: readonly KVWrite[],
  current: readonly (number | string | undefined)[],
): DatastoreError {
  return (
    failedWrite(writes, current) ??
    // Changed back in between: still a lost race.
    new DatastoreError('conflict', `keys ${writes.map((w) => w.key).join(', ')} changed during the write`)
  );
}
