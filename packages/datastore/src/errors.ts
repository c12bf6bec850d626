/**
 * The datastore's closed error vocabulary. Foreign errors (etcd, gRPC, fs) are classified once, at
 * the backend edge; callers branch on `code`.
 */
export const DATASTORE_ERROR_CODES = [
  'not-found', // the resource or record does not exist
  'already-exists', // create of something that exists
  'conflict', // compare-and-swap failed: the stored revision is not the one given
  'invalid', // the request itself is wrong (missing resourceVersion on update, bad name, validation)
  'unavailable', // the datastore could not be reached or timed out
  'compacted', // a watch asked for a revision the store no longer keeps
  'unauthorized', // TLS or auth rejected
  'config', // client configuration is wrong or incomplete
  'unsupported', // the operation is not available on this backend
] as const;
export type DatastoreErrorCode = (typeof DATASTORE_ERROR_CODES)[number];

export class DatastoreError extends Error {
  readonly code: DatastoreErrorCode;
  constructor(code: DatastoreErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DatastoreError';
    this.code = code;
  }
}

export function isDatastoreError(e: unknown, code?: DatastoreErrorCode): e is DatastoreError {
  return e instanceof DatastoreError && (code === undefined || e.code === code);
}
