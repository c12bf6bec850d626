import { canonicalSelector } from '@calico-ts/api';
import { describe, expect, it } from 'vitest';
import { makeUniqueID } from './hash.js';
import { namedPortIPSetId, selectorIPSetId } from './ids.js';
import { entityRuleSelector, scanRules } from './rule-scanner.js';

describe('entityRuleSelector (upstream getEndpointSelector)', () => {
  const cases: [string, Parameters<typeof entityRuleSelector>[0], string | undefined, string][] = [
    [
      'selector in a namespaced policy',
      { selector: "app == 'x'" },
      'ns1',
      '(projectcalico.org/namespace == "ns1" && app == "x")',
    ],
    ['selector in a global policy', { selector: "app == 'x'" }, undefined, 'app == "x"'],
    ['nets only: no selector', { nets: ['10.0.0.0/8'] }, 'ns1', ''],
    [
      'notSelector only: namespace restriction',
      { notSelector: 'has(a)' },
      'ns1',
      'projectcalico.org/namespace == "ns1"',
    ],
    ['namespaceSelector all()', { namespaceSelector: 'all()' }, 'ns1', 'has(projectcalico.org/namespace)'],
    [
      'namespaceSelector global()',
      { namespaceSelector: 'global()' },
      undefined,
      '!has(projectcalico.org/namespace)',
    ],
    [
      'namespaceSelector and selector',
      { namespaceSelector: "team == 'a'", selector: 'has(db)' },
      'ns1',
      '(pcns.team == "a" && has(db))',
    ],
    [
      'service accounts by name and selector',
      { serviceAccounts: { names: ['b', 'a'], selector: "role == 'x'" } },
      undefined,
      '(pcsa.role == "x" && projectcalico.org/serviceaccount in {"a", "b"})',
    ],
    [
      'service account names and selector in a namespace',
      { serviceAccounts: { names: ['sa'] }, selector: 'has(app)' },
      'ns1',
      '(projectcalico.org/namespace == "ns1" && (projectcalico.org/serviceaccount in {"sa"} && has(app)))',
    ],
  ];
  for (const [name, er, ns, want] of cases) {
    it(name, () => {
      const text = entityRuleSelector(er, ns);
      expect(text === '' ? '' : canonicalSelector(text)).toBe(want);
    });
  }
});

describe('scanRules (upstream rule_scanner)', () => {
  it('turns selectors into IP set IDs of their canonical text', () => {
    const { inbound, ipSets } = scanRules(
      [{ action: 'Allow', source: { selector: "a == 'b'" } }],
      [],
      undefined,
    );
    expect(inbound[0]!.srcIPSetIds).toEqual([makeUniqueID('s', 'a == "b"')]);
    expect(ipSets).toEqual([{ id: selectorIPSetId('a == "b"'), selector: 'a == "b"' }]);
  });

  it('combines a positive selector with the negated one, as upstream does', () => {
    const { inbound } = scanRules(
      [{ action: 'Allow', source: { selector: "a == 'b'", notSelector: 'has(foo3)' } }],
      [],
      undefined,
    );
    // upstream rule_scanner_test: selectorID("(a == 'b') && !(has(foo3))")
    expect(inbound[0]!.srcIPSetIds).toEqual([
      selectorIPSetId(canonicalSelector("(a == 'b') && !(has(foo3))")),
    ]);
    expect(inbound[0]!.notSrcIPSetIds).toEqual([]);
  });

  it('keeps a lone notSelector separate (it also matches non-Calico traffic)', () => {
    const { inbound } = scanRules(
      [{ action: 'Deny', destination: { notSelector: "d in {'a', 'b'}" } }],
      [],
      undefined,
    );
    expect(inbound[0]!.notDstIPSetIds).toEqual([selectorIPSetId('d in {"a", "b"}')]);
    expect(inbound[0]!.dstIPSetIds).toEqual([]);
  });

  it('turns named ports into named-port sets filtered by the positive selector', () => {
    const { outbound, ipSets } = scanRules(
      [],
      [
        {
          action: 'Allow',
          protocol: 'UDP',
          destination: { selector: 'has(dns)', ports: ['dns', 5353, '1000:2000'], notPorts: ['metrics'] },
        },
      ],
      undefined,
    );
    const r = outbound[0]!;
    expect(r.protocol).toBe('udp');
    expect(r.dstPorts).toEqual([
      { first: 5353, last: 5353 },
      { first: 1000, last: 2000 },
    ]);
    expect(r.dstNamedPortIPSetIds).toEqual([namedPortIPSetId('has(dns)', 'udp', 'dns')]);
    expect(r.notDstNamedPortIPSetIds).toEqual([namedPortIPSetId('has(dns)', 'udp', 'metrics')]);
    // Numeric ports need the selector set too.
    expect(r.dstIPSetIds).toEqual([selectorIPSetId('has(dns)')]);
    expect(ipSets.map((s) => s.id).sort()).toEqual(
      [
        namedPortIPSetId('has(dns)', 'udp', 'dns'),
        namedPortIPSetId('has(dns)', 'udp', 'metrics'),
        selectorIPSetId('has(dns)'),
      ].sort(),
    );
  });

  it('uses all() for a named port without selector and TCP without protocol', () => {
    const { inbound } = scanRules([{ action: 'Allow', destination: { ports: ['http'] } }], [], undefined);
    expect(inbound[0]!.dstNamedPortIPSetIds).toEqual([
      makeUniqueID('n', `${makeUniqueID('s', 'all()')},tcp,http`),
    ]);
    expect(inbound[0]!.dstIPSetIds).toEqual([]);
  });

  it('normalises protocols, nets and ICMP', () => {
    const { inbound } = scanRules(
      [
        {
          action: 'Pass',
          ipVersion: 4,
          protocol: 'ICMP',
          icmp: { type: 8 },
          notProtocol: '17',
          source: { nets: ['10.1.2.3/8'], notNets: ['192.0.2.1'] },
        },
      ],
      [],
      undefined,
    );
    expect(inbound[0]).toMatchObject({
      action: 'pass',
      ipVersion: 4,
      protocol: 'icmp',
      notProtocol: 17,
      icmp: { type: 8 },
      srcNets: ['10.0.0.0/8'],
      notSrcNets: ['192.0.2.1/32'],
    });
  });
});
