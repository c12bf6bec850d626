/**
 * One writer of a block at a time within this process. Assignments and releases through one
 * `IpamStore` (the CNI plugin service serves every ADD and DEL of its node through one) that
 * write the same block would otherwise start from the same cached version and all but one would
 * lose the compare-and-swap, then read and retry, and keep colliding while more arrive. Taking
 * turns, each starts from the version the one before it wrote (the IPAM cache has it) and its
 * write goes through first time. Writers in other processes still race by compare-and-swap,
 * spread out by the retry backoff.
 *
 *   turn(cidr, f): f runs after every earlier f of the same cidr has settled; other cidrs are
 *   not held up. First come, first served.
 *
 * Thread-safety: single-threaded (the event loop). A turn must not ask for a turn of the same
 * block (it would wait for itself).
 */
export class BlockTurns {
  readonly #tails = new Map<string, Promise<unknown>>();

  async turn<T>(cidr: string, f: () => Promise<T>): Promise<T> {
    const before = this.#tails.get(cidr);
    const mine = (before ?? Promise.resolve()).then(f, f);
    const tail = mine.catch(() => undefined);
    this.#tails.set(cidr, tail);
    try {
      return await mine;
    } finally {
      if (this.#tails.get(cidr) === tail) this.#tails.delete(cidr);
    }
  }
}
