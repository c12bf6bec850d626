/**
 * BirdBridge: keeps BIRD's configuration in step with the datastore, for one node.
 *
 *   Syncer (@calico-ts/datastore) ─ Node ────────────┐
 *                                  ─ BGPConfiguration ┤ (cache by name)
 *                                  ─ BGPPeer ─────────┤
 *                                  ─ BGPFilter ───────┼──► dirty ──(debounce)──► BgpInput snapshot
 *                                  ─ IPPool ──────────┤                            │ renderBirdConfig (per family)
 *                                  ─ this node's IPAM  ┘                            ▼
 *                                    block affinities                 BirdSupervisor.apply (per family)
 *   SecretProvider ─ a followed secret changed ─► dirty
 *                  ◄─ follow(names referenced) + value(name, key), while the snapshot is made
 *
 * API: `start()` waits until every source is listed, renders and applies once (resolves after the
 * first apply), then follows the syncer; `stop()` ends the syncer and timers and stops the
 * supervisors it was given. `snapshot()` is the input the last render used.
 * Design: every change only marks the state dirty; one render runs at a time, and a change made
 * while it runs triggers one more. The syncer re-lists a source whose watch fails and replaces its
 * cache on a resync; `pending` and deleted affinities are not routes yet. Passwords: before each
 * render the bridge tells its `secretProvider` which secrets the peers and the mesh reference and
 * waits until it has read them; a change the provider reports is one more render. The bridge
 * closes the provider on `stop()`.
 */

import type { BGPConfiguration, BGPFilter, BGPPeer, IPPool, Node, ResourceOf } from '@calico-ts/api';
import { type Logger, NOOP_LOGGER } from '@calico-ts/api/log';
import {
  type BlockAffinity,
  type Datastore,
  type KVStore,
  kvSource,
  resourceSource,
  Syncer,
  type SyncerOptions,
  type SyncerUpdate,
  type SyncSource,
} from '@calico-ts/datastore';
import { decodeAffinity, IPAM_ROOT } from '@calico-ts/datastore/internal';
import type { ApplyOutcome } from './bird/bird-supervisor.js';
import { BirdBridgeError } from './errors.js';
import type { AffineBlock, BgpInput, IPFamily } from './render/bgp-input.js';
import { renderBirdConfig } from './render/bird-config-renderer.js';
import { secretKey, secretRefsOf } from './render/secret-refs.js';
import type { SecretProvider } from './secret-provider.js';

/** The part of `BirdSupervisor` the bridge uses (a fake in unit tests). */
export interface BirdConfigTarget {
  apply(config: { main: string; files: Readonly<Record<string, string>> }): Promise<ApplyOutcome>;
  stop(): Promise<void>;
}

/** A node's block affinities as a syncer source (items `{ key, value }`). */
export type AffinitySource = SyncSource<{ readonly key: string; readonly value: BlockAffinity }>;

/** The block affinities of `node` (host type), followed through a key store. */
export function nodeAffinitySource(kv: KVStore, node: string): AffinitySource {
  return kvSource('affinities', kv, `${IPAM_ROOT}host/${node}/`, decodeAffinity);
}

export interface BirdBridgeOptions {
  datastore: Datastore;
  /** This node's block affinities (see `nodeAffinitySource`). */
  affinities: AffinitySource;
  nodeName: string;
  /** One BIRD per family; a family without a target is not rendered. */
  targets: Partial<Record<IPFamily, BirdConfigTarget>>;
  /** Quiet time after a change before rendering. Default 50 ms. */
  debounceMs?: number;
  /** Wait before re-listing a source whose watch ended or failed (doubling). Default 500 ms. */
  retryMs?: number;
  logLevel?: string;
  routerId?: string;
  /** Fixed password values keyed `<secret name>/<key>` (a provider's values win). */
  secrets?: Readonly<Record<string, string>>;
  /** Password values that change over time (calico-node: Secrets watched in the API server). */
  secretProvider?: SecretProvider;
  /**
   * Makes the syncer from the sources and callbacks (default: `new Syncer(opts)`, a list and watch
   * of each). calico-node passes one that connects to Typha instead when Typha is configured; it
   * must deliver the same source names (the five kinds, and this node's affinities under
   * `affinities.name`).
   */
  syncerFactory?: (opts: SyncerOptions) => BridgeSyncer;
  log?: Logger;
}

