/**
 * RulesManager: the nftables rules as one DataplaneManager (upstream: the table's part of
 * `int_dataplane.go`'s apply, fed by the policy, endpoint and IP set managers).
 *
 *   onUpdate(diff) ──► IncrementalRenderer.onUpdate (inputs + dirty sections);
 *                      diff.tunnelSources ──► setTunnelRules (the node-wide section)
 *   completeDeferredWork() ──► IncrementalRenderer.render(): the sections the diffs touched
 *        ──► NftablesDataplane.apply(desired, change): those objects compared with what was
 *            programmed ── one transaction (one per family when split)
 *   resync() ──► render, then NftablesDataplane.resync: read back, compare everything, repair
 *
 * API: `onUpdate`, `setConfig`, `setTunnelRules` record; `completeDeferredWork()` programs and
 * keeps what it did in `lastApply`, or rejects with the transaction's error (nothing programmed,
 * the next call reads back). `onApplied` hears every transaction attempt (for metrics).
 *
 * Thread-safety: calls are serialised by the caller (LinuxDataplane).
 */
import type { NftClient } from '@calico-ts/nftables';
import type { DataplaneDiff, DataplaneState } from '../calc/types.js';
import type { Logger } from '../logging.js';
import type { RulesConfig } from '../rules/config.js';
import { IncrementalRenderer } from '../rules/incremental-renderer.js';
import type { TunnelRules } from '../rules/table-builder.js';
import type { DataplaneManager } from './dataplane-manager.js';
import { type NftApplyResult, NftablesDataplane } from './nftables-dataplane.js';

export interface RulesManagerOptions {
  readonly nft: NftClient;
  /** A second client for the `ip6` table's transactions (see `NftablesDataplane`). */
  readonly nftIp6?: NftClient;
  readonly rulesConfig: RulesConfig;
  readonly log: Logger;
  /** Called after every nftables transaction attempt. */
  readonly onApplied?: (r: NftApplyResult & { ok: boolean; seconds: number }) => void;
}

export class RulesManager implements DataplaneManager {
  readonly #o: RulesManagerOptions;
  readonly #renderer: IncrementalRenderer;
  readonly #nft: NftablesDataplane;
  #last: NftApplyResult | undefined;

  constructor(opts: RulesManagerOptions) {
    this.#o = opts;
    this.#renderer = new IncrementalRenderer(opts.rulesConfig);
    this.#nft = new NftablesDataplane({
      nft: opts.nft,
      ...(opts.nftIp6 !== undefined ? { nftIp6: opts.nftIp6 } : {}),
      log: opts.log,
    });
  }

  /** How many local endpoints, active policies and profiles, IP sets the rules are made from. */
  get counts(): IncrementalRenderer['counts'] {
    return this.#renderer.counts;
  }

  /** What the last `completeDeferredWork()` did (undefined before one succeeded). */
  get lastApply(): NftApplyResult | undefined {
    return this.#last;
  }

  /** The diff that turns the recorded inputs into `state` (removals of what `state` lacks). */
  diffTo(state: DataplaneState): DataplaneDiff {
    return this.#renderer.diffTo(state);
  }

  onUpdate(diff: DataplaneDiff): void {
    this.#renderer.onUpdate(diff);
    if (diff.tunnelSources) this.setTunnelRules(diff.tunnelSources);
  }

  setConfig(cfg: RulesConfig): void {
    this.#renderer.setConfig(cfg);
  }

  /** Records what the rules need of the tunnels (IPIP and VXLAN sources). */
  setTunnelRules(t: TunnelRules): void {
    this.#renderer.setTunnelRules(t);
  }

  async completeDeferredWork(): Promise<void> {
    const change = this.#renderer.render();
    const t0 = performance.now();
    let nft: NftApplyResult;
    try {
      nft = await this.#nft.apply(this.#renderer.desired(), change);
    } catch (e) {
      this.#o.onApplied?.({
        mode: 'incremental',
        commands: 0,
        ok: false,
        seconds: (performance.now() - t0) / 1000,
      });
      throw e;
    }
    this.#o.onApplied?.({ ...nft, ok: true, seconds: (performance.now() - t0) / 1000 });
    this.#last = nft;
  }

  /** Reads the tables back and repairs them; changes recorded since the last apply included. */
  async resync(): Promise<NftApplyResult> {
    const t0 = performance.now();
    this.#renderer.render();
    const r = await this.#nft.resync(this.#renderer.desired());
    this.#o.onApplied?.({ ...r, ok: true, seconds: (performance.now() - t0) / 1000 });
    return r;
  }
}
