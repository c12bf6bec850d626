import { DatastoreError, type DatastoreErrorCode } from '../errors.js';

/**
 * Error classification for `EtcdHttp2KVStore`: etcd's gRPC status codes (from the trailers of a
 * reply) and Node's socket, HTTP/2 and TLS errors. Same vocabulary and wording as the etcd3
 * transport's `classifyEtcdError`, so callers cannot tell the transports apart by their errors.
 */

/** gRPC status codes that etcd answers with (google.golang.org/grpc/codes). */
const GRPC = {
  cancelled: 1,
  invalidArgument: 3,
  deadlineExceeded: 4,
  permissionDenied: 7,
  resourceExhausted: 8,
  failedPrecondition: 9,
  outOfRange: 11,
  unavailable: 14,
  unauthenticated: 16,
} as const;

/** An error reply from etcd: its gRPC status code and message. */
export class EtcdStatusError extends Error {
  readonly grpcCode: number;
  constructor(grpcCode: number, message: string) {
    super(message);
    this.name = 'EtcdStatusError';
    this.grpcCode = grpcCode;
  }
}

const AUTH_TEXT =
  /permission denied|authentication failed|invalid auth token|user name (?:not found|is empty)|auth: /i;
/** Node's codes and OpenSSL's reasons for a handshake the server or we refused. */
const TLS_FAILURE = /certificate|SSL routines|alert|handshake|self[- ]signed|unable to verify/i;
const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT)/;

export function classifyEtcdHttp2Error(e: unknown, context: string): DatastoreError {
  if (e instanceof DatastoreError) return e;
  const err = e instanceof Error ? e : new Error(String(e));
  const code = errorCode(err);
  return new DatastoreError(code, `${context}: ${describe(code, err)}`, { cause: err });
}

function errorCode(err: Error): DatastoreErrorCode {
  if (err instanceof EtcdStatusError) {
    if (AUTH_TEXT.test(err.message)) return 'unauthorized';
    switch (err.grpcCode) {
      case GRPC.unauthenticated:
      case GRPC.permissionDenied:
        return 'unauthorized';
      case GRPC.outOfRange:
        return /compacted/.test(err.message) ? 'compacted' : 'invalid';
      case GRPC.invalidArgument:
        return 'invalid';
      case GRPC.unavailable:
      case GRPC.deadlineExceeded:
      case GRPC.cancelled:
      case GRPC.resourceExhausted:
        return 'unavailable';
      default:
        if (/request is too large|key is not provided|too many operations/i.test(err.message))
          return 'invalid';
        return 'unavailable';
    }
  }
  const sysCode = (err as NodeJS.ErrnoException).code ?? '';
  if (TLS_CODE.test(sysCode) || (sysCode === 'EPROTO' && TLS_FAILURE.test(err.message)))
    return 'unauthorized';
  if (/certificate required|alert bad certificate|alert unknown ca/i.test(err.message)) return 'unauthorized';
  // Refused, reset, timed out, unreachable, a reply that is not etcd's: the store did not answer.
  return 'unavailable';
}

function describe(code: DatastoreErrorCode, err: Error): string {
  const sysCode = (err as NodeJS.ErrnoException).code;
  const base = err.message.replace(/\s+/g, ' ').trim();
  const text = sysCode && !base.includes(sysCode) ? `${sysCode}: ${base}` : base;
  switch (code) {
    case 'unauthorized':
      return err instanceof EtcdStatusError
        ? `access denied: ${text}`
        : `TLS handshake rejected (check the CA, client certificate and key): ${text}`;
    case 'unavailable':
      return `etcd unavailable: ${text}`;
    default:
      return text;
  }
}
