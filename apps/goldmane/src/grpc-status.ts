/**
 * The one table from the aggregator's error codes to gRPC status codes. Anything else is INTERNAL
 * with a fixed message: no stack or foreign text reaches a client.
 */
import { status } from '@grpc/grpc-js';
import { GoldmaneError, type GoldmaneErrorCode } from './errors.js';

const STATUS: Record<GoldmaneErrorCode, status> = {
  'invalid-argument': status.INVALID_ARGUMENT,
  unimplemented: status.UNIMPLEMENTED,
  config: status.FAILED_PRECONDITION,
};

/** The status and details a client gets for an error. */
export function grpcStatusOf(e: unknown): { code: status; details: string } {
  if (e instanceof GoldmaneError) return { code: STATUS[e.code], details: e.message };
  return { code: status.INTERNAL, details: 'internal error in goldmane (see its log)' };
}
