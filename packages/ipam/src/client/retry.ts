/**
 * Compare-and-swap plumbing shared by the client's operations: classifying datastore errors, and
 * the bounded retry loop every read-modify-write runs in.
 */
import { DatastoreError, isDatastoreError } from '@calico-ts/datastore';
import { IpamError, isIpamError } from '../errors.js';

export function isConflict(e: unknown): boolean {
  return isDatastoreError(e, 'conflict');
}

export function isNotFound(e: unknown): boolean {
  return isDatastoreError(e, 'not-found');
}

export function isAlreadyExists(e: unknown): boolean {
  return isDatastoreError(e, 'already-exists');
}

/** A lost race that re-reading and trying again can fix. */
export function isRetryable(e: unknown): boolean {
  return isConflict(e) || isAlreadyExists(e) || isNotFound(e);
}

/** Make a conflict out of "the record changed under us" situations found by reading. */
export function raceLost(what: string): DatastoreError {
  return new DatastoreError('conflict', `${what} changed concurrently`);
}

export interface RetryOptions {
  maxRetries: number;
  /** Pause between attempts, so racing writers drift apart. */
  sleep: (ms: number) => Promise<void>;
  random: () => number;
}

/** The first retry's pause is up to this long; each further one may be twice as long … */
const BACKOFF_BASE_MS = 2;
/** … up to this. */
const BACKOFF_CAP_MS = 128;

/**
 * The pause before retry `n` (1 for the first): uniform in [0, min(cap, base·2^(n-1))) ms, "full
 * jitter". Writers that lost the same compare-and-swap then come back at different times instead
 * of colliding again in step, and the more often one loses, the further apart they spread; the
 * cap keeps a long run of losses from turning into seconds of waiting.
 */
export function backoffMs(n: number, random: () => number): number {
  const ceiling = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** Math.min(n - 1, 16));
  return random() * ceiling;
}

/**
 * Run `attempt` until it returns, retrying on compare-and-swap conflicts (and on the other errors
 * `retryOn` accepts) up to `maxRetries` times, with a jittered, growing pause between tries
 * (`backoffMs`); then `conflict-retries-exhausted` naming `what`.
 */
export async function withRetries<T>(
  what: string,
  opts: RetryOptions,
  attempt: (i: number) => Promise<T>,
  retryOn: (e: unknown) => boolean = isConflict,
): Promise<T> {
  let last: unknown;
  for (let i = 0; i < opts.maxRetries; i++) {
    if (i > 0) await opts.sleep(backoffMs(i, opts.random));
    try {
      return await attempt(i);
    } catch (e) {
      if (!retryOn(e)) throw e;
      last = e;
    }
  }
  throw new IpamError(
    'conflict-retries-exhausted',
    `${what}: gave up after ${opts.maxRetries} attempts lost to concurrent IPAM updates`,
    { cause: last },
  );
}

/** Classify anything that is not already an IpamError as a `datastore` failure. */
export function asIpamError(e: unknown, what: string): IpamError {
  if (isIpamError(e)) return e;
  if (e instanceof DatastoreError) {
    return new IpamError('datastore', `${what}: ${e.message}`, { cause: e });
  }
  const msg = e instanceof Error ? e.message : String(e);
  return new IpamError('datastore', `${what}: ${msg}`, { cause: e });
}
