import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { isNftablesError } from '../errors.js';
import { findChain, findSetOrMap, findTable, nftablesItems, parseRuleset } from './ruleset.js';

// `nft -j list ruleset` of libnftables 1.0.6 after a batch with sets, a verdict map, a base chain
// and rules with anonymous sets (handle 11 went to the anonymous set of rule 12).
const LISTING = readFileSync(new URL('./testdata/list-ruleset-1.0.6.json', import.meta.url), 'utf8');

describe('parseRuleset', () => {
  it('groups a real listing by table, with rules in their chains in order', () => {
    const rs = parseRuleset(LISTING);
    expect(rs.metainfo).toEqual({
      version: '1.0.6',
      release_name: 'Lester Gooch #5',
      json_schema_version: 1,
    });
    expect(rs.tables.map((t) => [t.family, t.name, t.handle])).toEqual([['ip', 'calico', 4]]);
    const t = findTable(rs, 'ip', 'calico')!;
    expect(t.chains.map((c) => [c.name, c.handle, c.rules.map((r) => r.handle)])).toEqual([
      ['filter-FORWARD', 1, [7, 8, 9, 10]],
      ['cali-fw', 2, [12, 13, 14]],
      ['cali-end', 3, []],
    ]);
    expect(findChain(t, 'filter-FORWARD')).toMatchObject({
      type: 'filter',
      hook: 'forward',
      prio: 0,
      policy: 'accept',
    });
    expect(findChain(t, 'cali-fw')!.rules[0]).toMatchObject({ comment: 'hello', handle: 12 });
    expect(t.sets.map((s) => s.name)).toEqual(['ips', 'plain']);
    expect(t.maps).toEqual([
      {
        family: 'ip',
        name: 'dispatch',
        table: 'calico',
        type: 'ifname',
        handle: 6,
        map: 'verdict',
        elem: [
          ['cali1', { jump: { target: 'cali-fw' } }],
          ['cali2', { drop: null }],
        ],
      },
    ]);
    expect(findSetOrMap(t, 'ips')!.elem).toEqual([{ prefix: { addr: '198.18.0.0', len: 24 } }, '198.19.0.1']);
    expect(findSetOrMap(t, 'dispatch')!.handle).toBe(6);
    expect(findSetOrMap(t, 'nope')).toBeUndefined();
    expect(rs.others).toEqual([]);
  });

  it('reads an empty ruleset', () => {
    const rs = parseRuleset(
      '{"nftables": [{"metainfo": {"version": "1.0.6", "release_name": "Lester Gooch #5", "json_schema_version": 1}}]}\n',
    );
    expect(rs.tables).toEqual([]);
  });

  it('reads a partial listing (list chain) whose table is not printed', () => {
    const rs = parseRuleset({
      nftables: [
        { chain: { family: 'ip', table: 't', name: 'c', handle: 1 } },
        { rule: { family: 'ip', table: 't', chain: 'c', handle: 2, expr: [{ accept: null }] } },
      ],
    });
    expect(rs.tables).toEqual([
      {
        family: 'ip',
        name: 't',
        chains: [
          {
            family: 'ip',
            table: 't',
            name: 'c',
            handle: 1,
            rules: [{ family: 'ip', table: 't', chain: 'c', handle: 2, expr: [{ accept: null }] }],
          },
        ],
        sets: [],
        maps: [],
      },
    ]);
  });

  it('keeps objects it does not model', () => {
    const flowtable = {
      flowtable: { family: 'inet', name: 'f', table: 't', handle: 3, hook: 'ingress', prio: 0 },
    };
    expect(parseRuleset({ nftables: [flowtable] }).others).toEqual([flowtable]);
  });

  it('reads several documents, one per line, as nft prints one per list command', () => {
    const text =
      '{"nftables": [{"table": {"family": "ip", "name": "a", "handle": 1}}]}\n' +
      '{"nftables": [{"table": {"family": "ip6", "name": "b", "handle": 2}}]}\n';
    expect(nftablesItems(text)).toHaveLength(2);
    expect(parseRuleset(text).tables.map((t) => `${t.family} ${t.name}`)).toEqual(['ip a', 'ip6 b']);
  });

  it.each([
    ['not JSON', 'hello'],
    ['no nftables array', { tables: [] }],
    ['an item with two keys', { nftables: [{ table: {}, chain: {} }] }],
    ['a table without a handle', { nftables: [{ table: { family: 'ip', name: 'x' } }] }],
    ['an unknown family', { nftables: [{ table: { family: 'ipx', name: 'x', handle: 1 } }] }],
    ['a rule without expr', { nftables: [{ rule: { family: 'ip', table: 't', chain: 'c', handle: 1 } }] }],
    [
      'a rule before its chain',
      { nftables: [{ rule: { family: 'ip', table: 't', chain: 'c', handle: 1, expr: [] } }] },
    ],
    [
      'a map without its value type',
      { nftables: [{ map: { family: 'ip', table: 't', name: 'm', handle: 1 } }] },
    ],
  ])('rejects %s as invalid', (_what, input) => {
    let err: unknown;
    try {
      parseRuleset(input);
    } catch (e) {
      err = e;
    }
    expect(isNftablesError(err, 'invalid')).toBe(true);
  });
});
