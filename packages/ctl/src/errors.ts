/**
 * calicoctl's closed error vocabulary. Every failure a command reports is a `CtlError`; the code
 * says what kind of failure it was, the message is what the user reads (upstream's wording where
 * upstream has one). Every code exits 1, as upstream calicoctl does: scripts test for non-zero.
 */
export const CTL_ERROR_CODES = [
  'usage', // bad flags or arguments
  'invalid-input', // a file could not be read, decoded or validated; nothing was written
  'not-found', // a named resource does not exist
  'already-exists', // a create found the resource there already
  'conflict', // the resource changed since it was read (a stale resourceVersion)
  'failed', // the datastore refused or failed an operation
  'version-mismatch', // client and cluster versions differ (see --allow-version-mismatch)
  'config', // client configuration could not be loaded
  'unsupported', // the operation is not available (read-only kind, unsupported backend)
] as const;
export type CtlErrorCode = (typeof CTL_ERROR_CODES)[number];

export class CtlError extends Error {
  readonly code: CtlErrorCode;
  constructor(code: CtlErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CtlError';
    this.code = code;
  }
}

/** Exit status for a finished command: 0 on success, 1 for every error (as upstream). */
export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
