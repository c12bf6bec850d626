/**
 * The feed of the IPAM cache's host entries (ipam-cache.ts, where the cache's invalidation rule is
 * written): the answer of one `KVStore.readAll`, kept current in memory: read once, then followed
 * by a watch per read from the revision after. A long-lived process that would otherwise repeat the same read
 * before every operation (IPAM's assignment environment, in the CNI plugin service) asks the mirror
 * instead, and reads the store only while a watch is down.
 *
 * Writes this process makes to mirrored keys are told to the mirror as they resolve (`notePut`,
 * `noteDelete`), so it never answers with something older than the process's own last write, even
 * before its watch reports it. Per key, a change older than one already applied is ignored: a watch
 * event for a revision before a noted write changes nothing.
 *
 * Consistency: each read is current as of its own watch; the reads are not taken at one revision
 * as one `readAll` is. Ends with `close()` (or when the store closes: the mirror then stays down).
 */
import type { KV, KVRead, KVStore, KVWatchMessage } from '@calico-ts/datastore';

export class KVReadMirror {
  readonly #reads: readonly KVRead[];
  readonly #held: Map<string, KV>[];
  /** Per key, the revision of the newest change applied (a put's or a delete's). */
  readonly #newest = new Map<string, number>();
  readonly #down: boolean[];
  readonly #abort = new AbortController();
  #closed = false;
  #version = 0;
  #answer: { version: number; results: KV[][] } | undefined;

  private constructor(reads: readonly KVRead[], first: KV[][]) {
    this.#reads = reads;
    this.#held = first.map((kvs) => new Map(kvs.map((kv) => [kv.key, kv])));
    this.#down = reads.map(() => false);
    for (const kvs of first) for (const kv of kvs) this.#newest.set(kv.key, Number(kv.modRevision));
  }

  /** Reads `reads` once (one request) and starts following them. Rejects as `readAll` does. */
  static async open(store: KVStore, reads: readonly KVRead[]): Promise<KVReadMirror> {
    const first = await store.readAll(reads.map((r) => ({ key: r.key, prefix: r.prefix === true })));
    const mirror = new KVReadMirror(reads, first.results);
    const from = String(Number(first.revision) + 1);
    try {
      reads.forEach((r, i) => {
        void mirror.#follow(store.watch(r.key, { fromRevision: from, signal: mirror.#abort.signal }), i);
      });
    } catch (e) {
      mirror.close(); // the watches already started end with it
      throw e;
    }
    return mirror;
  }

  /**
   * What `readAll` of the mirrored reads would answer now, or undefined while any watch is down (or
   * after `close`): the caller then reads the store. The same arrays until something changes.
   */
  results(): KV[][] | undefined {
    if (this.#closed || this.#down.includes(true)) return undefined;
    if (this.#answer?.version !== this.#version) {
      this.#answer = {
        version: this.#version,
        results: this.#held.map((m) =>
          [...m.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)),
        ),
      };
    }
    return this.#answer.results;
  }

  /** Counts changes: equal versions mean equal `results()`. */
  get version(): number {
    return this.#version;
  }

  /** This process wrote `kv` (as the store returned it). */
  notePut(kv: KV): void {
    this.#apply(kv.key, kv, Number(kv.modRevision));
  }

  /** This process deleted `key`, which was at `prevRevision`; the delete itself came after that. */
  noteDelete(key: string, prevRevision: string): void {
    this.#apply(key, undefined, Number(prevRevision) + 0.5);
  }

  close(): void {
    this.#closed = true;
    this.#abort.abort();
  }

  async #follow(watch: AsyncIterable<KVWatchMessage>, i: number): Promise<void> {
    try {
      for await (const m of watch) {
        if (m.kind === 'events') {
          for (const e of m.events) {
            if (e.kind === 'put') this.#applyTo(i, e.kv.key, e.kv, Number(e.kv.modRevision));
            else this.#applyTo(i, e.key, undefined, Number(e.modRevision));
          }
        } else if (m.kind === 'resync') {
          this.#resync(i, m.list.kvs, Number(m.list.revision));
        } else {
          this.#down[i] = m.kind === 'disconnected';
        }
      }
    } catch {
      // The watch failed for good: reads go to the store from now on.
    }
    this.#down[i] = true;
  }

  #matches(i: number, key: string): boolean {
    const r = this.#reads[i]!;
    return r.prefix ? key.startsWith(r.key) : key === r.key;
  }

  #apply(key: string, kv: KV | undefined, revision: number): void {
    for (let i = 0; i < this.#reads.length; i++) this.#applyTo(i, key, kv, revision);
  }

  #applyTo(i: number, key: string, kv: KV | undefined, revision: number): void {
    if (!this.#matches(i, key)) return;
    if (revision <= (this.#newest.get(key) ?? 0)) return;
    this.#newest.set(key, revision);
    if (kv) this.#held[i]!.set(key, kv);
    else this.#held[i]!.delete(key);
    this.#version++;
  }

  /** The watch lost its history: what it lists replaces what is held for its read. */
  #resync(i: number, kvs: KV[], revision: number): void {
    const held = this.#held[i]!;
    for (const key of held.keys()) this.#newest.set(key, revision);
    held.clear();
    for (const kv of kvs) {
      if (!this.#matches(i, kv.key)) continue;
      held.set(kv.key, kv);
      this.#newest.set(kv.key, Number(kv.modRevision));
    }
    this.#version++;
  }
}