/** What the bridge needs of its syncer. */
export interface BridgeSyncer {
  /** Begins delivering updates to the options' callbacks; returns at once. */
  start(): void;
  /** Stops delivering and releases its connections. */
  stop(): Promise<void>;
}

const WATCHED = ['Node', 'BGPConfiguration', 'BGPPeer', 'BGPFilter', 'IPPool'] as const;
type WatchedKind = (typeof WATCHED)[number];

export class BirdBridge {
  private readonly opts: BirdBridgeOptions;
  private readonly log: Logger;
  private readonly cache: { [K in WatchedKind]: Map<string, ResourceOf<K>> } = {
    Node: new Map(),
    BGPConfiguration: new Map(),
    BGPPeer: new Map(),
    BGPFilter: new Map(),
    IPPool: new Map(),
  };
  private readonly affinities = new Map<string, BlockAffinity>();
  private syncer: BridgeSyncer | undefined;
  private inSync = false;
  private debounceTimer: NodeJS.Timeout | undefined;
  private rendering: Promise<void> | undefined;
  private dirty = false;
  private started = false;
  private stopped = false;
  private lastWarnings = '';
  private lastInput: BgpInput | undefined;
  private readonly outcomes = new Map<IPFamily, ApplyOutcome>();
  private renders = 0;
  private unsubscribeSecrets: (() => void) | undefined;

  constructor(opts: BirdBridgeOptions) {
    if (!opts.nodeName) throw new BirdBridgeError('invalid-input', 'nodeName is required');
    this.opts = opts;
    this.log = opts.log ?? NOOP_LOGGER;
  }

  /** Wait until every source is listed, render and apply once, then follow changes. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    this.unsubscribeSecrets = this.opts.secretProvider?.subscribe(() => {
      if (this.inSync) this.markDirty();
    });
    const synced = new Promise<void>((resolve) => {
      const factory = this.opts.syncerFactory ?? ((o: SyncerOptions) => new Syncer(o));
      this.syncer = factory({
        sources: [
          ...WATCHED.map((k) => resourceSource(this.opts.datastore, k) as SyncSource),
          this.opts.affinities as SyncSource,
        ],
        onUpdate: (u) => this.onUpdate(u),
        onInSync: () => {
          this.inSync = true;
          resolve();
        },
        onConnection: (source, connected, why) => {
          if (!connected)
            this.log.warn(
              {
                error: why,
              },
              `${source}: datastore unreachable; keeping the last configuration`,
            );
        },
        log: this.log,
        ...(this.opts.retryMs !== undefined ? { retryMs: this.opts.retryMs } : {}),
      });
      this.syncer.start();
    });
    await synced;
    await this.renderNow();
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.debounceTimer);
    await this.syncer?.stop();
    await this.rendering?.catch(() => undefined);
    this.unsubscribeSecrets?.();
    await this.opts.secretProvider?.close();
    for (const t of Object.values(this.opts.targets)) await t?.stop();
  }

  /** The input of the last render. */
  snapshot(): BgpInput | undefined {
    return this.lastInput;
  }

  /** How many times the configuration was rendered, and each family's last apply outcome. */
  stats(): { renders: number; outcomes: Partial<Record<IPFamily, ApplyOutcome>> } {
    return { renders: this.renders, outcomes: Object.fromEntries(this.outcomes) };
  }

  /** Render now (after any render in flight) and wait for it. */
  async resync(): Promise<void> {
    await this.renderNow();
  }

  // ---- datastore -----------------------------------------------------------------------------

