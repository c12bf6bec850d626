/**
 * NftablesDataplane: keeps the kernel's `calico` tables equal to the desired ruleset.
 *
 *   desired (rules/) ──annotate (rule hashes)──► want
 *   first apply / resync:  nft list ruleset ──observeRuleset──► observed ──diffRuleset(observed, want)──┐
 *   later applies:         programmed ─────────────────────────────────diffRuleset(programmed, want)──┤
 *                                                                                                     ▼
 *                                     one Transaction, one NftClient.run = one libnftables transaction
 *
 * With a `change` (what the incremental renderer re-rendered), `apply(desired, change)` compares
 * only the named chains, sets and maps with what it programmed: a change costs what it changes.
 * The programmed state is a table of references to the desired objects themselves (the renderer
 * replaces an object when it re-renders it), so the ruleset is held once.
 *
 * API: `apply(desired, change?)` moves the kernel to `desired`; `resync(desired)` reads the kernel back first
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
 * After each transaction the client is asked to warm its cache (`NftClient.warmCache`): libnftables
 * fetches every chain and set of the namespace before a transaction that adds rules or flushes sets
 * whenever the kernel's ruleset moved, and our own commit moves it; fetched right after the commit,
 * it is current when the next change comes, and that change pays only for itself.
 *
 * With a second client for IPv6 (`nftIp6`), a large batch (a full sync, a repair) is split by
 * family and the two halves run at once, one transaction each, in their own libnftables contexts
 * (each its own worker thread): the `ip` and `ip6` tables are independent (a packet meets the
 * tables of its own family only), and libnftables' parse and evaluation, most of a full sync, then
 * use two CPUs. Each family's move is still one transaction. Smaller batches run in `nft` alone:
 * a commit moves the whole namespace's generation, so two contexts committing at once make each
 * other's cache stale, and the refetch would cost a small change more than the split saves; `nft`'s
 * cache is the one kept warm.
 *
 * Thread-safety: calls are serialised internally; one instance per network namespace.
 */
import { type NftClient, type NftCommand, Transaction } from '@calico-ts/nftables';
import { errorMessage, type Logger, NOOP_LOGGER } from '../logging.js';
import type { RulesetChange } from '../rules/incremental-renderer.js';
import type { IpFamily } from '../rules/names.js';
import { annotateChain, annotateRuleset } from '../rules/rule-hashes.js';
import { type NftDesired, tablesCopy } from '../rules/ruleset.js';
import {
  commandFamily,
  diffRuleset,
  type RuleHandles,
  ruleHandlesKey,
  trailingRemovals,
} from '../rules/ruleset-diff.js';
import { observeRuleset } from './ruleset-readback.js';

export interface NftApplyResult {
  /** `incremental`: diffed against what was programmed; `resync`: against the kernel read back. */
  readonly mode: 'incremental' | 'resync';
  /** Commands in the one transaction (0: nothing needed doing, no transaction ran). */
  readonly commands: number;
}

export interface NftablesDataplaneOptions {
  readonly nft: NftClient;
  /**
   * A second client, in the same network namespace, for the `ip6` family's commands: given, a
   * large batch touching both families runs as two transactions at once (see the class comment).
   */
  readonly nftIp6?: NftClient;
  /** With `nftIp6`: the smallest batch split by family (default {@link SPLIT_MIN_COMMANDS}). */
  readonly splitMinCommands?: number;
  readonly log?: Logger;
}

export class NftablesDataplane {
  readonly #nft: NftClient;
  readonly #nftIp6: NftClient | undefined;
  readonly #splitMin: number;
  readonly #log: Logger;
  /** What the kernel holds, as far as we know; undefined until read back. */
  #programmed: NftDesired | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #everApplied = false;
  #warmed: Promise<void> = Promise.resolve();

  constructor(opts: NftablesDataplaneOptions) {
    this.#nft = opts.nft;
    this.#nftIp6 = opts.nftIp6;
    this.#splitMin = opts.splitMinCommands ?? SPLIT_MIN_COMMANDS;
    this.#log = opts.log ?? NOOP_LOGGER;
  }

  /** The annotated ruleset last programmed (undefined before the first successful apply). */
  get programmed(): NftDesired | undefined {
    return this.#programmed;
  }

  /**
   * Moves the kernel to `desired`. With `change`, only the objects it names can differ from what
   * was programmed last (the caller vouches for that); without, everything is compared.
   */
  apply(desired: NftDesired, change?: RulesetChange): Promise<NftApplyResult> {
    return this.#serial(() => this.#apply(desired, change));
  }

  resync(desired: NftDesired): Promise<NftApplyResult> {
    return this.#serial(() => this.#resync(annotateRuleset(desired)));
  }

