/** Transaction: verbs, the document it sends, and mistakes kept for `run`. */
import { describe, expect, it } from 'vitest';
import { isNftablesError } from './errors.js';
import {
  accept,
  add,
  chain,
  elements,
  flush,
  flushRuleset,
  map,
  mapByName,
  rule,
  ruleRef,
  set,
  setByName,
  table,
  tableRef,
} from './json/builders.js';
import type { NftCommand } from './json/types.js';
import { FakeNft } from './testing/fake-nft.js';
import { batchText, Transaction } from './transaction.js';

const t = tableRef('ip', 'calico');

function mistake(tx: Transaction): string {
  try {
    tx.commands();
  } catch (e) {
    if (isNftablesError(e, 'invalid')) return e.message;
    throw e;
  }
  throw new Error('expected a mistake');
}

describe('Transaction', () => {
  it('records each verb in call order, as the command builders make them', () => {
    const tx = new Transaction()
      .add(table(t))
      .create(chain(t, 'a'))
      .add(rule(t, 'a', [accept()]))
      .insert(rule(t, 'a', [accept()], { index: 0 }))
      .replace(rule(t, 'a', [accept()], { handle: 4 }))
      .flush(chain(t, 'a'))
      .delete(ruleRef(t, 'a', 4))
      .add(set(t, 's', 'ipv4_addr'))
      .add(elements(t, 's', ['198.18.0.1']))
      .delete(elements(t, 's', ['198.18.0.1']))
      .flush(setByName(t, 's'))
      .delete(setByName(t, 's'));
    expect(tx.size).toBe(12);
    expect(tx.commands().map((c) => Object.keys(c)[0])).toEqual([
      'add',
      'create',
      'add',
      'insert',
      'replace',
      'flush',
      'delete',
      'add',
      'add',
      'delete',
      'flush',
      'delete',
    ]);
    expect(tx.commands()[0]).toEqual(add(table(t)));
  });

  it('keeps the objects it is given, not copies', () => {
    const r = rule(t, 'a', [accept()]);
    expect(Transaction.of([add(r)]).commands()[0]!).toEqual({ add: r });
    expect((Transaction.of([add(r)]).commands()[0] as { add: unknown }).add).toBe(r);
  });

  it('sends the schema metainfo first, then the commands, as one JSON document', () => {
    const cmds: NftCommand[] = [add(table(t)), add(chain(t, 'a'))];
    const doc = Transaction.of(cmds).document();
    expect(doc).toBe(JSON.stringify({ nftables: [{ metainfo: { json_schema_version: 1 } }, ...cmds] }));
    expect(batchText(Transaction.of(cmds))).toBe(doc);
    expect(batchText(new Transaction())).toBeUndefined();
    expect(batchText([])).toBeUndefined();
    expect(batchText('list ruleset')).toBe('list ruleset');
  });

  it('keeps the first mistake and ignores what follows it', () => {
    const tx = new Transaction()
      .add(table(t))
      .delete(rule(t, 'a', [accept()]))
      .add({ chain: { family: 'ip', table: '', name: 'b' } });
    expect(tx.size).toBe(1);
    expect(tx.error?.commandIndex).toBe(1);
    expect(mistake(tx)).toBe('transaction command 1: delete: rule has no handle');
    expect(() => tx.document()).toThrow('rule has no handle');
  });

  it.each([
    [
      'insert of a set',
      (tx: Transaction) => tx.insert(set(t, 's', 'mark') as never),
      'insert: takes one of rule',
    ],
    [
      'replace without a handle',
      (tx: Transaction) => tx.replace(rule(t, 'a', [accept()])),
      'rule has no handle',
    ],
    ['a rule with no statements', (tx: Transaction) => tx.add(rule(t, 'a', [])), 'rule has no statements'],
    ['a rule with no chain', (tx: Transaction) => tx.add(rule(t, '', [accept()])), 'rule has no chain'],
    ['a table with no name', (tx: Transaction) => tx.add(table(tableRef('ip', ''))), 'table has no name'],
    [
      'an unknown family',
      (tx: Transaction) => tx.add(table(tableRef('ipx' as 'ip', 'calico'))),
      'table has no family',
    ],
    [
      'half a base chain',
      (tx: Transaction) => tx.add({ chain: { family: 'ip', table: 'calico', name: 'in', hook: 'input' } }),
      'needs type, hook and prio together',
    ],
    ['a set with no type', (tx: Transaction) => tx.add(setByName(t, 's')), 'set s has no type'],
    [
      'a map with no value type',
      (tx: Transaction) => tx.add({ map: { family: 'ip', table: 'calico', name: 'm', type: 'ifname' } }),
      'map m has no value type',
    ],
    ['elements with no values', (tx: Transaction) => tx.add(elements(t, 's', [])), 'has no values'],
    [
      'a command with two verbs',
      (tx: Transaction) => tx.command({ ...add(table(t)), ...flushRuleset() }),
      'one verb',
    ],
    ['a list command', (tx: Transaction) => tx.command({ list: { ruleset: null } }), 'one verb'],
  ])('refuses %s', (_, build, text) => {
    expect(mistake(build(new Transaction()))).toContain(text);
  });

  it('takes built commands of every verb, and flushes of tables, sets, maps and the ruleset', () => {
    const tx = Transaction.of([
      flush(table(t)),
      flush(mapByName(t, 'm')),
      flushRuleset(),
      add(map(t, 'm', 'ifname', 'verdict')),
    ]);
    expect(tx.error).toBeUndefined();
    expect(tx.size).toBe(4);
  });

  it('runs on an NftClient as one batch; a mistake fails the run before anything is applied', async () => {
    const nft = new FakeNft();
    await nft.run(
      new Transaction()
        .add(table(t))
        .add(chain(t, 'a'))
        .add(rule(t, 'a', [accept()])),
    );
    expect(nft.transactions).toHaveLength(1);
    expect(nft.dump().tables[0]!.chains[0]!.rules).toHaveLength(1);
    const bad = new Transaction().add(rule(t, 'a', [accept()])).replace(rule(t, 'a', [accept()]));
    await expect(nft.run(bad)).rejects.toMatchObject({ code: 'invalid', commandIndex: 1 });
    expect(nft.transactions).toHaveLength(1);
    expect(nft.dump().tables[0]!.chains[0]!.rules).toHaveLength(1);
    // An empty transaction runs nothing.
    expect(await nft.run(new Transaction())).toEqual({ items: [], output: '', warnings: '' });
  });
});
