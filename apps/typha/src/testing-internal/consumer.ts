/**
 * A syncer consumer for tests: the state a Typha client (or a Syncer) has told it, every event,
 * and a count of duplicates (a `set` of an item equal to the one it already has).
 */
import { isDeepStrictEqual } from 'node:util';
import type { SyncerUpdate } from '@calico-ts/datastore';

/** One update as the consumer saw it. */
export interface SeenEvent {
  readonly kind: 'set' | 'delete';
  readonly source: string;
  readonly key: string;
}

function keyOf(item: unknown): string {
  const o = item as { key?: string; metadata?: { name: string; namespace?: string } };
  if (o.metadata)
    return o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name;
  return String(o.key);
}

export class Consumer {
  readonly state = new Map<string, Map<string, unknown>>();
  readonly events: SeenEvent[] = [];
  inSync = false;
  connected: boolean | undefined;
  failures = 0;
  lastError = '';
  duplicates = 0;

  constructor(readonly name: string) {}

  callbacks() {
    return {
      onUpdate: (u: SyncerUpdate) => this.onUpdate(u),
      onInSync: () => {
        this.inSync = true;
      },
      onConnection: (_s: string, connected: boolean, why?: string) => {
        this.connected = connected;
        if (!connected) {
          this.failures++;
          this.lastError = why ?? '';
        }
      },
    };
  }

  onUpdate(u: SyncerUpdate): void {
    const key = keyOf(u.item);
    this.events.push({ kind: u.kind, source: u.source, key });
    const m = this.state.get(u.source) ?? new Map<string, unknown>();
    this.state.set(u.source, m);
    if (u.kind === 'set') {
      if (m.has(key) && isDeepStrictEqual(m.get(key), u.item)) this.duplicates++;
      m.set(key, u.item);
    } else m.delete(key);
  }

  has(source: string, key: string): boolean {
    return this.state.get(source)?.has(key) ?? false;
  }

  get(source: string, key: string): unknown {
    return this.state.get(source)?.get(key);
  }

  /** A GlobalNetworkPolicy's order, or undefined. */
  order(name: string): number | undefined {
    return (this.get('GlobalNetworkPolicy', name) as { spec?: { order?: number } } | undefined)?.spec?.order;
  }

  sources(): Set<string> {
    return new Set([...this.state].filter(([, m]) => m.size > 0).map(([s]) => s));
  }

  size(): number {
    let n = 0;
    for (const m of this.state.values()) n += m.size;
    return n;
  }

  /** The state as plain sorted data. */
  snapshot(): Record<string, Record<string, unknown>> {
    const out: Record<string, Record<string, unknown>> = {};
    for (const [s, m] of [...this.state].sort(([a], [b]) => a.localeCompare(b))) {
      if (m.size === 0) continue;
      out[s] = Object.fromEntries([...m].sort(([a], [b]) => a.localeCompare(b)));
    }
    return out;
  }
}

/** Waits until `cond` holds, checking every 20 ms; fails with `what` after `timeoutMs`. */
export async function until(what: string, cond: () => boolean, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
