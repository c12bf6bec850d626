/**
 * Rule identity in the kernel: every rule Felix programs carries a comment `cali:<hash>` (upstream's
 * RuleHashPrefix), optionally followed by `; <description>`. The hash covers the chain name, the
 * rule and the hash of the rule before it, so the list of hashes read back from a chain tells
 * whether that chain still holds exactly the rules programmed, in order: a rule deleted, added or
 * changed by hand shows up as a different list. Pure (the rules layer: identity is part of what is
 * rendered; the dataplane reads it back).
 */
import { hash } from 'node:crypto';
import type { NftChainDesired, NftDesired, NftRuleDesired, NftTableDesired } from '../rules/ruleset.js';

export const RULE_HASH_PREFIX = 'cali:';
const HASH_LENGTH = 16;
/** nftables keeps at most 128 bytes of a rule comment (NFTNL_UDATA_COMMENT_MAXLEN). */
const MAX_COMMENT_BYTES = 128;
const HASH_RE = /^cali:([A-Za-z0-9_-]{16})(?:;|$)/;

/** The chained hashes of a chain's rules, first to last. */
export function ruleHashes(chainName: string, rules: readonly NftRuleDesired[]): string[] {
  let prev = '';
  return rules.map((r) => {
    // The one-shot `hash` (same digest as createHash) takes a third of the time: a full sync
    // hashes every rule, 27,000 of them at 300 endpoints and 200 policies.
    const text = `${chainName}\0${prev}\0${JSON.stringify(r.expr)}\0${r.comment ?? ''}`;
    prev = hash('sha224', text, 'base64url').slice(0, HASH_LENGTH);
    return prev;
  });
}

/** The hash a comment carries, or undefined for a rule Felix did not write. */
export function hashOfComment(comment: string | undefined): string | undefined {
  if (comment === undefined) return undefined;
  return HASH_RE.exec(comment)?.[1];
}

function truncateBytes(s: string, max: number): string {
  if (Buffer.byteLength(s, 'utf8') <= max) return s;
  let out = s;
  while (Buffer.byteLength(out, 'utf8') > max) out = out.slice(0, -1);
  return out;
}

/**
 * Chains that already carry their hashes: what `annotateChain` returned. Lets the incremental
 * renderer annotate each chain once, when it renders it, and `annotateRuleset` pass those through
 * untouched, so the ruleset Felix keeps is the one it programs (no second, annotated copy).
 */
const ANNOTATED = new WeakSet<NftChainDesired>();

/** The chain with every rule's comment carrying its hash (itself if it already does). */
export function annotateChain(c: NftChainDesired): NftChainDesired {
  if (ANNOTATED.has(c)) return c;
  const hashes = ruleHashes(c.name, c.rules);
  const rules = c.rules.map((r, i) => {
    const tag = `${RULE_HASH_PREFIX}${hashes[i]}`;
    const comment = r.comment === undefined ? tag : truncateBytes(`${tag}; ${r.comment}`, MAX_COMMENT_BYTES);
    return { expr: r.expr, comment };
  });
  const out = { ...c, rules };
  ANNOTATED.add(out);
  return out;
}

function annotateTable(t: NftTableDesired): NftTableDesired {
  const chains: Record<string, NftChainDesired> = {};
  for (const [name, c] of Object.entries(t.chains)) chains[name] = annotateChain(c);
  return { ...t, chains };
}

/** The ruleset with every rule's comment carrying its hash: what is actually programmed. */
export function annotateRuleset(d: NftDesired): NftDesired {
  return { tables: d.tables.map(annotateTable) };
}

/** The hashes annotated rules carry (undefined for a rule without one). */
export function chainHashes(rules: readonly NftRuleDesired[]): (string | undefined)[] {
  return rules.map((r) => hashOfComment(r.comment));
}
