/**
 * The ipam package's closed error vocabulary. Callers branch on `code`, never on message text.
 * Datastore errors that IPAM does not handle itself are wrapped once as `datastore` with the
 * original `DatastoreError` as `cause`.
 */
export const IPAM_ERROR_CODES = [
  'pool-exhausted', // every usable pool (named in the message) has no free address for this request
  'no-pools', // no enabled pool qualifies for the request (family, selectors, allowed use, existence)
  'not-found', // the address, handle, block or node asked about does not exist or is not assigned
  'conflict-retries-exhausted', // compare-and-swap kept losing races; the request gave up
  'invalid', // the request itself is wrong (bad address, wrong family, cidr outside every pool)
  'block-limit', // the host already holds maxBlocksPerHost blocks and needs another
  'already-assigned', // assignIP of an address that is in use
  'affinity-mismatch', // strict affinity forbids using a block affine to another host
  'datastore', // the datastore failed in a way IPAM does not handle (see `cause`)
] as const;
export type IpamErrorCode = (typeof IPAM_ERROR_CODES)[number];

export class IpamError extends Error {
  readonly code: IpamErrorCode;
  constructor(code: IpamErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'IpamError';
    this.code = code;
  }
}

export function isIpamError(e: unknown, code?: IpamErrorCode): e is IpamError {
  return e instanceof IpamError && (code === undefined || e.code === code);
}
