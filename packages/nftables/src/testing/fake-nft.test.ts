import { beforeEach, describe, expect, it } from 'vitest';
import { isNftablesError, type NftablesError } from '../errors.js';
import {
  accept,
  add,
  anonSet,
  chain,
  cidr,
  counter,
  create,
  ctState,
  del,
  drop,
  elements,
  flush,
  flushRuleset,
  goto,
  iifname,
  insert,
  ipSaddr,
  jump,
  log,
  map,
  mapByName,
  masquerade,
  oifname,
  replace,
  returnVerdict,
  rule,
  ruleRef,
  set,
  setByName,
  setMark,
  setRef,
  table,
  tableRef,
  tcpDport,
  vmap,
} from '../json/builders.js';
import type { NftCommand } from '../json/types.js';
import { FakeNft } from './fake-nft.js';

const t = tableRef('ip', 'calico');
const FWD = { type: 'filter', hook: 'forward', prio: 0, policy: 'accept' } as const;

async function failure(p: Promise<unknown>): Promise<NftablesError> {
  try {
    await p;
  } catch (e) {
    if (isNftablesError(e)) return e;
    throw e;
  }
  throw new Error('expected the batch to fail');
}

/** Chain name → rule handles, for the table `calico`. */
function layout(nft: FakeNft): Record<string, number[]> {
  const tbl = nft.dump().tables.find((x) => x.name === 'calico');
  return Object.fromEntries((tbl?.chains ?? []).map((c) => [c.name, c.rules.map((r) => r.handle)]));
}

