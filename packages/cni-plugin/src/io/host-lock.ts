/**
 * Upstream's best-effort host-wide IPAM lock (`ipam_lock_file`, default /var/run/calico/ipam.lock):
 * calico-ipam invocations on one host take turns at the datastore, so many pods starting at once do
 * not all race for the same block with compare-and-swap. Correctness never depends on it: IPAM is
 * safe without it, only slower under contention.
 *
 * Node has no flock(2); the lock is a file created with O_EXCL holding the owner's PID. A holder
 * that died (its PID no longer exists) is replaced. If the lock cannot be used at all (no
 * permission, read-only file system) or is not released within `waitMs`, the caller goes ahead
 * unlocked, as upstream does.
 */

import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { readFile, stat, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import { type Logger, NOOP_LOGGER } from '@calico-ts/api/log';

export const DEFAULT_IPAM_LOCK_FILE = '/var/run/calico/ipam.lock';

export interface HostLock {
  /** Resolves to the release function once held (or once given up on). */
  acquire(path: string): Promise<() => Promise<void>>;
}

export interface FileLockOptions {
  waitMs?: number;
  log?: Logger;
}

export class FileLock implements HostLock {
  readonly #waitMs: number;
  readonly #log: Logger;

  constructor(options: FileLockOptions = {}) {
    this.#waitMs = options.waitMs ?? 60_000;
    this.#log = options.log ?? NOOP_LOGGER;
  }

  async acquire(path: string): Promise<() => Promise<void>> {
    const deadline = Date.now() + this.#waitMs;
    const me = String(process.pid);
    // Local file operations of microseconds: done synchronously, which is several times faster
    // than a round trip through the thread pool each (this is on every pod's ADD and DEL).
    try {
      mkdirSync(dirname(path), { recursive: true });
    } catch {
      // reported by the open below
    }
    for (let delay = 2; ; delay = Math.min(delay * 2, 50)) {
      try {
        const fd = openSync(path, 'wx', 0o644);
        try {
          writeSync(fd, me);
        } finally {
          closeSync(fd);
        }
        return async () => {
          try {
            if (readFileSync(path, 'utf8') === me) unlinkSync(path);
          } catch {
            // already gone
          }
        };
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== 'EEXIST') {
          this.#log.warn(`cannot use the IPAM lock ${path} (${code}); going ahead without it`);
          return async () => {};
        }
      }
      if (await this.#ownerIsGone(path)) continue;
      if (Date.now() >= deadline) {
        this.#log.warn(`the IPAM lock ${path} was not released in time; going ahead without it`);
        return async () => {};
      }
      await new Promise((r) => setTimeout(r, delay + Math.random() * delay));
    }
  }

  /** Removes a lock whose owner no longer runs; true when it did. */
  async #ownerIsGone(path: string): Promise<boolean> {
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch {
      return true; // released meanwhile: try again at once
    }
    const pid = Number(text);
    if (!Number.isInteger(pid) || pid <= 0) {
      // Being written right now, or left empty by a holder that died between create and write:
      // the latter is replaced once it is old enough to tell.
      const age = await stat(path).then(
        (s) => Date.now() - s.mtimeMs,
        () => 0,
      );
      if (age < 5_000) return false;
      await unlink(path).catch(() => {});
      return true;
    }
    try {
      process.kill(pid, 0);
      return false;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ESRCH') return false;
    }
    try {
      if ((await readFile(path, 'utf8')) === text) await unlink(path);
    } catch {
      // someone else cleaned up
    }
    return true;
  }
}

/** A lock that never waits (tests, and embedders that serialise themselves). */
export const NO_LOCK: HostLock = { acquire: async () => async () => {} };

/**
 * `inner`, with the holders inside this process queued first: many invocations run by one process
 * (the plugin service) wait their turn in order instead of polling the lock file against each other.
 */
export class QueuedLock implements HostLock {
  readonly #inner: HostLock;
  readonly #tails = new Map<string, Promise<void>>();

  constructor(inner: HostLock) {
    this.#inner = inner;
  }

  async acquire(path: string): Promise<() => Promise<void>> {
    const previous = this.#tails.get(path) ?? Promise.resolve();
    let done!: () => void;
    const mine = new Promise<void>((r) => {
      done = r;
    });
    const tail = previous.then(() => mine);
    this.#tails.set(path, tail);
    await previous;
    let release: () => Promise<void>;
    try {
      release = await this.#inner.acquire(path);
    } catch (e) {
      done();
      throw e;
    }
    return async () => {
      try {
        await release();
      } finally {
        if (this.#tails.get(path) === tail) this.#tails.delete(path);
        done();
      }
    };
  }
}
