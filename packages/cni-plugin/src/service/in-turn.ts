/**
 * Runs the work of one key in order of arrival, each after the previous one has settled; work of
 * different keys runs concurrently.
 *
 * The plugin service runs the invocations of one program for one container (CNI_CONTAINERID and
 * CNI_IFNAME) this way. A runtime that kills a `calico` process while the service runs its ADD (a
 * timeout, a SIGKILL) sends the DEL of that container next, believing the ADD over, while the
 * service may still be running it: without taking turns the DEL could finish first and the ADD
 * then write its WorkloadEndpoint and addresses, left to nobody. In turn, the DEL cleans up after the whole ADD,
 * as it would after a direct run, whose work stops with its process.
 */
export class InTurn {
  readonly #tails = new Map<string, Promise<void>>();

  /** Work queued or running, by key (for tests and diagnostics). */
  get size(): number {
    return this.#tails.size;
  }

  run<T>(key: string | undefined, work: () => Promise<T>): Promise<T> {
    if (key === undefined) return work();
    const previous = this.#tails.get(key) ?? Promise.resolve();
    const result = previous.then(work);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.#tails.set(key, tail);
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
    return result;
  }
}
