import { isBrokenCircuitError } from 'cockatiel';
import {
  ClientClosedError,
  EtcdAuthenticationFailedError,
  EtcdInvalidAuthTokenError,
  EtcdPermissionDeniedError,
  EtcdUserNotFoundError,
  EtcdWatchStreamEnded,
  GRPCCancelledError,
  GRPCDeadlineExceededError,
  GRPCInvalidArgumentError,
  GRPCOutOfRangeError,
  GRPCResourceExhastedError,
  GRPCUnauthenticatedError,
  GRPCUnavailableError,
} from 'etcd3';
import { DatastoreError, type DatastoreErrorCode } from '../errors.js';

/** TLS handshake failures surface from gRPC as UNAVAILABLE with the OpenSSL reason in the text. */
const TLS_FAILURE = /certificate|SSL routines|alert|handshake|self[- ]signed|unable to verify/i;

/**
 * Classify an error from the `etcd3` client (or gRPC under it) into the datastore vocabulary.
 * This is the only place that looks at etcd's error types and texts; callers branch on `code`.
 */
export function classifyEtcdError(e: unknown, context: string): DatastoreError {
  if (e instanceof DatastoreError) return e;
  const err = e instanceof Error ? e : new Error(String(e));
  const code = etcdErrorCode(err);
  return new DatastoreError(code, `${context}: ${describe(code, err)}`, { cause: err });
}

function etcdErrorCode(err: Error): DatastoreErrorCode {
  if (
    err instanceof GRPCUnauthenticatedError ||
    err instanceof EtcdPermissionDeniedError ||
    err instanceof EtcdAuthenticationFailedError ||
    err instanceof EtcdInvalidAuthTokenError ||
    err instanceof EtcdUserNotFoundError
  ) {
    return 'unauthorized';
  }
  if (err instanceof GRPCOutOfRangeError) {
    if (/compacted/.test(err.message)) return 'compacted';
    return 'invalid';
  }
  if (err instanceof GRPCInvalidArgumentError) return 'invalid';
  if (err instanceof GRPCUnavailableError && TLS_FAILURE.test(err.message)) return 'unauthorized';
  if (
    err instanceof GRPCUnavailableError ||
    err instanceof GRPCDeadlineExceededError ||
    err instanceof GRPCCancelledError ||
    err instanceof GRPCResourceExhastedError ||
    err instanceof EtcdWatchStreamEnded ||
    err instanceof ClientClosedError ||
    isBrokenCircuitError(err)
  ) {
    return 'unavailable';
  }
  if (/request is too large|key is not provided|too many operations/i.test(err.message)) return 'invalid';
  if (/permission denied|authentication failed|invalid auth token/i.test(err.message)) return 'unauthorized';
  // Anything else from the transport (resets, unknown gRPC states) means the store could not
  // answer this request.
  return 'unavailable';
}

function describe(code: DatastoreErrorCode, err: Error): string {
  const text = err.message.replace(/\s+/g, ' ').trim();
  switch (code) {
    case 'unauthorized':
      return TLS_FAILURE.test(text)
        ? `TLS handshake rejected (check the CA, client certificate and key): ${text}`
        : `access denied: ${text}`;
    case 'unavailable':
      return `etcd unavailable: ${text}`;
    default:
      return text;
  }
}
