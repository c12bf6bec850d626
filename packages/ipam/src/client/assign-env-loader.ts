/**
 * Where an assignment's starting point comes from (its environment: store/assign-env.ts), per host:
 *
 *   mirrored host (`mirrorHost`)  ─► the IPAM cache, no request (store/ipam-cache.ts)
 *   prefetched (`prefetch`)       ─► a read started a moment earlier, used by one assignment
 *   otherwise                     ─► one read now
 *
 * A prefetch is not a cache: each serves exactly one `autoAssign` started within a second of it,
 * and is dropped unused after that. Mirrors are the cache's host entries; this class only
 * remembers which it opened, to close them.
 */
import type { EnvRead } from '../store/assign-env.js';
import type { IpamStore } from '../store/ipam-store.js';

/** How long a prefetch stays usable. */
const PREFETCH_TTL_MS = 1000;

interface Prefetched {
  at: number;
  read: Promise<EnvRead>;
}

export class AssignEnvLoader {
  /** Reads started by `prefetch`, per host, oldest first; each serves one `autoAssign`. */
  private readonly prefetched = new Map<string, Prefetched[]>();
  /** Hosts whose assignment environment is mirrored (`mirrorHost`): opening or open. */
  private readonly mirrored = new Map<string, Promise<void>>();
  private readonly mirrorStops = new Map<string, { close(): void }>();

  constructor(private readonly store: IpamStore) {}

  /** See `IpamClient.prefetchAssignEnv`. */
  prefetch(hostname: string): void {
    // A mirrored host's environment is in memory, and fresher when the assignment asks for it.
    if (this.mirrored.has(hostname)) return;
    const now = Date.now();
    const queue = (this.prefetched.get(hostname) ?? []).filter((p) => now - p.at < PREFETCH_TTL_MS);
    const p: Prefetched = { at: now, read: this.read(hostname) };
    // Failures surface to the autoAssign that uses them; an unused one must not be unhandled.
    p.read.catch(() => undefined);
    queue.push(p);
    this.prefetched.set(hostname, queue);
  }

  /** See `IpamClient.mirrorHost`. */
  async mirrorHost(hostname: string): Promise<void> {
    let m = this.mirrored.get(hostname);
    if (!m) {
      const opening = this.store.mirrorAssignEnv(hostname).then((mirror) => {
        // Closed (or replaced) while it opened: stopped at once.
        if (this.mirrored.get(hostname) === opening) this.mirrorStops.set(hostname, mirror);
        else mirror.close();
      });
      m = opening;
      this.mirrored.set(hostname, m);
      m.catch(() => {
        if (this.mirrored.get(hostname) === opening) this.mirrored.delete(hostname);
      });
    }
    await m;
  }

  /** Stops every mirror `mirrorHost` started. */
  close(): void {
    for (const mirror of this.mirrorStops.values()) mirror.close();
    this.mirrorStops.clear();
    this.mirrored.clear();
  }

  /** The environment an `autoAssign` on `hostname` starts from: a fresh prefetch, else a read. */
  load(hostname: string): Promise<EnvRead> {
    return this.takePrefetched(hostname)?.read ?? this.read(hostname);
  }

  /** From the cache while `hostname` is mirrored (derived once per version), else one request. */
  private read(hostname: string): Promise<EnvRead> {
    return this.store.readAssignEnvDerived(hostname);
  }

  private takePrefetched(hostname: string): Prefetched | undefined {
    const queue = this.prefetched.get(hostname);
    if (!queue) return undefined;
    const now = Date.now();
    let fresh: Prefetched | undefined;
    while (queue.length > 0) {
      const p = queue.shift() as Prefetched;
      if (now - p.at < PREFETCH_TTL_MS) {
        fresh = p;
        break;
      }
    }
    if (queue.length === 0) this.prefetched.delete(hostname);
    return fresh;
  }
}
