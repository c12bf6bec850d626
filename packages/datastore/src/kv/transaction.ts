/** What the etcd stores share about `KVStore.writeAll`. */
import { DatastoreError } from '../errors.js';
import type { KVWrite } from './kv-store.js';
import { parseRevision } from './revision.js';

/**
 * Which write of a failed `writeAll` broke it, from the keys' current mod revisions (undefined:
 * absent), as the error `create`/`update` would give for it alone.
 */
export function transactionFailure(
  writes: readonly KVWrite[],
  current: readonly (number | string | undefined)[],
): DatastoreError {
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
  // Changed back in between: still a lost race.
  return new DatastoreError(
    'conflict',
    `keys ${writes.map((w) => w.key).join(', ')} changed during the write`,
  );
}