describe('FakeNft', () => {
  let nft: FakeNft;
  beforeEach(() => {
    nft = new FakeNft({ netns: 'node1' });
  });

  it('programs tables, chains, sets, maps and rules and lists them as nft -j does', async () => {
    await nft.run([
      add(table(t)),
      add(chain(t, 'filter-FORWARD', FWD)),
      add(chain(t, 'cali-fw')),
      add(set(t, 'hosts', 'ipv4_addr', { flags: ['interval'] })),
      add(map(t, 'dispatch', 'ifname', 'verdict')),
      add(elements(t, 'hosts', [cidr('198.18.0.0/24'), cidr('198.19.0.1/32')])),
      add(elements(t, 'dispatch', [['cali1', jump('cali-fw')]])),
      add(rule(t, 'filter-FORWARD', [ctState('established', 'related'), accept()])),
      add(rule(t, 'filter-FORWARD', [vmap({ meta: { key: 'iifname' } }, setRef('dispatch'))])),
      add(
        rule(t, 'cali-fw', [ipSaddr(setRef('hosts')), { counter: null }, log({ flags: ['all'] }), drop()], {
          comment: 'c',
        }),
      ),
    ]);
    expect(nft.dump()).toEqual({
      metainfo: { version: '1.0.6', release_name: 'Lester Gooch #5', json_schema_version: 1 },
      others: [],
      tables: [
        {
          family: 'ip',
          name: 'calico',
          handle: 1,
          sets: [
            {
              family: 'ip',
              name: 'hosts',
              table: 'calico',
              type: 'ipv4_addr',
              handle: 3,
              flags: ['interval'],
              elem: [{ prefix: { addr: '198.18.0.0', len: 24 } }, '198.19.0.1'],
            },
          ],
          maps: [
            {
              family: 'ip',
              name: 'dispatch',
              table: 'calico',
              type: 'ifname',
              handle: 4,
              map: 'verdict',
              elem: [['cali1', { jump: { target: 'cali-fw' } }]],
            },
          ],
          chains: [
            {
              family: 'ip',
              table: 'calico',
              name: 'filter-FORWARD',
              handle: 1,
              type: 'filter',
              hook: 'forward',
              prio: 0,
              policy: 'accept',
              rules: [
                {
                  family: 'ip',
                  table: 'calico',
                  chain: 'filter-FORWARD',
                  handle: 5,
                  expr: [ctState('established', 'related'), accept()],
                },
                {
                  family: 'ip',
                  table: 'calico',
                  chain: 'filter-FORWARD',
                  handle: 6,
                  expr: [vmap({ meta: { key: 'iifname' } }, '@dispatch')],
                },
              ],
            },
            {
              family: 'ip',
              table: 'calico',
              name: 'cali-fw',
              handle: 2,
              rules: [
                {
                  family: 'ip',
                  table: 'calico',
                  chain: 'cali-fw',
                  handle: 7,
                  comment: 'c',
                  // As nft prints them: a zeroed counter, a lone flag without its list.
                  expr: [ipSaddr('@hosts'), counter(), { log: { flags: 'all' } }, drop()],
                },
              ],
            },
          ],
        },
      ],
    });
    expect(await nft.listRuleset()).toEqual(nft.dump());
    expect(nft.transactions).toHaveLength(1);
  });

  it('gives anonymous sets and inline verdict maps a handle before their rule', async () => {
    await nft.run([add(table(t)), add(chain(t, 'a')), add(chain(t, 'b'))]);
    const res = await nft.run(
      [
        add(rule(t, 'a', [tcpDport(anonSet([80, 443])), accept()])),
        add(
          rule(t, 'a', [
            vmap({ meta: { key: 'iifname' } }, [
              ['x', accept()],
              ['y', jump('b')],
            ]),
          ]),
        ),
        add(rule(t, 'a', [drop()])),
      ],
      { echo: true },
    );
    expect(layout(nft).a).toEqual([4, 6, 7]);
    expect(res.items.map((i) => (i as { add: { rule: { handle: number } } }).add.rule.handle)).toEqual([
      4, 6, 7,
    ]);
  });

  it('echoes committed commands with their new handles', async () => {
    const res = await nft.run(
      [add(table(t)), add(chain(t, 'a')), add(set(t, 's', 'mark')), add(rule(t, 'a', [accept()]))],
      {
        echo: true,
      },
    );
    expect(res.items).toEqual([
      { add: { table: { family: 'ip', name: 'calico', handle: 1 } } },
      { add: { chain: { family: 'ip', table: 'calico', name: 'a', handle: 1 } } },
      { add: { set: { family: 'ip', table: 'calico', name: 's', type: 'mark', handle: 2 } } },
      { add: { rule: { family: 'ip', table: 'calico', chain: 'a', expr: [{ accept: null }], handle: 3 } } },
    ]);
    expect(JSON.parse(res.output)).toEqual({ nftables: res.items });
    expect((await nft.run([add(rule(t, 'a', [drop()]))])).items).toEqual([]);
  });

  it('applies a batch whole or not at all', async () => {
    await nft.run([add(table(t)), add(chain(t, 'a')), add(rule(t, 'a', [accept()]))]);
    const before = nft.dumpJson();
    const e = await failure(
      nft.run([
        add(chain(t, 'b')),
        add(rule(t, 'a', [jump('b')])),
        add(set(t, 's', 'ipv4_addr')),
        add(rule(t, 'a', [goto('missing')])),
        add(rule(t, 'a', [drop()])),
      ]),
    );
    expect(e.code).toBe('not-found');
    expect(e.detail).toBe('internal:0:0-0: Error: No such file or directory\n\n');
    expect(e.netns).toBe('node1');
    expect(nft.dumpJson()).toBe(before);
    expect(nft.transactions).toHaveLength(1);
  });

  it('uses up handles as the kernel does: a rejected batch keeps its numbers, an unevaluable one none', async () => {
    // Sequences like this one on libnftables 1.0.6 / Linux 6.18 gave exactly these handles.
    await nft.run([add(table(t)), add(chain(t, 'a')), add(rule(t, 'a', [accept()]))]);
    const e = await failure(
      nft.run([
        add(chain(t, 'b')), // 3
        add(rule(t, 'a', [jump('b')])), // 4
        add(set(t, 's', 'ipv4_addr')), // 5
        create(chain(t, 'a')), // EEXIST
        add(rule(t, 'a', [drop()])), // 6
      ]),
    );
    expect(e.code).toBe('exists');
    let echo = await nft.run([add(chain(t, 'b'))], { echo: true });
    expect(echo.items).toEqual([{ add: { chain: { family: 'ip', table: 'calico', name: 'b', handle: 7 } } }]);
    // '@nosuch' is refused by nft itself: nothing reaches the kernel, nothing is used up.
    expect((await failure(nft.run([add(rule(t, 'a', [ipSaddr(setRef('nosuch'))]))]))).code).toBe('not-found');
    echo = await nft.run([add(chain(t, 'c'))], { echo: true });
    expect(echo.items).toEqual([{ add: { chain: { family: 'ip', table: 'calico', name: 'c', handle: 8 } } }]);
    // A table made in a rejected batch used up its table handle.
    const t2 = tableRef('ip', 't2');
    expect((await failure(nft.run([add(table(t2)), create(table(t))]))).code).toBe('exists');
    echo = await nft.run([add(table(tableRef('ip', 't3')))], { echo: true });
    expect(echo.items).toEqual([{ add: { table: { family: 'ip', name: 't3', handle: 3 } } }]);
  });

  it('treats add as idempotent and create as exclusive', async () => {
    await nft.run([
      add(table(t)),
      add(chain(t, 'a')),
      add(set(t, 's', 'ipv4_addr', { elem: ['198.18.0.1'] })),
    ]);
    await nft.run([
      add(table(t)),
      add(chain(t, 'a')),
      add(set(t, 's', 'ipv4_addr')),
      add(elements(t, 's', ['198.18.0.1'])),
    ]);
    expect(nft.transactions).toHaveLength(2);
    expect(nft.dump().tables[0]!.sets[0]!.elem).toEqual(['198.18.0.1']);
    for (const cmd of [
      create(table(t)),
      create(chain(t, 'a')),
      create(set(t, 's', 'ipv4_addr')),
      create(elements(t, 's', ['198.18.0.1'])),
    ]) {
      const e = await failure(nft.run([cmd]));
      expect(e.code).toBe('exists');
      expect(e.detail).toBe('internal:0:0-0: Error: Could not process rule: File exists\n\n');
    }
  });

  it('updates a base chain policy with add', async () => {
    await nft.run([
      add(table(t)),
      add(chain(t, 'in', { type: 'filter', hook: 'input', prio: 0, policy: 'accept' })),
    ]);
    await nft.run([add(chain(t, 'in', { type: 'filter', hook: 'input', prio: 0, policy: 'drop' }))]);
    expect(nft.dump().tables[0]!.chains[0]).toMatchObject({ handle: 1, policy: 'drop' });
  });

  it('fails with exists when a map key is taken by another value', async () => {
    await nft.run([
      add(table(t)),
      add(map(t, 'm', 'ipv4_addr', 'mark')),
      add(elements(t, 'm', [['198.18.0.1', 5]])),
    ]);
    await nft.run([add(elements(t, 'm', [['198.18.0.1', 5]]))]);
    expect((await failure(nft.run([add(elements(t, 'm', [['198.18.0.1', 6]]))]))).code).toBe('exists');
  });

  it('places rules as libnftables 1.0.6 does: add appends or follows an index, insert leads or precedes', async () => {
    await nft.run([add(table(t)), add(chain(t, 'a'))]);
    await nft.run([
      add(rule(t, 'a', [accept()])),
      add(rule(t, 'a', [drop()])),
      insert(rule(t, 'a', [returnVerdict()])),
    ]);
    expect(layout(nft).a).toEqual([4, 2, 3]);
    // `add` with a handle appends (the handle is not a position for add in 1.0.6).
    await nft.run([
      add(rule(t, 'a', [counter()], { handle: 2 })),
      insert(rule(t, 'a', [log()], { handle: 3 })),
    ]);
    expect(layout(nft).a).toEqual([4, 2, 6, 3, 5]);
    await nft.run([
      add(rule(t, 'a', [masquerade()], { index: 0 })),
      insert(rule(t, 'a', [setMark(1)], { index: 1 })),
    ]);
    expect(layout(nft).a).toEqual([4, 8, 7, 2, 6, 3, 5]);
    expect((await failure(nft.run([insert(rule(t, 'a', [accept()], { handle: 99 }))]))).code).toBe(
      'not-found',
    );
    expect((await failure(nft.run([add(rule(t, 'a', [accept()], { index: 7 }))]))).code).toBe('not-found');
  });

  it('replaces a rule in place and deletes rules by handle', async () => {
    await nft.run([
      add(table(t)),
      add(chain(t, 'a')),
      add(rule(t, 'a', [accept()])),
      add(rule(t, 'a', [drop()])),
    ]);
    await nft.run([replace(rule(t, 'a', [oifname('eth0'), accept()], { handle: 2 }))]);
    const rules = nft.dump().tables[0]!.chains[0]!.rules;
    expect(rules.map((r) => [r.handle, r.expr])).toEqual([
      [2, [oifname('eth0'), accept()]],
      [3, [drop()]],
    ]);
    await nft.run([del(ruleRef(t, 'a', 2))]);
    expect(layout(nft).a).toEqual([3]);
    expect((await failure(nft.run([del(ruleRef(t, 'a', 2))]))).code).toBe('not-found');
    expect((await failure(nft.run([replace(rule(t, 'a', [accept()], { handle: 2 }))]))).code).toBe(
      'not-found',
    );
  });

  it('refuses to delete a chain or set still referenced, and deletes them once free', async () => {
    await nft.run([
      add(table(t)),
      add(chain(t, 'a')),
      add(chain(t, 'b')),
      add(chain(t, 'c')),
      add(set(t, 's', 'ipv4_addr')),
      add(map(t, 'm', 'ifname', 'verdict')),
      add(elements(t, 'm', [['cali1', goto('c')]])),
      add(rule(t, 'a', [ipSaddr(setRef('s')), jump('b')])),
    ]);
    for (const cmd of [del(chain(t, 'b')), del(chain(t, 'c')), del(setByName(t, 's'))]) {
      const e = await failure(nft.run([cmd]));
      expect(e.code).toBe('invalid');
      expect(e.detail).toBe('internal:0:0-0: Error: Could not process rule: Device or resource busy\n\n');
    }
    // Within one batch: the reference goes first, then the object.
    await nft.run([flush(chain(t, 'a')), del(chain(t, 'b')), del(setByName(t, 's'))]);
    await nft.run([flush(mapByName(t, 'm')), del(chain(t, 'c'))]);
    // A chain with rules can be deleted when nothing jumps to it.
    await nft.run([del(chain(t, 'a'))]);
    expect(nft.dump().tables[0]!.chains).toEqual([]);
    expect(nft.dump().tables[0]!.maps[0]!.elem).toBeUndefined();
  });

  it('rejects jumps to missing chains, to base chains and into loops a base chain reaches', async () => {
    await nft.run([add(table(t)), add(chain(t, 'fwd', FWD)), add(chain(t, 'a')), add(chain(t, 'b'))]);
    expect((await failure(nft.run([add(rule(t, 'a', [jump('nope')]))]))).code).toBe('not-found');
    const base = await failure(nft.run([add(rule(t, 'a', [jump('fwd')]))]));
    expect([base.code, base.detail]).toEqual([
      'invalid',
      'internal:0:0-0: Error: Could not process rule: Operation not supported\n\n',
    ]);
    // A loop no base chain reaches is accepted; a jump that makes a base chain reach it is not.
    await nft.run([add(rule(t, 'a', [jump('b')])), add(rule(t, 'b', [goto('a')]))]);
    const loop = await failure(nft.run([add(rule(t, 'fwd', [jump('a')]))]));
    expect([loop.code, loop.detail]).toEqual([
      'invalid',
      'internal:0:0-0: Error: Could not process rule: Too many links\n\n',
    ]);
    // The jump to a missing chain was refused by nft (no handle used), the two the kernel refused
    // used up 4 and 7.
    expect(layout(nft)).toEqual({ fwd: [], a: [5], b: [6] });
  });

  it('rejects references to missing tables, chains and sets', async () => {
    expect((await failure(nft.run([add(chain(t, 'a'))]))).code).toBe('not-found');
    await nft.run([add(table(t)), add(chain(t, 'a'))]);
    expect((await failure(nft.run([add(rule(t, 'nope', [accept()]))]))).code).toBe('not-found');
    expect((await failure(nft.run([add(rule(t, 'a', [ipSaddr(setRef('nope')), accept()]))]))).code).toBe(
      'not-found',
    );
    expect((await failure(nft.run([add(elements(t, 'nope', ['198.18.0.1']))]))).code).toBe('not-found');
    expect((await failure(nft.run([del(table(tableRef('ip', 'nope')))]))).code).toBe('not-found');
    expect((await failure(nft.listTable('ip', 'nope'))).code).toBe('not-found');
  });

  it('checks element values against the set type', async () => {
    await nft.run([add(table(t)), add(set(t, 'v4', 'ipv4_addr')), add(set(t, 'ports', 'inet_service'))]);
    const cases: [NftCommand, string][] = [
      [
        add(elements(t, 'v4', ['2001:db8::1'])),
        'Could not resolve hostname: Address family for hostname not supported',
      ],
      [add(elements(t, 'v4', ['not-an-ip'])), 'Could not resolve hostname: Name or service not known'],
      [
        add(elements(t, 'v4', [cidr('198.18.0.0/24')])),
        "You must add 'flags interval' to your set declaration if you want to add prefix elements",
      ],
      [add(elements(t, 'ports', [70000])), 'Invalid port value 70000: out of range'],
    ];
    for (const [cmd, message] of cases) {
      const e = await failure(nft.run([cmd]));
      expect(e.code).toBe('invalid');
      expect(e.detail).toBe(`internal:0:0-0: Error: ${message}\n\n`);
    }
    await nft.run([add(elements(t, 'v4', ['198.18.0.1'])), add(elements(t, 'ports', [80, 443]))]);
    await nft.run([del(elements(t, 'ports', [80]))]);
    expect(nft.dump().tables[0]!.sets.map((s) => s.elem)).toEqual([['198.18.0.1'], [443]]);
    const gone = await failure(nft.run([del(elements(t, 'ports', [80]))]));
    expect([gone.code, gone.detail]).toEqual([
      'not-found',
      'internal:0:0-0: Error: Could not process rule: No such file or directory\n\n',
    ]);
    // For an interval set nft itself finds the element missing.
    await nft.run([add(set(t, 'nets', 'ipv4_addr', { flags: ['interval'] }))]);
    const noNet = await failure(nft.run([del(elements(t, 'nets', [cidr('198.18.0.0/24')]))]));
    expect([noNet.code, noNet.detail]).toEqual([
      'not-found',
      'internal:0:0-0: Error: element does not exist\n\n',
    ]);
  });

  it('reports malformed commands with the index nft gives', async () => {
    await nft.run([add(table(t)), add(chain(t, 'a'))]);
    const e = await failure(
      nft.run([add(rule(t, 'a', [accept()])), add(rule(t, 'a', [{ bogus: null } as never]))]),
    );
    expect(e.code).toBe('invalid');
    expect(e.commandIndex).toBe(1);
    expect(e.detail).toContain("Error: Unknown statement object 'bogus'.");
    expect(
      (
        await failure(
          nft.run([{ add: { rule: { family: 'ipx', table: 'calico', chain: 'a', expr: [] } } } as never]),
        )
      ).code,
    ).toBe('invalid');
    expect((await failure(nft.run([add(rule(t, 'a', [{ counter: {} } as never]))]))).code).toBe('invalid');
    expect(layout(nft).a).toEqual([]);
  });

  it('flushes tables (rules only), chains, sets and the ruleset', async () => {
    await nft.run([
      add(table(t)),
      add(chain(t, 'a')),
      add(chain(t, 'b')),
      add(set(t, 's', 'ipv4_addr', { elem: ['198.18.0.1'] })),
      add(rule(t, 'a', [accept()])),
      add(rule(t, 'b', [drop()])),
    ]);
    await nft.run([flush(table(t))]);
    expect(layout(nft)).toEqual({ a: [], b: [] });
    expect(nft.dump().tables[0]!.sets[0]!.elem).toEqual(['198.18.0.1']);
    await nft.run([flush(setByName(t, 's'))]);
    expect(nft.dump().tables[0]!.sets[0]!.elem).toBeUndefined();
    await nft.run([add(table(tableRef('ip6', 'other'))), flushRuleset()]);
    expect(nft.dump().tables).toEqual([]);
  });

  it('deletes a table with everything in it', async () => {
    await nft.run([
      add(table(t)),
      add(chain(t, 'a')),
      add(set(t, 's', 'mark')),
      add(rule(t, 'a', [accept()])),
    ]);
    await nft.run([del(table(t))]);
    expect(nft.dump().tables).toEqual([]);
    await nft.run([add(table(t))]);
    expect(nft.dump().tables[0]!.handle).toBe(2);
  });

  it('lists through run as nft -j does, with metainfo first', async () => {
    await nft.run([add(table(t)), add(chain(t, 'a')), add(rule(t, 'a', [iifname('cali*'), accept()]))]);
    const res = await nft.run([{ list: { chain: { family: 'ip', table: 'calico', name: 'a' } } }]);
    expect(JSON.parse(res.output).nftables[0]).toHaveProperty('metainfo');
    expect(res.items).toEqual([
      { chain: { family: 'ip', table: 'calico', name: 'a', handle: 1 } },
      { rule: { family: 'ip', table: 'calico', chain: 'a', handle: 2, expr: [iifname('cali*'), accept()] } },
    ]);
    expect((await nft.listTable('ip', 'calico')).chains[0]!.rules).toHaveLength(1);
  });

  it('checks a batch without committing it in dry-run', async () => {
    await nft.run([add(table(t))]);
    await nft.run([add(chain(t, 'a'))], { dryRun: true });
    expect(layout(nft)).toEqual({});
    expect((await failure(nft.run([add(rule(t, 'a', [accept()]))], { dryRun: true }))).code).toBe(
      'not-found',
    );
  });

  it('reads JSON text and refuses nft syntax it cannot parse', async () => {
    await nft.run('{"nftables":[{"add":{"table":{"family":"ip","name":"calico"}}}]}');
    expect(nft.dump().tables).toHaveLength(1);
    const e = await failure(nft.run('add table ip x'));
    expect(e.code).toBe('invalid');
  });

  it('fails the next batch on request, changing nothing', async () => {
    nft.failNext('internal:0:0-0: Error: Could not process rule: Cannot allocate memory\n');
    expect((await failure(nft.run([add(table(t))]))).code).toBe('failed');
    expect(nft.dump().tables).toEqual([]);
    await nft.run([add(table(t))]);
    expect(nft.dump().tables).toHaveLength(1);
  });

  it('does nothing for an empty batch and fails after close', async () => {
    expect(await nft.run([])).toEqual({ items: [], output: '', warnings: '' });
    expect(nft.transactions).toHaveLength(0);
    await nft.close();
    expect((await failure(nft.run([add(table(t))]))).code).toBe('failed');
  });

  it('does not take a `@` in a log prefix for a set reference', async () => {
    await nft.run([
      add(table(t)),
      add(chain(t, 'a')),
      add(rule(t, 'a', [log({ prefix: '@notaset' }), accept()])),
    ]);
    expect(layout(nft).a).toEqual([2]);
  });
});
