/**
 * BirdBridge: keeps BIRD's configuration in step with the datastore, for one node.
 *
 *   Datastore.list+watch ─ Node ────────────┐
 *                        ─ BGPConfiguration ┤ (cache by name)
 *                        ─ BGPPeer ─────────┼──► dirty ──(debounce)──► BgpInput snapshot
 *                        ─ IPPool ──────────┤                            │ renderBirdConfig (per family)
 *   IpamStore affinities(node), watched+polled ┘                          ▼
 *                                                              BirdSupervisor.apply (per family)
 *
 * API: `start()` lists everything, renders and applies once (resolves after the first apply), then
 * follows watch events and polls affinities; `stop()` ends watches and timers and stops the
 * supervisors it was given. `snapshot()` is the input the last render used.
 * Design: every change only marks the state dirty; one render runs at a time, and a change made
 * while it runs triggers one more. A watch that ends or fails is re-listed and re-watched after a
 * short delay; a `resync` event replaces that kind's cache. Affinities are re-read whenever their
 * watch reports a change (a new block reaches BIRD within the debounce), and also every
 * `affinityPollMs` as a safety net; `pending` and deleted affinities are not routes yet.
 */
import type { BGPConfiguration, BGPPeer, IPPool, Kind, Node, ResourceOf } from '@calico-ts/api';
import type { BlockAffinity, Datastore, VersionedList } from '@calico-ts/datastore';
import type { ApplyOutcome, BirdLogger } from './bird/bird-supervisor.js';
import { BirdBridgeError } from './errors.js';
import type { AffineBlock, BgpInput, IPFamily } from './render/bgp-input.js';
import { renderBirdConfig } from './render/bird-config-renderer.js';

/** The part of `BirdSupervisor` the bridge uses (a fake in unit tests). */
export interface BirdConfigTarget {
  apply(config: { main: string; files: Readonly<Record<string, string>> }): Promise<ApplyOutcome>;
  stop(): Promise<void>;
}

/** The part of `IpamStore` the bridge uses. */
export interface AffinitySource {
  listAffinities(host?: string): Promise<VersionedList<BlockAffinity>>;
  /** Revisions at which the host's affinities changed; without it the bridge only polls. */
  watchAffinityChanges?(
    host: string,
    options: { fromRevision?: string; signal?: AbortSignal },
  ): AsyncIterable<string>;
}

export interface BirdBridgeOptions {
  datastore: Datastore;
  ipam: AffinitySource;
  nodeName: string;
  /** One BIRD per family; a family without a target is not rendered. */
  targets: Partial<Record<IPFamily, BirdConfigTarget>>;
  /** Affinities are re-read on every change the watch reports, and also every this often. Default 5000 ms. */
  affinityPollMs?: number;
  /** Quiet time after a change before rendering. Default 50 ms. */
  debounceMs?: number;
  /** Wait before re-listing a kind whose watch ended or failed. Default 1000 ms. */
  rewatchDelayMs?: number;
  logLevel?: string;
  routerId?: string;
  secrets?: Readonly<Record<string, string>>;
  log?: BirdLogger;
}

const WATCHED = ['Node', 'BGPConfiguration', 'BGPPeer', 'IPPool'] as const;
type WatchedKind = (typeof WATCHED)[number];

export class BirdBridge {
  private readonly opts: BirdBridgeOptions;
  private readonly log: BirdLogger;
  private readonly cache: { [K in WatchedKind]: Map<string, ResourceOf<K>> } = {
    Node: new Map(),
    BGPConfiguration: new Map(),
    BGPPeer: new Map(),
    IPPool: new Map(),
  };
  private blocks: AffineBlock[] = [];
  private readonly abort = new AbortController();
  private pollTimer: NodeJS.Timeout | undefined;
  private debounceTimer: NodeJS.Timeout | undefined;
  private rendering: Promise<void> | undefined;
  private dirty = false;
  private started = false;
  private stopped = false;
  private lastWarnings = '';
  private lastInput: BgpInput | undefined;
  private readonly outcomes = new Map<IPFamily, ApplyOutcome>();
  private renders = 0;

  constructor(opts: BirdBridgeOptions) {
    if (!opts.nodeName) throw new BirdBridgeError('invalid-input', 'nodeName is required');
    this.opts = opts;
    this.log = opts.log ?? (() => {});
  }

