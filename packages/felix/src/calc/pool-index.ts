/**
 * The IP pools, kept once for the whole graph: the rules' view of them (PoolState: CIDR,
 * natOutgoing, disabled; for the NAT and pool IP sets) and the tunnels' view (the pool resources,
 * for VXLAN and IPIP).
 *
 *   IPPool ──► onPool ──┬─► PoolState ──► emitter.pools.mark(name)
 *                       └─► resources ──► listeners (the EncapResolver marks itself dirty)
 *
 * A pool whose CIDR does not parse has no PoolState (the rules keep what they had), and is still
 * a resource the tunnels' resolvers see (they skip a CIDR they cannot read).
 *
 * Thread-safety: single-threaded; pure.
 */
import type { IPPool } from '@calico-ts/api';
import { formatCidr, parseCidrOrIP } from '@calico-ts/api/net';
import type { KindUpdate } from './dispatcher.js';
import type { Emitter } from './emitter.js';
import type { PoolState } from './types.js';

export class PoolIndex {
  readonly #emitter: Emitter;
  readonly #states = new Map<string, PoolState>();
  readonly #resources = new Map<string, IPPool>();
  readonly #listeners: (() => void)[] = [];

  constructor(emitter: Emitter) {
    this.#emitter = emitter;
  }

  /** `listener` is called after every pool update. */
  onChange(listener: () => void): void {
    this.#listeners.push(listener);
  }

  /** Every pool resource, in the order they first arrived. */
  get resources(): IPPool[] {
    return [...this.#resources.values()];
  }

  onPool(u: KindUpdate): void {
    const name = u.resource.metadata.name;
    const pool = u.kind === 'set' ? (u.resource as IPPool) : undefined;
    if (pool) this.#resources.set(name, pool);
    else this.#resources.delete(name);
    for (const l of this.#listeners) l();
    this.#updateState(name, pool);
  }

  /** The rules' view of a pool, as last updated. */
  state(name: string): PoolState | undefined {
    return this.#states.get(name);
  }

  #updateState(name: string, pool: IPPool | undefined): void {
    if (pool) {
      const c = parseCidrOrIP(pool.spec.cidr);
      if (!c) return;
      this.#states.set(name, {
        name,
        cidr: formatCidr(c),
        natOutgoing: pool.spec.natOutgoing === true,
        disabled: pool.spec.disabled === true,
      });
    } else {
      this.#states.delete(name);
    }
    this.#emitter.pools.mark(name);
  }
}
