/**
 * Handle records under compare-and-swap: add or remove a block's count, creating the record on
 * first use and deleting it when it becomes empty.
 */
import { decrementHandle, incrementHandle } from '../block/handle.js';
import type { IpamRecords } from '../store/ipam-records.js';
import { isAlreadyExists, isConflict, isNotFound, type RetryOptions, withRetries } from './retry.js';

export async function incrementHandleRecord(
  records: IpamRecords,
  retry: RetryOptions,
  handleId: string,
  blockCidr: string,
  n: number,
): Promise<void> {
  await withRetries(
    `recording ${n} address(es) of block ${blockCidr} on handle ${handleId}`,
    retry,
    async (attempt) => {
      // Usually a new pod's handle: one create. One that exists already (a second family, a
      // retried ADD) fails it atomically, and is then read and updated.
      if (attempt === 0) {
        try {
          await records.createHandle(handleId, incrementHandle(undefined, blockCidr, n));
          return;
        } catch (e) {
          if (!isAlreadyExists(e)) throw e;
        }
      }
      const cur = await records.getHandle(handleId);
      const next = incrementHandle(cur?.value, blockCidr, n);
      if (cur) await records.updateHandle(handleId, next, cur.revision);
      else await records.createHandle(handleId, next);
    },
    (e) => isConflict(e) || isAlreadyExists(e) || isNotFound(e),
  );
}

/**
 * Remove `n` addresses of `blockCidr` from the handle. A missing handle, or one holding fewer, is
 * left consistent (the entry goes); returns false in that case so the caller can note it.
 */
export async function decrementHandleRecord(
  records: IpamRecords,
  retry: RetryOptions,
  handleId: string,
  blockCidr: string,
  n: number,
): Promise<boolean> {
  return withRetries(
    `removing ${n} address(es) of block ${blockCidr} from handle ${handleId}`,
    retry,
    async () => {
      const cur = await records.getHandle(handleId);
      if (!cur) return false;
      const r = decrementHandle(cur.value, blockCidr, n);
      if (r.handle === null) await records.deleteHandle(handleId, cur.revision);
      else await records.updateHandle(handleId, r.handle, cur.revision);
      return r.shortfall === undefined;
    },
    (e) => isConflict(e) || isNotFound(e),
  );
}
