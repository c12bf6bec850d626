/**
 * calico-apiserver's closed error vocabulary and the one table from each code to what a Kubernetes
 * client sees: an HTTP status and a metav1 Status `reason`. Every failure a request ends with is an
 * `ApiServerError`; foreign errors (calicoctl's, the datastore's) become one in `classify.ts`.
 */

export const API_SERVER_ERROR_CODES = [
  'bad-request', // the request itself is malformed (query, body, names that disagree)
  'unauthorized', // no identity could be established
  'forbidden', // the identity may not do this (SubjectAccessReview)
  'not-found', // no such resource, object or path
  'already-exists', // a create of something that exists
  'conflict', // a stale resourceVersion
  'invalid', // the object breaks Calico's validation; nothing was written
  'method-not-allowed', // the verb is not served here (read-only kinds, calicoctl's refusals)
  'not-acceptable', // no representation the client accepts
  'unsupported-media-type', // a body or patch type that is not served
  'expired', // a watch from a revision the datastore no longer keeps
  'too-large', // a request body over the limit
  'internal', // anything else that failed here
  'unavailable', // the datastore or the Kubernetes API could not be reached
] as const;
export type ApiServerErrorCode = (typeof API_SERVER_ERROR_CODES)[number];

/** HTTP status and Status reason of each code. */
export const STATUS_OF: Readonly<
  Record<ApiServerErrorCode, { readonly code: number; readonly reason: string }>
> = {
  'bad-request': { code: 400, reason: 'BadRequest' },
  unauthorized: { code: 401, reason: 'Unauthorized' },
  forbidden: { code: 403, reason: 'Forbidden' },
  'not-found': { code: 404, reason: 'NotFound' },
  'already-exists': { code: 409, reason: 'AlreadyExists' },
  conflict: { code: 409, reason: 'Conflict' },
  invalid: { code: 422, reason: 'Invalid' },
  'method-not-allowed': { code: 405, reason: 'MethodNotAllowed' },
  'not-acceptable': { code: 406, reason: 'NotAcceptable' },
  'unsupported-media-type': { code: 415, reason: 'UnsupportedMediaType' },
  expired: { code: 410, reason: 'Expired' },
  'too-large': { code: 413, reason: 'RequestEntityTooLarge' },
  internal: { code: 500, reason: 'InternalError' },
  unavailable: { code: 503, reason: 'ServiceUnavailable' },
};

/** One field's broken rule, as a Status cause. */
export interface StatusCause {
  readonly reason: string;
  readonly message: string;
  readonly field?: string;
}

/** metav1.StatusDetails. */
export interface StatusDetails {
  readonly name?: string;
  readonly group?: string;
  readonly kind?: string;
  readonly causes?: readonly StatusCause[];
}

export class ApiServerError extends Error {
  readonly code: ApiServerErrorCode;
  readonly details: StatusDetails | undefined;
  constructor(
    code: ApiServerErrorCode,
    message: string,
    options?: { details?: StatusDetails; cause?: unknown },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ApiServerError';
    this.code = code;
    this.details = options?.details;
  }
}

/** A metav1 Status object. */
export interface Status {
  readonly kind: 'Status';
  readonly apiVersion: 'v1';
  readonly metadata: Record<string, never>;
  readonly status: 'Failure' | 'Success';
  readonly message?: string;
  readonly reason?: string;
  readonly details?: StatusDetails;
  readonly code: number;
}

/** The Status a client is sent for an error. */
export function statusOf(e: ApiServerError): Status {
  const { code, reason } = STATUS_OF[e.code];
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: e.message,
    reason,
    ...(e.details ? { details: e.details } : {}),
    code,
  };
}
