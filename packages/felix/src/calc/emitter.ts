/**
 * The calculation graph's output stage (upstream `felix/calc/event_sequencer.go`, in part): the
 * nodes mark an item dirty when something it is made of changed; `flush` computes each dirty
 * item once, compares it with what was last emitted and returns only what differs.
 *
 *   node ──mark(id)──► Channel.dirty ──flush: compute(id), JSON compare──► updated / removed
 *                                                                     └──► emitted (for state())
 *
 * Add/remove pairs inside one batch cancel out: an item made and deleted between two flushes is
 * never emitted; one changed and changed back is not emitted either.
 *
 * Thread-safety: single-threaded; pure.
 */
import type { EndpointState, IPSetState, PolicyState, PoolState, ProfileState } from './types.js';

export const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** One kind of output (IP sets, policies, ...): its dirty IDs and what was last emitted per ID. */
export class Channel<T> {
  readonly #dirty = new Set<string>();
  readonly #emitted = new Map<string, { readonly json: string; readonly value: T }>();

  /** Something `id` is made of changed: recompute it at the next flush. */
  mark(id: string): void {
    this.#dirty.add(id);
  }

  /** Whether anything is marked. */
  get pending(): boolean {
    return this.#dirty.size > 0;
  }

  /** The dirty items computed (undefined: the item is gone), as changes to what was emitted. */
  collect(compute: (id: string) => T | undefined): { updated: T[]; removed: string[] } {
    const updated: T[] = [];
    const removed: string[] = [];
    for (const id of [...this.#dirty].sort(byString)) {
      const value = compute(id);
      const prev = this.#emitted.get(id);
      if (value === undefined) {
        if (prev) {
          this.#emitted.delete(id);
          removed.push(id);
        }
        continue;
      }
      const json = JSON.stringify(value);
      if (prev?.json === json) continue;
      this.#emitted.set(id, { json, value });
      updated.push(value);
    }
    this.#dirty.clear();
    return { updated, removed };
  }

  /** Everything emitted so far, by ID in order. */
  values(): Record<string, T> {
    const out: Record<string, T> = {};
    for (const k of [...this.#emitted.keys()].sort(byString)) out[k] = this.#emitted.get(k)!.value;
    return out;
  }
}

/** One value emitted whole when it differs from the last one emitted (the tunnel states). */
export class Latest<T> {
  #json: string | undefined;
  #value: T | undefined;
  #emitted = false;

  /** `initial`: what counts as already emitted (offering it again emits nothing). */
  constructor(initial?: T) {
    if (initial !== undefined) this.#json = JSON.stringify(initial);
  }

  /** `value` when it differs from the last one offered, else undefined. */
  offer(value: T): T | undefined {
    const json = JSON.stringify(value);
    if (json === this.#json) return undefined;
    this.#json = json;
    this.#value = value;
    this.#emitted = true;
    return value;
  }

  /** The last value emitted; undefined before the first. */
  get value(): T | undefined {
    return this.#emitted ? this.#value : undefined;
  }
}

/** The channels of the graph's output, one per kind of desired state. */
export class Emitter {
  readonly ipSets = new Channel<IPSetState>();
  readonly policies = new Channel<PolicyState>();
  readonly profiles = new Channel<ProfileState>();
  readonly endpoints = new Channel<EndpointState>();
  readonly pools = new Channel<PoolState>();
}