  /** List everything, render and apply once, then follow changes. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    const revisions = await Promise.all(WATCHED.map((k) => this.relist(k)));
    const affinityRevision = await this.pollAffinities(false);
    await this.renderNow();
    WATCHED.forEach((k, i) => {
      void this.follow(k, revisions[i]!);
    });
    if (this.opts.ipam.watchAffinityChanges) void this.followAffinities(affinityRevision);
    this.schedulePoll();
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.abort.abort();
    clearTimeout(this.pollTimer);
    clearTimeout(this.debounceTimer);
    await this.rendering?.catch(() => undefined);
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
    await Promise.all(WATCHED.map((k) => this.relist(k)));
    await this.pollAffinities(false);
    await this.renderNow();
  }

  // ---- datastore -----------------------------------------------------------------------------

  private async relist<K extends WatchedKind>(kind: K): Promise<string> {
    const list = await this.opts.datastore.list(kind);
    const m = this.cache[kind] as Map<string, ResourceOf<K>>;
    m.clear();
    for (const r of list.items as ResourceOf<K>[]) m.set(r.metadata.name, r);
    return list.revision;
  }

  private async follow<K extends WatchedKind>(kind: K, revision: string): Promise<void> {
    const m = this.cache[kind] as Map<string, ResourceOf<K>>;
    let rev = revision;
    while (!this.stopped) {
      try {
        for await (const ev of this.opts.datastore.watch(kind as Kind as K, {
          revision: rev,
          signal: this.abort.signal,
        })) {
          if (this.stopped) return;
          switch (ev.kind) {
            case 'added':
            case 'modified':
              m.set(ev.resource.metadata.name, ev.resource);
              rev = ev.revision;
              this.markDirty();
              break;
            case 'deleted':
              m.delete(ev.resource.metadata.name);
              rev = ev.revision;
              this.markDirty();
              break;
            case 'resync':
              m.clear();
              for (const r of ev.items) m.set(r.metadata.name, r);
              rev = ev.revision;
              this.markDirty();
              break;
            case 'error':
              this.log('warn', `${kind} ${ev.key} could not be read; left out`, { error: ev.error.message });
              rev = ev.revision;
              break;
            case 'disconnected':
              this.log('warn', `watch of ${kind} lost the datastore`, { error: ev.error.message });
              break;
            case 'reconnected':
              this.log('info', `watch of ${kind} reconnected`);
              break;
          }
        }
        if (this.stopped) return;
        this.log('warn', `watch of ${kind} ended; listing again`);
      } catch (e) {
        if (this.stopped) return;
        this.log('warn', `watch of ${kind} failed; listing again`, { error: (e as Error).message });
      }
      await this.delay(this.opts.rewatchDelayMs ?? 1000);
      if (this.stopped) return;
      try {
        rev = await this.relist(kind);
        this.markDirty();
      } catch (e) {
        this.log('warn', `listing ${kind} failed`, { error: (e as Error).message });
      }
    }
  }

  // ---- affinities ------------------------------------------------------------------------------

  private schedulePoll(): void {
    if (this.stopped) return;
    this.pollTimer = setTimeout(() => {
      void this.pollAffinities(true).finally(() => this.schedulePoll());
    }, this.opts.affinityPollMs ?? 5000);
  }

  /** Follow the affinity watch, re-reading on each change; re-watch after a failure. */
  private async followAffinities(revision: string | undefined): Promise<void> {
    const watch = this.opts.ipam.watchAffinityChanges!.bind(this.opts.ipam);
    let rev = revision;
    while (!this.stopped) {
      try {
        const from = rev === undefined ? {} : { fromRevision: (BigInt(rev) + 1n).toString() };
        for await (const changed of watch(this.opts.nodeName, { ...from, signal: this.abort.signal })) {
          if (this.stopped) return;
          rev = (await this.pollAffinities(true)) ?? changed;
        }
        if (this.stopped) return;
        this.log('warn', 'watch of IPAM affinities ended; watching again');
      } catch (e) {
        if (this.stopped) return;
        this.log('warn', 'watch of IPAM affinities failed; watching again', { error: (e as Error).message });
      }
      await this.delay(this.opts.rewatchDelayMs ?? 1000);
      if (this.stopped) return;
      rev = (await this.pollAffinities(true)) ?? rev;
    }
  }

  /** Re-read this node's affinities; the store revision they were read at, or undefined on failure. */
  private async pollAffinities(markDirty: boolean): Promise<string | undefined> {
    try {
      const { items, revision } = await this.opts.ipam.listAffinities(this.opts.nodeName);
      const blocks = items
        .map((i) => i.value)
        .filter((a) => !a.deleted && a.state !== 'pending')
        .map((a) => ({ cidr: a.cidr, state: a.state }))
        .sort((a, b) => (a.cidr < b.cidr ? -1 : a.cidr > b.cidr ? 1 : 0));
      if (JSON.stringify(blocks) !== JSON.stringify(this.blocks)) {
        this.blocks = blocks;
        if (markDirty) this.markDirty();
      }
      return revision;
    } catch (e) {
      this.log('warn', 'reading IPAM affinities failed; keeping the last ones', {
        error: (e as Error).message,
      });
      return undefined;
    }
  }

  // ---- rendering -------------------------------------------------------------------------------

  private markDirty(): void {
    if (this.stopped) return;
    this.dirty = true;
    clearTimeout(this.debounceTimer);
    this.debounceTimer = setTimeout(() => {
      void this.renderNow().catch((e) =>
        this.log('error', 'rendering BIRD configuration failed', { error: (e as Error).message }),
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
    const input: BgpInput = {
      nodeName: this.opts.nodeName,
      nodes: [...this.cache.Node.values()] as Node[],
      bgpConfigs: [...this.cache.BGPConfiguration.values()] as BGPConfiguration[],
      peers: [...this.cache.BGPPeer.values()] as BGPPeer[],
      pools: [...this.cache.IPPool.values()] as IPPool[],
      affineBlocks: [...this.blocks],
      ...(this.opts.logLevel !== undefined ? { logLevel: this.opts.logLevel } : {}),
      ...(this.opts.routerId !== undefined ? { routerId: this.opts.routerId } : {}),
      ...(this.opts.secrets !== undefined ? { secrets: this.opts.secrets } : {}),
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
      if (outcome.kind !== 'unchanged') this.log('info', `IPv${family} BIRD configuration: ${outcome.kind}`);
    }
    const w = warnings.join('\n');
    if (w !== this.lastWarnings) {
      for (const line of warnings) this.log('warn', line);
      this.lastWarnings = w;
    }
  }

  /** Resolves after `ms`, or at once when the bridge stops. */
  private delay(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.abort.signal.removeEventListener('abort', done);
        resolve();
      };
      const t = setTimeout(done, ms);
      this.abort.signal.addEventListener('abort', done);
    });
  }
}
