/**
 * Handle records under compare-and-swap: add or remove a block's count, creating the record on
 * first use and deleting it when it becomes empty, and drop a block from a handle once the block
 * holds nothing of it. The pure counting is block/handle.ts.
 */
import type { IPAMHandle, Versioned } from '@calico-ts/datastore';
import { decrementHandle, incrementHandle } from '../block/handle.js';
import type { IpamStore } from '../store/ipam-store.js';
import { isAlreadyExists, isConflict, isNotFound, type RetryOptions, withRetries } from './retry.js';

export async function incrementHandleRecord(
  store: IpamStore,
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
          await store.createHandle({ handleId, ...incrementHandle(undefined, blockCidr, n) });
          return;
        } catch (e) {
          if (!isAlreadyExists(e)) throw e;
        }
      }
      const cur = await store.getHandle(handleId);
      const next = { ...incrementHandle(cur?.value, blockCidr, n), handleId };
      if (cur) await store.updateHandle(next, cur.revision);
      else await store.createHandle(next);
    },
    (e) => isConflict(e) || isAlreadyExists(e) || isNotFound(e),
  );
}

/**
 * Remove `n` addresses of `blockCidr` from the handle. A missing handle, or one holding fewer, is
 * left consistent (the entry goes); returns false in that case so the caller can note it.
 */
export async function decrementHandleRecord(
  store: IpamStore,
  retry: RetryOptions,
  handleId: string,
  blockCidr: string,
  n: number,
): Promise<boolean> {
  return withRetries(
    `removing ${n} address(es) of block ${blockCidr} from handle ${handleId}`,
    retry,
    async () => {
      const cur = await store.getHandle(handleId);
      if (!cur) return false;
      const r = decrementHandle(cur.value, blockCidr, n);
      if (r.handle === null) await store.deleteHandle(handleId, cur.revision);
      else await store.updateHandle({ ...r.handle, handleId }, cur.revision);
      return r.shortfall === undefined;
    },
    (e) => isConflict(e) || isNotFound(e),
  );
}

/**
 * Removes `blockText` from the handle's blocks (deleting the handle when none is left). `known`,
 * the handle as last read, saves the first read; a compare-and-swap conflict reads it afresh.
 */
export async function dropHandleBlock(
  store: IpamStore,
  retry: RetryOptions,
  handleId: string,
  blockText: string,
  known?: Versioned<IPAMHandle>,
): Promise<void> {
  let first = known;
  await withRetries(
    `updating handle ${handleId}`,
    retry,
    async () => {
      const cur = first ?? (await store.getHandle(handleId));
      first = undefined;
      if (!cur || cur.value.block[blockText] === undefined) return;
      const block = { ...cur.value.block };
      delete block[blockText];
      if (Object.keys(block).length === 0) await store.deleteHandle(handleId, cur.revision);
      else await store.updateHandle({ ...cur.value, block }, cur.revision);
    },
    (e) => isConflict(e) || isNotFound(e),
  );
}