  private onUpdate(u: SyncerUpdate): void {
    if (u.source === this.opts.affinities.name) {
      const item = u.item as { key: string; value: BlockAffinity };
      if (u.kind === 'set') this.affinities.set(item.key, item.value);
      else this.affinities.delete(item.key);
    } else {
      const kind = u.source as WatchedKind;
      const r = u.item as ResourceOf<WatchedKind>;
      const m = this.cache[kind] as Map<string, ResourceOf<WatchedKind>>;
      if (u.kind === 'set') m.set(r.metadata.name, r);
      else m.delete(r.metadata.name);
    }
    if (this.inSync) this.markDirty();
  }

  /** This node's blocks that are routes: confirmed (not pending, not being deleted), sorted. */
  private affineBlocks(): AffineBlock[] {
    return [...this.affinities.values()]
      .filter((a) => !a.deleted && a.state !== 'pending')
      .map((a) => ({ cidr: a.cidr, state: a.state }))
      .sort((a, b) => (a.cidr < b.cidr ? -1 : a.cidr > b.cidr ? 1 : 0));
  }

  /** The fixed values, then the provider's for every referenced `name/key` it holds. */
  private async secretValues(
    bgpConfigs: readonly BGPConfiguration[],
    peers: readonly BGPPeer[],
  ): Promise<Readonly<Record<string, string>> | undefined> {
    const provider = this.opts.secretProvider;
    if (!provider) return this.opts.secrets;
    const refs = secretRefsOf(bgpConfigs, peers);
    await provider.follow([...new Set(refs.map((r) => r.name))]);
    const out: Record<string, string> = { ...this.opts.secrets };
    for (const ref of refs) {
      const v = provider.value(ref.name, ref.key);
      if (v !== undefined) out[secretKey(ref)] = v;
    }
    return out;
  }

  // ---- rendering -------------------------------------------------------------------------------

  private markDirty(): void {
    if (this.stopped) return;
    this.dirty = true;
    clearTimeout(this.debounceTimer);
    this.debounceTimer = setTimeout(() => {
      void this.renderNow().catch((e) =>
        this.log.error({ error: (e as Error).message }, 'rendering BIRD configuration failed'),
      );
    }, this.opts.debounceMs ?? 50);
  }

  private async renderNow(): Promise<void> {
    while (this.rendering) await this.rendering.catch(() => undefined);
    this.dirty = false;
    this.rendering = this.renderOnce();
    try {
      await this.rendering;
    } finally {
      this.rendering = undefined;
    }
    if (this.dirty && !this.stopped) this.markDirty();
  }

  private async renderOnce(): Promise<void> {
    if (this.stopped) return;
    const bgpConfigs = [...this.cache.BGPConfiguration.values()] as BGPConfiguration[];
    const peers = [...this.cache.BGPPeer.values()] as BGPPeer[];
    const secrets = await this.secretValues(bgpConfigs, peers);
    if (this.stopped) return;
    const input: BgpInput = {
      nodeName: this.opts.nodeName,
      nodes: [...this.cache.Node.values()] as Node[],
      bgpConfigs,
      peers,
      filters: [...this.cache.BGPFilter.values()] as BGPFilter[],
      pools: [...this.cache.IPPool.values()] as IPPool[],
      affineBlocks: this.affineBlocks(),
      ...(this.opts.logLevel !== undefined ? { logLevel: this.opts.logLevel } : {}),
      ...(this.opts.routerId !== undefined ? { routerId: this.opts.routerId } : {}),
      ...(secrets !== undefined ? { secrets } : {}),
    };
    this.lastInput = input;
    this.renders++;
    const warnings: string[] = [];
    for (const [fam, target] of Object.entries(this.opts.targets)) {
      if (!target) continue;
      const family = Number(fam) as IPFamily;
      const rendered = renderBirdConfig(input, family);
      warnings.push(...rendered.model.warnings);
      const outcome = await target.apply(rendered);
      this.outcomes.set(family, outcome);
      if (outcome.kind !== 'unchanged') this.log.info(`IPv${family} BIRD configuration: ${outcome.kind}`);
    }
    const w = warnings.join('\n');
    if (w !== this.lastWarnings) {
      for (const line of warnings) this.log.warn(line);
      this.lastWarnings = w;
    }
  }
}
