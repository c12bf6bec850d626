import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ruleHashes } from './rule-hashes.js';
import type { NftRuleDesired } from './ruleset.js';

describe('ruleHashes', () => {
  it('keeps the digests rules already carry in the kernel: chained sha224, base64url, 16 characters', () => {
    const rules: NftRuleDesired[] = [
      { expr: [{ match: { op: '==', left: { meta: { key: 'l4proto' } }, right: 'tcp' } }, { accept: null }] },
      { expr: [{ drop: null }], comment: 'Drop if no policies passed packet' },
    ];
    // The hash as it was first written (a Hash object per rule); a different digest would make
    // every chain look tampered with after an upgrade and be rewritten.
    let prev = '';
    const expected = rules.map((r) => {
      const h = createHash('sha224');
      h.update(`filter-cali-tw-cali1\0${prev}\0${JSON.stringify(r.expr)}\0${r.comment ?? ''}`, 'utf8');
      prev = h.digest('base64url').slice(0, 16);
      return prev;
    });
    expect(ruleHashes('filter-cali-tw-cali1', rules)).toEqual(expected);
    expect(ruleHashes('filter-cali-tw-cali2', rules)[0]).not.toBe(expected[0]);
  });
});
