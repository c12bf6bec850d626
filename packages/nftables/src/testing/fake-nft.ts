/**
 * FakeNft: an in-memory {@link NftClient} for unit tests of code that programs nftables.
 *
 * API
 *   The same calls as NftContext, with the same atomicity: a batch is applied to a copy of the
 *   state and kept only when every command succeeded, so a failing batch leaves nothing behind.
 *   Failures carry libnftables' own error text and are classified by the same function as the
 *   real ones, so callers see the same `NftablesError` codes. `dump()` returns the whole state as
 *   `listRuleset()` would, for golden assertions; `transactions` lists the batches that were
 *   committed; `failNext()` makes the next batch fail with given nft error text.
 *
 * Design
 *   The rules of the state machine (handles, add/create/insert/replace/delete/flush, references,
 *   loops) are in fake-ruleset.ts with what it does not model; nft's parser checks are in
 *   fake-shape.ts. It reads JSON only: a string that is not a JSON document fails as nft's
 *   parser would fail on text it cannot read.
 */
import { NftablesError, nftErrorFromText } from '../errors.js';
import {
  findTable,
  type NftRuleset,
  type NftTableState,
  nftablesItems,
  parseRuleset,
} from '../json/ruleset.js';
import type { NftCommand, NftFamily, NftResult, NftRunOptions } from '../json/types.js';
import type { NftClient } from '../nft-client.js';
import { batchText, type NftBatch } from '../transaction.js';
import {
  applyBatch,
  cloneState,
  emptyState,
  FAKE_METAINFO,
  type FakeState,
  keepHandleCounters,
  rulesetListing,
} from './fake-ruleset.js';
import { FakeNftFailure, parseError } from './fake-values.js';

export interface FakeNftOptions {
  /** Shown in error messages, as a real context's namespace would be. */
  netns?: string;
}

export class FakeNft implements NftClient {
  readonly netns: string | undefined;
  #state: FakeState = emptyState();
  #closed = false;
  #failNext: string | undefined;
  readonly #transactions: NftCommand[][] = [];

  constructor(opts: FakeNftOptions = {}) {
    this.netns = opts.netns;
  }

  /** The batches committed so far, oldest first (list-only batches are not transactions). */
  get transactions(): readonly (readonly NftCommand[])[] {
    return this.#transactions;
  }

  /** Makes the next `run` fail with `errorText` (as nft would print it) and change nothing. */
  failNext(errorText: string): void {
    this.#failNext = errorText;
  }

  async run(batch: NftBatch, opts: NftRunOptions = {}): Promise<NftResult> {
    return this.runSync(batch, opts);
  }

  /** `run` without the promise, for tests that drive the fake directly. */
  runSync(batch: NftBatch, opts: NftRunOptions = {}): NftResult {
    if (this.#closed) {
      throw new NftablesError('failed', 'the nftables context is closed', this.#errorOpts());
    }
    // The same text the real context would send (a transaction's mistake is thrown here).
    const text = batchText(batch);
    if (text === undefined) return { items: [], output: '', warnings: '' };
    if (this.#failNext !== undefined) {
      const text = this.#failNext;
      this.#failNext = undefined;
      throw nftErrorFromText(text, this.netns);
    }
    let list: unknown[];
    try {
      list = readDocument(text);
    } catch (e) {
      if (e instanceof FakeNftFailure) throw nftErrorFromText(e.text, this.netns);
      throw e;
    }
    const scratch = cloneState(this.#state);
    let out: ReturnType<typeof applyBatch>;
    try {
      out = applyBatch(scratch, list);
    } catch (e) {
      if (!(e instanceof FakeNftFailure)) throw e;
      if (e.stage === 'kernel' && opts.dryRun !== true) keepHandleCounters(this.#state, scratch);
      throw nftErrorFromText(e.text, this.netns);
    }
    const changed = out.echoed.length > 0;
    if (opts.dryRun !== true) {
      this.#state = scratch;
      if (changed) this.#transactions.push(structuredClone(list) as NftCommand[]);
    }
    const items: unknown[] = [];
    let output = '';
    if (out.listedAnything) {
      items.push(...out.listed);
      output = `${JSON.stringify({ nftables: [{ metainfo: FAKE_METAINFO }, ...out.listed] })}\n`;
    } else if (opts.echo && changed) {
      items.push(...out.echoed);
      output = `${JSON.stringify({ nftables: out.echoed })}\n`;
    }
    return { items, output, warnings: '' };
  }

  async listRuleset(): Promise<NftRuleset> {
    return this.dump();
  }

  async listTable(family: NftFamily, name: string): Promise<NftTableState> {
    const t = findTable(this.dump(), family, name);
    if (!t) {
      throw nftErrorFromText(`Error: No such file or directory\nlist table ${family} ${name}\n`, this.netns);
    }
    return t;
  }

  /** The whole ruleset, as `listRuleset()` gives it: for golden assertions. */
  dump(): NftRuleset {
    return parseRuleset({ nftables: [{ metainfo: FAKE_METAINFO }, ...rulesetListing(this.#state)] });
  }

  /** The ruleset as the JSON text `nft -j list ruleset` prints. */
  dumpJson(): string {
    return JSON.stringify({ nftables: [{ metainfo: FAKE_METAINFO }, ...rulesetListing(this.#state)] });
  }

  async close(): Promise<void> {
    this.#closed = true;
  }

  #errorOpts(): { netns?: string } {
    return this.netns === undefined ? {} : { netns: this.netns };
  }
}

function readDocument(text: string): unknown[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    const line = text.split('\n')[0] ?? '';
    throw new FakeNftFailure(
      `<cmdline>:1:1-1: Error: syntax error (FakeNft reads JSON documents only)\n${line}\n^\n`,
      'parse',
    );
  }
  try {
    return nftablesItems(doc).filter((i) => !(typeof i === 'object' && i !== null && 'metainfo' in i));
  } catch {
    throw parseError('Input is not an nftables JSON document.', 0);
  }
}
