/**
 * NftablesDataplane: keeps the kernel's `calico` tables equal to the desired ruleset.
 *
 *   desired (rules/) ──annotate (rule hashes)──► want
 *   first apply / resync:  nft list ruleset ──observeRuleset──► observed ──diffRuleset(observed, want)──┐
 *   later applies:         programmed ─────────────────────────────────diffRuleset(programmed, want)──┤
 *                                                                                                     ▼
 *                                                 one NftClient.run = one libnftables transaction
 *
 * API: `apply(desired)` moves the kernel to `desired`; `resync(desired)` reads the kernel back first
 * and repairs whatever differs (a rule deleted by hand, a chain added, a table gone). Both resolve
 * with what they did; both throw the `NftablesError` of a batch the kernel refused, after which the
 * next call reads back again.
 *
 * Design: every change is one transaction holding the whole move from one state to the next, so
 * traffic never meets a half-written ruleset (for example a policy chain flushed but not yet
 * refilled). Unchanged chains, sets and maps are not touched, so conntrack-established flows and
 * counters are undisturbed. An incremental batch that fails (the kernel was changed under us) is
 * retried once as a full read-back repair.
 *
 * Thread-safety: calls are serialised internally; one instance per network namespace.
 */
import type { NftClient } from '@calico-ts/nftables';
import { errorMessage, type Logger, NOOP_LOGGER } from '../logging.js';
import type { NftCommand } from '../rules/nft-json.js';
import type { NftDesired } from '../rules/ruleset.js';
import { diffRuleset, toNftDocument } from '../rules/ruleset-diff.js';
import { annotateRuleset } from './rule-hashes.js';
import { observeRuleset } from './ruleset-readback.js';

export interface NftApplyResult {
  /** `incremental`: diffed against what was programmed; `resync`: against the kernel read back. */
  readonly mode: 'incremental' | 'resync';
  /** Commands in the one transaction (0: nothing needed doing, no transaction ran). */
  readonly commands: number;
}

export interface NftablesDataplaneOptions {
  readonly nft: NftClient;
  readonly log?: Logger;
}

export class NftablesDataplane {
  readonly #nft: NftClient;
  readonly #log: Logger;
  /** What the kernel holds, as far as we know; undefined until read back. */
  #programmed: NftDesired | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #everApplied = false;

  constructor(opts: NftablesDataplaneOptions) {
    this.#nft = opts.nft;
    this.#log = opts.log ?? NOOP_LOGGER;
  }

  /** The annotated ruleset last programmed (undefined before the first successful apply). */
  get programmed(): NftDesired | undefined {
    return this.#programmed;
  }

  apply(desired: NftDesired): Promise<NftApplyResult> {
    return this.#serial(() => this.#apply(desired));
  }

  resync(desired: NftDesired): Promise<NftApplyResult> {
    return this.#serial(() => this.#resync(annotateRuleset(desired)));
  }

  #serial<T>(op: () => Promise<T>): Promise<T> {
    const next = this.#queue.then(op, op);
    this.#queue = next.catch(() => {});
    return next;
  }

  async #apply(desired: NftDesired): Promise<NftApplyResult> {
    const want = annotateRuleset(desired);
    if (this.#programmed === undefined) return this.#resync(want);
    const commands = diffRuleset(this.#programmed, want);
    if (commands.length === 0) return { mode: 'incremental', commands: 0 };
    try {
      await this.#run(commands);
    } catch (e) {
      this.#log.warn(
        { err: errorMessage(e), commands: commands.length },
        'nftables refused an incremental update; reading the kernel back to repair',
      );
      this.#programmed = undefined;
      return this.#resync(want);
    }
    this.#programmed = want;
    this.#everApplied = true;
    return { mode: 'incremental', commands: commands.length };
  }

  async #resync(want: NftDesired): Promise<NftApplyResult> {
    this.#programmed = undefined;
    const kernel = await this.#nft.listRuleset();
    const observed = observeRuleset(kernel, want);
    const commands = diffRuleset(observed, want);
    if (commands.length > 0) {
      await this.#run(commands);
      this.#log.info(
        { commands: commands.length },
        this.#everApplied
          ? 'nftables read-back found the calico tables changed; repaired'
          : 'nftables read back and brought up to date',
      );
    }
    this.#programmed = want;
    this.#everApplied = true;
    return { mode: 'resync', commands: commands.length };
  }

  async #run(commands: readonly NftCommand[]): Promise<void> {
    await this.#nft.run(JSON.stringify(toNftDocument(commands)));
  }
}
