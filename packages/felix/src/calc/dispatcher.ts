/**
 * The calculation graph's entry (upstream `felix/calc/dispatcher.go`): every datastore update goes
 * to the nodes registered for its kind, in the order they registered; in-sync goes to every node
 * that asked for it.
 *
 *   CalcUpdate ──► Dispatcher ──kind──► handler, handler, ...   (a kind nobody registered: TypeError)
 *                            └─in-sync─► in-sync listeners
 *
 * Thread-safety: single-threaded; pure.
 */
import type { CalcKind, CalcResource, CalcUpdate, ResourceRef } from './types.js';

/** A set (with the resource) or a delete (with a reference to it) of one kind. */
export type KindUpdate =
  | { readonly kind: 'set'; readonly resource: CalcResource }
  | { readonly kind: 'delete'; readonly resource: ResourceRef | CalcResource };

export type UpdateHandler = (update: KindUpdate) => void;

export class Dispatcher {
  readonly #handlers = new Map<string, UpdateHandler[]>();
  readonly #inSync: (() => void)[] = [];

  /** `handler` receives every update of each of `kinds`, after the handlers registered before it. */
  register(kinds: readonly CalcKind[], handler: UpdateHandler): void {
    for (const k of kinds) {
      const list = this.#handlers.get(k);
      if (list) list.push(handler);
      else this.#handlers.set(k, [handler]);
    }
  }

  /** `listener` is called when the datastore reports in-sync. */
  onInSync(listener: () => void): void {
    this.#inSync.push(listener);
  }

  dispatch(update: CalcUpdate): void {
    if (update.kind === 'in-sync') {
      for (const l of this.#inSync) l();
      return;
    }
    const kind = (update.resource as { kind: unknown }).kind;
    const handlers = this.#handlers.get(kind as string);
    if (!handlers) throw new TypeError(`CalcGraph: unsupported kind ${String(kind)}`);
    for (const h of handlers) h(update);
  }
}
