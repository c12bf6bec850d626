import type { NftRuleset, NftTableState } from './json/ruleset.js';
import type { NftFamily, NftResult, NftRunOptions } from './json/types.js';
import type { NftBatch } from './transaction.js';

/**
 * What Felix's dataplane needs from nftables: run a batch of commands as one transaction, read
 * back what is programmed. {@link NftContext} is the real one (libnftables in a network
 * namespace); `FakeNft` from `@calico-ts/nftables/testing` is the in-memory one.
 */
/** A table named by family and name. */
export interface NftTableName {
  readonly family: NftFamily;
  readonly name: string;
}

/** One rule of a chain as the kernel holds it (see {@link NftClient.ruleHandles}). */
export interface NftRuleHandle {
  /** The handle the kernel gave the rule, unique in its table for the table's life. */
  readonly handle: number;
  /** The rule's comment, if it has one. */
  readonly comment: string | undefined;
}

/** What runs nftables batches and lists: a libnftables context, or a fake of one for tests. */
export interface NftClient {
  /**
   * Runs a batch as one transaction: either all of its commands take effect or none does. A
   * {@link Transaction} (the usual way), a list of commands, or text passed to nft as is (nft
   * syntax or a JSON document). An empty batch runs nothing. Throws an `NftablesError`
   * classified from nft's error text, or the first mistake a transaction was built with.
   */
  run(batch: NftBatch, opts?: NftRunOptions): Promise<NftResult>;
  /**
   * Optional: brings the client's own view of these tables up to date now, while nothing waits,
   * so that the next transaction does not have to (see {@link NftContext.warmCache}). Resolves
   * when done; a client without such a view need not offer it.
   */
  warmCache?(tables: readonly NftTableName[]): Promise<void>;
  /**
   * Optional: the handle and comment of each rule of one chain, in order, read cheaply (see
   * {@link NftContext.ruleHandles}); a client without it makes callers fall back to rewriting
   * the chain.
   */
  ruleHandles?(family: NftFamily, table: string, chain: string): Promise<readonly NftRuleHandle[]>;
  /** `list ruleset`, parsed. */
  listRuleset(): Promise<NftRuleset>;
  /** `list table <family> <name>`, parsed; `not-found` when there is no such table. */
  listTable(family: NftFamily, name: string): Promise<NftTableState>;
  /** Releases the context. Further calls fail with `failed`. */
  close(): Promise<void>;
}
