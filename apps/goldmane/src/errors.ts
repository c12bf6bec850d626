/**
 * The aggregator's closed list of error codes. The gRPC edge maps each to a status in one table
 * (`grpc-status.ts`); the message names the request field or setting that was wrong.
 */
export const GOLDMANE_ERROR_CODES = ['invalid-argument', 'unimplemented', 'config'] as const;
/** A {@link GOLDMANE_ERROR_CODES} value. */
export type GoldmaneErrorCode = (typeof GOLDMANE_ERROR_CODES)[number];

/** An error of the aggregator, with its code. */
export class GoldmaneError extends Error {
  /** What kind of error. */
  readonly code: GoldmaneErrorCode;

  constructor(code: GoldmaneErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'GoldmaneError';
    this.code = code;
  }
}

/** A bad request: `field` is its path in the request (`filter.dest_ports[0].port`). */
export function invalidArgument(field: string, problem: string): GoldmaneError {
  return new GoldmaneError('invalid-argument', `${field}: ${problem}`);
}