  #serial<T>(op: () => Promise<T>): Promise<T> {
    const next = this.#queue.then(op, op);
    this.#queue = next.catch(() => {});
    return next;
  }

  async #apply(desired: NftDesired, change: RulesetChange): Promise<NftApplyResult> {
    // The incremental renderer annotates the chains it renders; annotating the whole ruleset
    // again would cost as much as it holds.
    const want =
      change !== undefined && changedChainsAnnotated(desired, change) ? desired : annotateRuleset(desired);
    const programmed = this.#programmed;
    if (programmed === undefined) return this.#resync(want);
    const sameTables =
      programmed.tables.length === want.tables.length &&
      programmed.tables.every(
        (t, i) => t.family === want.tables[i]!.family && t.name === want.tables[i]!.name,
      );
    const only = sameTables ? change : undefined;
    const handles =
      only === undefined ? undefined : await this.#ruleHandles(trailingRemovals(programmed, want, only));
    const commands = diffRuleset(programmed, want, only, handles);
    if (commands.length === 0) {
      if (only === undefined) this.#programmed = tablesCopy(want);
      return { mode: 'incremental', commands: 0 };
    }
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
    if (only === undefined) this.#programmed = tablesCopy(want);
    else recordChange(programmed, want, only);
    this.#everApplied = true;
    this.#warm(want);
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
    this.#programmed = tablesCopy(want);
    this.#everApplied = true;
    this.#warm(want);
    return { mode: 'resync', commands: commands.length };
  }

  /**
   * The handles of the rules of chains that only lost rules at their end, so that those rules are
   * deleted by handle: a transaction that adds no rule spares the kernel validating the whole
   * table. A chain whose handles cannot be read is rewritten as before.
   */
  async #ruleHandles(
    chains: readonly { family: IpFamily; table: string; chain: string }[],
  ): Promise<RuleHandles | undefined> {
    const nft = this.#nft;
    if (chains.length === 0 || !nft.ruleHandles) return undefined;
    const out = new Map<string, Map<string, number>>();
    for (const c of chains) {
      try {
        const rules = await nft.ruleHandles(c.family, c.table, c.chain);
        const byComment = new Map<string, number>();
        for (const r of rules) if (r.comment !== undefined) byComment.set(r.comment, r.handle);
        out.set(ruleHandlesKey(c.family, c.chain), byComment);
      } catch (e) {
        this.#log.debug({ err: errorMessage(e), chain: c.chain }, 'nftables rule handles unreadable');
      }
    }
    return out;
  }

  /**
   * One transaction; with `nftIp6` and at least `splitMinCommands` commands of both
   * families, one per family, run at once. When one fails, the other is still awaited before the
   * error is thrown, so the next step (a read-back) sees the kernel at rest.
   */
  async #run(commands: readonly NftCommand[]): Promise<void> {
    const ip6: NftCommand[] = [];
    const rest: NftCommand[] = [];
    if (this.#nftIp6 !== undefined && commands.length >= this.#splitMin) {
      for (const c of commands) (commandFamily(c) === 'ip6' ? ip6 : rest).push(c);
    }
    if (this.#nftIp6 === undefined || ip6.length === 0 || rest.length === 0) {
      await this.#nft.run(Transaction.of(commands));
      return;
    }
    const results = await Promise.allSettled([
      this.#nft.run(Transaction.of(rest)),
      this.#nftIp6.run(Transaction.of(ip6)),
    ]);
    for (const r of results) if (r.status === 'rejected') throw r.reason;
  }

  /**
   * After a transaction: have the client fetch what its next transaction needs now, not when a
   * change is waiting (libnftables' cache; see `NftContext.warmCache`). Not awaited by `apply`:
   * the client runs it before anything queued after it. Failure costs only the head start.
   */
  #warm(want: NftDesired): void {
    if (!this.#nft.warmCache) return;
    const tables = want.tables.map((t) => ({ family: t.family, name: t.name }));
    this.#warmed = this.#nft.warmCache(tables).catch((e) => {
      this.#log.debug({ err: errorMessage(e) }, 'nftables cache warm-up failed');
    });
  }

  /** Resolves when the client has done the work queued after the last transaction (benchmarks). */
  settled(): Promise<void> {
    return this.#queue.then(() => this.#warmed);
  }
}

type Rec<T> = Record<string, T>;

/**
 * The smallest batch split by family when there is a second client. A full sync at 300 endpoints
 * is ~29,000 commands, a pod ~50–80, one policy edit a few: a split pays a cache refetch in the
 * other context, ~10 ms at that scale, worth it only where the parse is far longer.
 */
export const SPLIT_MIN_COMMANDS = 1000;

function recordNames<T>(into: Readonly<Rec<T>>, from: Readonly<Rec<T>>, names: ReadonlySet<string>): void {
  const rec = into as Rec<T>;
  for (const n of names) {
    const v = from[n];
    if (v === undefined) delete rec[n];
    else rec[n] = v;
  }
}

/** After a successful incremental apply: the programmed tables take the changed objects. */
function recordChange(programmed: NftDesired, want: NftDesired, change: NonNullable<RulesetChange>): void {
  for (const [i, t] of programmed.tables.entries()) {
    const c = change.get(t.family);
    const w = want.tables[i]!;
    if (!c) continue;
    recordNames(t.chains, w.chains, c.chains);
    recordNames(t.sets, w.sets, c.sets);
    recordNames(t.maps, w.maps, c.maps);
  }
}

function changedChainsAnnotated(d: NftDesired, change: NonNullable<RulesetChange>): boolean {
  for (const t of d.tables) {
    for (const n of change.get(t.family)?.chains ?? []) {
      const c = t.chains[n];
      if (c !== undefined && annotateChain(c) !== c) return false;
    }
  }
  return true;
}
