import { describe, expect, it } from 'vitest';
import {
  accept,
  add,
  anonSet,
  chain,
  cidr,
  continueVerdict,
  counter,
  create,
  ctState,
  del,
  drop,
  elements,
  fibType,
  flush,
  flushRuleset,
  goto,
  iifname,
  insert,
  ipDaddr,
  ipSaddr,
  jump,
  l4proto,
  log,
  map,
  mapByName,
  markMatch,
  masquerade,
  oifname,
  range,
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
} from './builders.js';
import { commandsDocument } from './document.js';

const t = tableRef('ip', 'calico');

describe('object and command builders', () => {
  it('build the libnftables-json(5) shapes', () => {
    expect(add(table(t))).toEqual({ add: { table: { family: 'ip', name: 'calico' } } });
    expect(create(chain(t, 'cali-fw'))).toEqual({
      create: { chain: { family: 'ip', table: 'calico', name: 'cali-fw' } },
    });
    expect(add(chain(t, 'filter-FORWARD', { type: 'filter', hook: 'forward', prio: 0 }))).toEqual({
      add: {
        chain: {
          family: 'ip',
          table: 'calico',
          name: 'filter-FORWARD',
          type: 'filter',
          hook: 'forward',
          prio: 0,
          policy: 'accept',
        },
      },
    });
    expect(add(set(t, 'hosts', 'ipv4_addr', { flags: ['interval'], elem: [cidr('198.18.0.0/24')] }))).toEqual(
      {
        add: {
          set: {
            family: 'ip',
            table: 'calico',
            name: 'hosts',
            type: 'ipv4_addr',
            flags: ['interval'],
            elem: [{ prefix: { addr: '198.18.0.0', len: 24 } }],
          },
        },
      },
    );
    expect(add(map(t, 'dispatch', 'ifname', 'verdict'))).toEqual({
      add: { map: { family: 'ip', table: 'calico', name: 'dispatch', type: 'ifname', map: 'verdict' } },
    });
    expect(add(elements(t, 'dispatch', [['cali1', jump('cali-fw')]]))).toEqual({
      add: {
        element: {
          family: 'ip',
          table: 'calico',
          name: 'dispatch',
          elem: [['cali1', { jump: { target: 'cali-fw' } }]],
        },
      },
    });
    expect(del(ruleRef(t, 'cali-fw', 12))).toEqual({
      delete: { rule: { family: 'ip', table: 'calico', chain: 'cali-fw', handle: 12 } },
    });
    expect(flush(setByName(t, 'hosts'))).toEqual({
      flush: { set: { family: 'ip', table: 'calico', name: 'hosts' } },
    });
    expect(del(mapByName(t, 'dispatch'))).toEqual({
      delete: { map: { family: 'ip', table: 'calico', name: 'dispatch' } },
    });
    expect(flushRuleset()).toEqual({ flush: { ruleset: null } });
    expect(insert(rule(t, 'c', [accept()], { handle: 4 }))).toEqual({
      insert: { rule: { family: 'ip', table: 'calico', chain: 'c', handle: 4, expr: [{ accept: null }] } },
    });
    expect(replace(rule(t, 'c', [drop()], { handle: 4, comment: 'x' }))).toEqual({
      replace: {
        rule: { family: 'ip', table: 'calico', chain: 'c', handle: 4, comment: 'x', expr: [{ drop: null }] },
      },
    });
    expect(add(rule(t, 'c', [accept()], { index: 0 }))).toEqual({
      add: {
        rule: { family: 'ip', table: 'calico', chain: 'c', index: 0, expr: [{ accept: null }] },
      },
    });
  });

  it('serialises a batch as the document nft reads', () => {
    expect(commandsDocument([add(table(t)), flush(chain(t, 'x'))])).toBe(
      '{"nftables":[{"add":{"table":{"family":"ip","name":"calico"}}},{"flush":{"chain":{"family":"ip","table":"calico","name":"x"}}}]}',
    );
  });
});

