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
  /** Pause between attempts after the first few, so racing writers drift apart. */
  sleep: (ms: number) => Promise<void>;
  random: () => number;
}

/**
 * Run `attempt` until it returns, retrying on compare-and-swap conflicts (and on the other errors
 * `retryOn` accepts) up to `maxRetries` times; then `conflict-retries-exhausted` naming `what`.
 */
export async function withRetries<T>(
  what: string,
  opts: RetryOptions,
  attempt: (i: number) => Promise<T>,
  retryOn: (e: unknown) => boolean = isConflict,
): Promise<T> {
  let last: unknown;
  for (let i = 0; i < opts.maxRetries; i++) {
    try {
      return await attempt(i);
    } catch (e) {
      if (!retryOn(e)) throw e;
      last = e;
      if (i >= 3) await opts.sleep(Math.floor(opts.random() * Math.min(2 * i, 50)));
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
