import type { BGPFilter, BGPFilterRuleV4 } from '@calico-ts/api';
import { describe, expect, it } from 'vitest';
import { deriveFilterFunctions, filterFunctionName } from './bgp-filters.js';

describe('BGPFilter function names', () => {
  it('are upstream’s, quoted', () => {
    expect(filterFunctionName('my-filter', 'import', 4)).toBe("'bgp_my-filter_importFilterV4'");
    expect(filterFunctionName('my-filter', 'export', 6)).toBe("'bgp_my-filter_exportFilterV6'");
  });
  it('a long name is cut and hashed so the symbol stays within BIRD’s 64 characters', () => {
    const long =
      'very-long-name-that-should-be-truncated-because-it-is-longer-than-the-max-bird-symbol-length';
    const n = filterFunctionName(long, 'import', 4);
    expect(n.length).toBe(66); // 64 + the quotes
    expect(n).toMatch(/^'bgp_very-long-name-that-should-b_[0-9A-F]{16}_importFilterV4'$/);
    // Two names that share the head still differ.
    expect(filterFunctionName(`${long}-2`, 'import', 4)).not.toBe(n);
    // A name of exactly 45 characters fits as it is.
    expect(filterFunctionName('a'.repeat(45), 'import', 4)).toBe(`'bgp_${'a'.repeat(45)}_importFilterV4'`);
  });
});

describe('BGPFilter rules that name what is not evaluated', () => {
  const filter = (rules: BGPFilterRuleV4[]): BGPFilter => ({
    apiVersion: 'projectcalico.org/v3',
    kind: 'BGPFilter',
    metadata: { name: 'f' },
    spec: { exportV4: rules },
  });
  it('an Accept rule with one is left out, a Reject rule applies without it, and both are reported', () => {
    const warnings: string[] = [];
    const [fn] = deriveFilterFunctions(
      [
        filter([
          { action: 'Accept', matchOperator: 'In', cidr: '198.19.0.0/16', peerType: 'eBGP' },
          { action: 'Reject', matchOperator: 'In', cidr: '198.19.1.0/24', asPathPrefix: [65000] },
          { action: 'Accept', operations: [{ prependASPath: { prefix: [65000] } }] },
        ]),
      ],
      4,
      warnings,
    );
    expect(fn!.statements).toEqual(['if ((net ~ 198.19.1.0/24)) then { reject; }']);
    expect(warnings).toEqual([
      'BGPFilter f: spec.exportV4[0]: peerType not supported; the Accept rule is left out',
      'BGPFilter f: spec.exportV4[1]: asPathPrefix not supported; the Reject rule applies without it',
      'BGPFilter f: spec.exportV4[2]: operations not supported; the Accept rule is left out',
    ]);
  });
  it('a filter with no rules for a family makes no function for it', () => {
    const warnings: string[] = [];
    expect(deriveFilterFunctions([filter([{ action: 'Reject' }])], 6, warnings)).toEqual([]);
  });
});