describe('expression and statement builders', () => {
  // Each expected value is what `nft -j list` printed for the rule on libnftables 1.0.6.
  it('build matches as nft prints them back', () => {
    expect(iifname('cali*')).toEqual({
      match: { op: '==', left: { meta: { key: 'iifname' } }, right: 'cali*' },
    });
    expect(oifname('eth0')).toEqual({
      match: { op: '==', left: { meta: { key: 'oifname' } }, right: 'eth0' },
    });
    expect(l4proto('tcp')).toEqual({ match: { op: '==', left: { meta: { key: 'l4proto' } }, right: 'tcp' } });
    expect(ctState('established', 'related')).toEqual({
      match: { op: 'in', left: { ct: { key: 'state' } }, right: ['established', 'related'] },
    });
    expect(ctState('invalid')).toEqual({
      match: { op: 'in', left: { ct: { key: 'state' } }, right: 'invalid' },
    });
    expect(markMatch(0x10000, 0x10000)).toEqual({
      match: { op: '==', left: { '&': [{ meta: { key: 'mark' } }, 65536] }, right: 65536 },
    });
    expect(markMatch(5)).toEqual({ match: { op: '==', left: { meta: { key: 'mark' } }, right: 5 } });
    expect(fibType(['daddr'], 'local')).toEqual({
      match: { op: '==', left: { fib: { result: 'type', flags: ['daddr'] } }, right: 'local' },
    });
    expect(ipSaddr(setRef('ips'))).toEqual({
      match: { op: '==', left: { payload: { protocol: 'ip', field: 'saddr' } }, right: '@ips' },
    });
    expect(ipDaddr(cidr('198.19.0.0/16'))).toEqual({
      match: {
        op: '==',
        left: { payload: { protocol: 'ip', field: 'daddr' } },
        right: { prefix: { addr: '198.19.0.0', len: 16 } },
      },
    });
    expect(tcpDport(anonSet([80, 443]))).toEqual({
      match: { op: '==', left: { payload: { protocol: 'tcp', field: 'dport' } }, right: { set: [80, 443] } },
    });
    expect(tcpDport(range(1000, 2000))).toEqual({
      match: {
        op: '==',
        left: { payload: { protocol: 'tcp', field: 'dport' } },
        right: { range: [1000, 2000] },
      },
    });
  });

  it('writes a host CIDR as the bare address, as nft prints it', () => {
    expect(cidr('198.18.0.7/32')).toBe('198.18.0.7');
    expect(cidr('2001:db8::1/128')).toBe('2001:db8::1');
    expect(cidr('2001:db8::/64')).toEqual({ prefix: { addr: '2001:db8::', len: 64 } });
    expect(cidr('198.18.0.7')).toBe('198.18.0.7');
  });

  it('build verdicts and statements', () => {
    expect([accept(), drop(), returnVerdict(), continueVerdict(), jump('a'), goto('b')]).toEqual([
      { accept: null },
      { drop: null },
      { return: null },
      { continue: null },
      { jump: { target: 'a' } },
      { goto: { target: 'b' } },
    ]);
    expect(counter()).toEqual({ counter: { packets: 0, bytes: 0 } });
    expect(counter('named')).toEqual({ counter: 'named' });
    expect(masquerade()).toEqual({ masquerade: null });
    expect(masquerade({ flags: ['fully-random'] })).toEqual({ masquerade: { flags: 'fully-random' } });
    expect(masquerade({ flags: ['random', 'persistent'] })).toEqual({
      masquerade: { flags: ['random', 'persistent'] },
    });
    expect(log()).toEqual({ log: null });
    expect(log({ prefix: 'calico-drop: ', level: 'info', flags: ['all'] })).toEqual({
      log: { prefix: 'calico-drop: ', level: 'info', flags: 'all' },
    });
    expect(vmap({ meta: { key: 'iifname' } }, setRef('dispatch'))).toEqual({
      vmap: { key: { meta: { key: 'iifname' } }, data: '@dispatch' },
    });
    expect(
      vmap({ meta: { key: 'iifname' } }, [
        ['a', accept()],
        ['b', jump('c2')],
      ]),
    ).toEqual({
      vmap: {
        key: { meta: { key: 'iifname' } },
        data: {
          set: [
            ['a', { accept: null }],
            ['b', { jump: { target: 'c2' } }],
          ],
        },
      },
    });
  });

  it('sets a mark outright, or only the bits under a mask, in the form nft prints back', () => {
    const mark = { meta: { key: 'mark' } };
    expect(setMark(0x10000)).toEqual({ mangle: { key: mark, value: 65536 } });
    // meta mark set meta mark & 0xfffcffff | 0x10000
    expect(setMark(0x10000, 0x30000)).toEqual({
      mangle: { key: mark, value: { '|': [{ '&': [mark, 0xfffcffff] }, 0x10000] } },
    });
    // The value fills the mask: meta mark set meta mark | 0x10000
    expect(setMark(0x10000, 0x10000)).toEqual({ mangle: { key: mark, value: { '|': [mark, 0x10000] } } });
    // Clearing: meta mark set meta mark & 0xfffeffff
    expect(setMark(0, 0x10000)).toEqual({ mangle: { key: mark, value: { '&': [mark, 0xfffeffff] } } });
    // Bits outside the mask are not set; a full mask is a plain set.
    expect(setMark(0x30000, 0x10000)).toEqual(setMark(0x10000, 0x10000));
    expect(setMark(7, 0xffffffff)).toEqual(setMark(7));
  });
});
