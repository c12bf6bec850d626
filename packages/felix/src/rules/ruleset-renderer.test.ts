/** Golden renders of small rulesets: the exact nftables JSON for a known calc state. */
import { describe, expect, it } from 'vitest';
import { CalcGraph } from '../calc/calc-graph.js';
import { makeUniqueID } from '../calc/hash.js';
import {
  gnp,
  hep,
  np,
  pool,
  profile,
  sgnp,
  sknp,
  snp,
  tier,
  wep,
} from '../calc/testing-internal/resources.js';
import type { CalcResource, DataplaneState } from '../calc/types.js';
import { allocateMarks, DEFAULT_RULES_CONFIG, type RulesConfig, rulesConfigFromFelix } from './config.js';
import { ipSetName } from './names.js';
import { renderRuleset } from './ruleset-renderer.js';

function stateOf(resources: CalcResource[]): DataplaneState {
  const g = new CalcGraph({ hostname: 'node1' });
  for (const r of resources) g.onUpdate({ kind: 'set', resource: r });
  g.flush();
  return g.state();
}

const MARK = { meta: { key: 'mark' } };
const markClear = (bits: number) => ({ match: { op: '==', left: { '&': [MARK, bits] }, right: 0 } });
const markIsSet = (bit: number) => ({ match: { op: '==', left: { '&': [MARK, bit] }, right: bit } });
const orMark = (bits: number) => ({ mangle: { key: MARK, value: { '|': [MARK, bits] } } });
const andMark = (bits: number) => ({ mangle: { key: MARK, value: { '&': [MARK, bits] } } });

const small: CalcResource[] = [
  profile('kns.app', { ingress: [{ action: 'Allow' }], egress: [{ action: 'Allow' }] }),
  wep('app', 'web', {
    labels: { app: 'web' },
    profiles: ['kns.app'],
    ips: ['10.65.0.2/32'],
    iface: 'cali1234',
  }),
  wep('app', 'client', {
    node: 'node2',
    labels: { app: 'client' },
    profiles: ['kns.app'],
    ips: ['10.65.1.7/32', 'fd00:65::7/128'],
  }),
  np('app', 'web', {
    selector: "app == 'web'",
    ingress: [
      {
        action: 'Allow',
        protocol: 'TCP',
        source: { selector: "app == 'client'" },
        destination: { ports: [80] },
      },
    ],
  }),
  pool('pool4', '10.65.0.0/16', true),
];

describe('renderRuleset', () => {
  const desired = renderRuleset(stateOf(small), DEFAULT_RULES_CONFIG);
  const [ip, ip6] = desired.tables;
  const clientSet = makeUniqueID('s', '(projectcalico.org/namespace == "app" && app == "client")');

  it('renders table calico for ip and ip6', () => {
    expect(desired.tables.map((t) => [t.family, t.name])).toEqual([
      ['ip', 'calico'],
      ['ip6', 'calico'],
    ]);
  });

  it('names the selector set as upstream and fills it per family', () => {
    const v4 = `cali40${clientSet}`.slice(0, 31).replaceAll(':', '-');
    expect(v4).toMatch(/^cali40s-[A-Za-z0-9_-]{23}$/);
    expect(ip!.sets[v4]).toEqual({
      name: v4,
      type: 'ipv4_addr',
      flags: ['interval'],
      elements: ['10.65.1.7'],
    });
    const v6 = v4.replace('cali40', 'cali60');
    expect(ip6!.sets[v6]).toEqual({
      name: v6,
      type: 'ipv6_addr',
      flags: ['interval'],
      elements: ['fd00:65::7'],
    });
    expect(ip!.sets['cali40masq-ipam-pools']!.elements).toEqual([{ prefix: { addr: '10.65.0.0', len: 16 } }]);
    expect(ip!.sets['cali40network-ip-pools']!.elements).toEqual([
      { prefix: { addr: '10.65.0.0', len: 16 } },
    ]);
    expect(ip6!.sets['cali60masq-ipam-pools']!.elements).toEqual([]);
  });

  it('renders the policy chain: match, set the accept mark, return', () => {
    expect(ip!.chains['filter-cali-pi-np/app/web']).toEqual({
      name: 'filter-cali-pi-np/app/web',
      rules: [
        {
          expr: [
            { match: { op: '==', left: { meta: { key: 'l4proto' } }, right: 'tcp' } },
            {
              match: {
                op: '==',
                left: { payload: { protocol: 'ip', field: 'saddr' } },
                right: `@${ipSetName('ip', clientSet)}`,
              },
            },
            { match: { op: '==', left: { payload: { protocol: 'tcp', field: 'dport' } }, right: 80 } },
            orMark(0x10000),
            { return: null },
          ],
        },
      ],
    });
    expect(ip!.chains['filter-cali-po-np/app/web']).toEqual({ name: 'filter-cali-po-np/app/web', rules: [] });
  });

  it('renders the workload chains as upstream evaluates endpoints', () => {
    expect(ip!.chains['filter-cali-tw-cali1234']!.rules).toEqual([
      {
        expr: [
          { match: { op: 'in', left: { ct: { key: 'state' } }, right: ['established', 'related'] } },
          { accept: null },
        ],
      },
      { expr: [{ match: { op: 'in', left: { ct: { key: 'state' } }, right: 'invalid' } }, { drop: null }] },
      { expr: [andMark(0xfffcffff)] },
      { expr: [andMark(0xfffdffff)], comment: 'Start of tier default' },
      { expr: [markClear(0x20000), { jump: { target: 'filter-cali-pi-np/app/web' } }] },
      { expr: [markIsSet(0x10000), { return: null }], comment: 'Return if policy accepted' },
      { expr: [markClear(0x20000), { drop: null }], comment: 'Drop if no policies passed packet' },
      { expr: [{ jump: { target: 'filter-cali-pri-kns.app' } }] },
      { expr: [markIsSet(0x10000), { return: null }], comment: 'Return if profile accepted' },
      { expr: [{ drop: null }], comment: 'Drop if no profiles matched' },
    ]);
    // Egress: no policy in this direction, so only the profile decides; encapsulated traffic is dropped.
    expect(ip!.chains['filter-cali-fw-cali1234']!.rules.map((r) => r.comment ?? '')).toEqual([
      '',
      '',
      '',
      'Drop VXLAN encapped packets originating in workloads',
      'Drop IPinIP encapped packets originating in workloads',
      '',
      'Return if profile accepted',
      'Drop if no profiles matched',
    ]);
  });

  it('dispatches interfaces through verdict maps', () => {
    expect(ip!.maps['filter-cali-to-wl-dispatch']).toEqual({
      name: 'filter-cali-to-wl-dispatch',
      type: 'ifname',
      map: 'verdict',
      elements: [['cali1234', { goto: { target: 'filter-cali-tw-cali1234' } }]],
    });
    expect(ip!.maps['filter-cali-from-wl-dispatch']!.elements).toEqual([
      ['cali1234', { goto: { target: 'filter-cali-fw-cali1234' } }],
    ]);
    expect(ip!.chains['filter-cali-to-wl-dispatch']!.rules).toEqual([
      { expr: [{ vmap: { key: { meta: { key: 'oifname' } }, data: '@filter-cali-to-wl-dispatch' } }] },
      { expr: [{ drop: null }], comment: 'Unknown interface' },
    ]);
  });

  it('hooks no raw, mangle or output stage without a host endpoint, and NAT only where a pool masquerades', () => {
    const hooked = (t: typeof ip) =>
      Object.values(t!.chains)
        .filter((c) => c.base)
        .map((c) => c.name)
        .sort();
    // pool4 (IPv4) has natOutgoing; no IPv6 pool does.
    expect(hooked(ip)).toEqual(['filter-FORWARD', 'filter-INPUT', 'nat-POSTROUTING']);
    expect(hooked(ip6)).toEqual(['filter-FORWARD', 'filter-INPUT']);
    // The unhooked stages' chains are still there, for when a host endpoint appears.
    expect(ip!.chains['raw-cali-PREROUTING']).toBeDefined();
    expect(ip!.chains['filter-cali-OUTPUT']).toBeDefined();
    expect(ip!.chains['mangle-cali-PREROUTING']).toBeDefined();
    expect(ip6!.chains['nat-cali-POSTROUTING']).toBeDefined();
  });

  it('hooks base chains and masquerades pool traffic leaving all pools', () => {
    expect(ip!.chains['filter-FORWARD']).toEqual({
      name: 'filter-FORWARD',
      base: { type: 'filter', hook: 'forward', prio: 0, policy: 'accept' },
      rules: [{ expr: [{ jump: { target: 'filter-cali-FORWARD' } }] }],
    });
    expect(ip!.chains['nat-POSTROUTING']!.base).toEqual({
      type: 'nat',
      hook: 'postrouting',
      prio: 100,
      policy: 'accept',
    });
    expect(ip!.chains['nat-cali-nat-outgoing']!.rules).toEqual([
      {
        expr: [
          {
            match: {
              op: '==',
              left: { payload: { protocol: 'ip', field: 'saddr' } },
              right: '@cali40masq-ipam-pools',
            },
          },
          {
            match: {
              op: '!=',
              left: { payload: { protocol: 'ip', field: 'daddr' } },
              right: '@cali40network-ip-pools',
            },
          },
          { masquerade: null },
        ],
      },
    ]);
    expect(ip6!.chains['nat-cali-nat-outgoing']!.rules).toEqual([]);
  });

  it('applies DefaultEndpointToHostAction after the workload egress policy', () => {
    const cfg: RulesConfig = {
      ...DEFAULT_RULES_CONFIG,
      defaultEndpointToHostAction: 'Accept',
      ipv6Support: false,
    };
    const t = renderRuleset(stateOf(small), cfg).tables;
    expect(t.map((x) => x.family)).toEqual(['ip']);
    expect(t[0]!.chains['filter-cali-wl-to-host']!.rules).toEqual([
      { expr: [{ jump: { target: 'filter-cali-from-wl-dispatch' } }] },
      { expr: [{ accept: null }], comment: 'Configured DefaultEndpointToHostAction' },
    ]);
    expect(t[0]!.chains['filter-cali-INPUT']!.rules[0]).toEqual({
      expr: [
        { match: { op: '==', left: { meta: { key: 'iifname' } }, right: 'cali*' } },
        { goto: { target: 'filter-cali-wl-to-host' } },
      ],
    });
  });

  it('renders failsafe ports, and host endpoints with failsafes and forward chains', () => {
    const t = renderRuleset(
      stateOf([
        hep('eth0', { labels: { host: 'a' }, ips: ['198.18.0.1'], iface: 'eth0' }),
        gnp('hosts', { selector: 'has(host)', applyOnForward: true, ingress: [{ action: 'Allow' }] }),
      ]),
      rulesConfigFromFelix({
        failsafeInboundHostPorts: [{ protocol: 'TCP', port: 22, net: '198.18.0.0/24' }],
      }),
    ).tables[0]!;
    expect(t.chains['filter-cali-failsafe-in']!.rules).toEqual([
      {
        expr: [
          { match: { op: '==', left: { meta: { key: 'l4proto' } }, right: 'tcp' } },
          { match: { op: '==', left: { payload: { protocol: 'tcp', field: 'dport' } }, right: 22 } },
          {
            match: {
              op: '==',
              left: { payload: { protocol: 'ip', field: 'saddr' } },
              right: { prefix: { addr: '198.18.0.0', len: 24 } },
            },
          },
          { accept: null },
        ],
      },
    ]);
    expect(t.chains['filter-cali-failsafe-out']!.rules).toHaveLength(9);
    expect(t.chains['filter-cali-fh-eth0']!.rules[2]).toEqual({
      expr: [{ jump: { target: 'filter-cali-failsafe-in' } }],
    });
    expect(t.maps['filter-cali-from-host-endpoint']!.elements).toEqual([
      ['eth0', { goto: { target: 'filter-cali-fh-eth0' } }],
    ]);
    expect(t.maps['filter-cali-from-hep-forward']!.elements).toEqual([
      ['eth0', { goto: { target: 'filter-cali-fhfw-eth0' } }],
    ]);
    // No forward policy for egress: forwarded traffic out of eth0 is allowed.
    expect(t.chains['filter-cali-thfw-eth0']!.rules.at(-1)).toEqual({
      expr: [orMark(0x10000), { return: null }],
      comment: 'Allow forwarded traffic by default',
    });
  });

  it('passes to the next tier and reaches profiles only after a pass', () => {
    const t = renderRuleset(
      stateOf([
        tier('first', 10, 'Pass'),
        profile('prof', { ingress: [{ action: 'Allow' }] }),
        wep('a', 'x', { labels: { a: 'b' }, profiles: ['prof'], ips: ['10.65.0.9/32'], iface: 'calix' }),
        gnp('first.p', {
          tier: 'first',
          selector: 'all()',
          ingress: [{ action: 'Pass', source: { nets: ['10.0.0.0/8'] } }],
        }),
      ]),
      DEFAULT_RULES_CONFIG,
    ).tables[0]!;
    expect(
      t.chains['filter-cali-tw-calix']!.rules.map((r) => r.comment ?? JSON.stringify(r.expr.at(-1))),
    ).toEqual([
      '{"accept":null}',
      '{"drop":null}',
      '{"mangle":{"key":{"meta":{"key":"mark"}},"value":{"&":[{"meta":{"key":"mark"}},4294770687]}}}',
      'Start of tier first',
      '{"jump":{"target":"filter-cali-pi-gnp/first.p"}}',
      'Return if policy accepted',
      // defaultAction Pass: no end-of-tier drop
      '{"jump":{"target":"filter-cali-pri-prof"}}',
      'Return if profile accepted',
      'Drop if no profiles matched',
    ]);
    expect(t.chains['filter-cali-pi-gnp/first.p']!.rules).toEqual([
      {
        expr: [
          {
            match: {
              op: '==',
              left: { payload: { protocol: 'ip', field: 'saddr' } },
              right: { prefix: { addr: '10.0.0.0', len: 8 } },
            },
          },
          orMark(0x20000),
          { return: null },
        ],
      },
    ]);
  });
});

describe('host endpoint untracked and pre-DNAT stages', () => {
  const jumpTo = (target: string) => ({ jump: { target } });
  const ACCEPT_MARK = 0x10000;
  const t = renderRuleset(
    stateOf([
      hep('h1', { labels: { host: 'a' }, ips: ['198.18.0.1'], iface: 'eth0' }),
      hep('h2', { labels: { other: 'b' }, ips: ['198.18.0.2'], iface: 'eth1' }),
      gnp('normal', { selector: 'has(host) || has(other)', ingress: [{ action: 'Allow' }] }),
      gnp('dnt', {
        selector: 'has(host)',
        doNotTrack: true,
        applyOnForward: true,
        ingress: [{ action: 'Allow', source: { nets: ['198.18.1.0/24'] } }],
        egress: [{ action: 'Deny', destination: { nets: ['198.18.2.0/24'] } }],
      }),
      gnp('pre', {
        selector: 'has(host)',
        preDNAT: true,
        applyOnForward: true,
        ingress: [
          { action: 'Deny', source: { nets: ['198.18.3.7/32'] } },
          { action: 'Allow', protocol: 'TCP', destination: { ports: [443] } },
        ],
      }),
    ]),
    { ...DEFAULT_RULES_CONFIG, ipv6Support: false },
  ).tables[0]!;

  it('hooks raw at prerouting and output with priority raw, mangle at prerouting before dstnat', () => {
    expect(t.chains['raw-PREROUTING']).toEqual({
      name: 'raw-PREROUTING',
      base: { type: 'filter', hook: 'prerouting', prio: -300, policy: 'accept' },
      rules: [{ expr: [jumpTo('raw-cali-PREROUTING')] }],
    });
    expect(t.chains['raw-OUTPUT']).toEqual({
      name: 'raw-OUTPUT',
      base: { type: 'filter', hook: 'output', prio: -300, policy: 'accept' },
      rules: [{ expr: [jumpTo('raw-cali-OUTPUT')] }],
    });
    expect(t.chains['mangle-PREROUTING']).toEqual({
      name: 'mangle-PREROUTING',
      base: { type: 'filter', hook: 'prerouting', prio: -150, policy: 'accept' },
      rules: [{ expr: [jumpTo('mangle-cali-PREROUTING')] }],
    });
    // Priorities: raw < conntrack (-200) < mangle < dstnat (-100) < filter (0).
    expect(t.chains['mangle-PREROUTING']!.base!.prio).toBeLessThan(-100);
    // With a host endpoint, its egress policy needs the output hook.
    expect(t.chains['filter-OUTPUT']).toEqual({
      name: 'filter-OUTPUT',
      base: { type: 'filter', hook: 'output', prio: 0, policy: 'accept' },
      rules: [{ expr: [jumpTo('filter-cali-OUTPUT')] }],
    });
  });

  it('renders the static raw and mangle chains: clear marks, dispatch, accept on the accept mark', () => {
    expect(t.chains['raw-cali-PREROUTING']!.rules).toEqual([
      { expr: [andMark(~(0x10000 | 0x20000 | 0x80000 | 0x100000) >>> 0)] },
      {
        expr: [{ match: { op: '==', left: { meta: { key: 'iifname' } }, right: 'cali*' } }, { return: null }],
      },
      { expr: [jumpTo('raw-cali-from-host-endpoint')] },
      { expr: [markIsSet(ACCEPT_MARK), { accept: null }], comment: 'Untracked policy accepted packet.' },
    ]);
    expect(t.chains['raw-cali-OUTPUT']!.rules).toEqual([
      { expr: [andMark(0xffe4ffff)] },
      { expr: [jumpTo('raw-cali-to-host-endpoint')] },
      { expr: [markIsSet(ACCEPT_MARK), { accept: null }], comment: 'Untracked policy accepted packet.' },
    ]);
    expect(t.chains['mangle-cali-PREROUTING']!.rules).toEqual([
      {
        expr: [
          { match: { op: 'in', left: { ct: { key: 'state' } }, right: ['established', 'related'] } },
          { accept: null },
        ],
      },
      { expr: [markIsSet(ACCEPT_MARK), { accept: null }], comment: 'Accepted by untracked policy' },
      { expr: [jumpTo('mangle-cali-from-host-endpoint')] },
      { expr: [markIsSet(ACCEPT_MARK), { accept: null }], comment: 'Host endpoint policy accepted packet.' },
    ]);
  });

  it('dispatches only host endpoints with such policies', () => {
    expect(t.maps['raw-cali-from-host-endpoint']!.elements).toEqual([
      ['eth0', { goto: { target: 'raw-cali-fh-eth0' } }],
    ]);
    expect(t.maps['raw-cali-to-host-endpoint']!.elements).toEqual([
      ['eth0', { goto: { target: 'raw-cali-th-eth0' } }],
    ]);
    expect(t.maps['mangle-cali-from-host-endpoint']!.elements).toEqual([
      ['eth0', { goto: { target: 'mangle-cali-fh-eth0' } }],
    ]);
    expect(t.chains['raw-cali-from-host-endpoint']!.rules).toEqual([
      { expr: [{ vmap: { key: { meta: { key: 'iifname' } }, data: '@raw-cali-from-host-endpoint' } }] },
    ]);
    expect(t.chains['raw-cali-fh-eth1']).toBeUndefined();
    expect(t.chains['mangle-cali-th-eth0']).toBeUndefined();
    // The normal filter chains of eth0 see only the normal policy.
    expect(JSON.stringify(t.chains['filter-cali-fh-eth0'])).not.toContain('gnp/dnt');
    expect(JSON.stringify(t.chains['filter-cali-fh-eth0'])).not.toContain('gnp/pre');
  });

  it('untracked endpoint chains: no conntrack, raw failsafes, allow is notrack, no final drop', () => {
    expect(t.chains['raw-cali-fh-eth0']!.rules).toEqual([
      { expr: [jumpTo('raw-cali-failsafe-in')] },
      { expr: [andMark(0xfffcffff)] },
      { expr: [andMark(0xfffdffff)], comment: 'Start of tier default' },
      { expr: [markClear(0x20000), jumpTo('raw-cali-pi-gnp/dnt')] },
      { expr: [markIsSet(ACCEPT_MARK), { notrack: null }], comment: 'Untracked policy accepted packet' },
      { expr: [markIsSet(ACCEPT_MARK), { return: null }], comment: 'Return if policy accepted' },
    ]);
    expect(t.chains['raw-cali-th-eth0']!.rules.map((r) => JSON.stringify(r.expr.at(-1)))).toEqual([
      JSON.stringify(jumpTo('raw-cali-failsafe-out')),
      JSON.stringify(andMark(0xfffcffff)),
      JSON.stringify(andMark(0xfffdffff)),
      JSON.stringify(jumpTo('raw-cali-po-gnp/dnt')),
      '{"notrack":null}',
      '{"return":null}',
    ]);
    // The policy chains of the raw stage: allow sets the accept mark, deny drops.
    expect(t.chains['raw-cali-pi-gnp/dnt']!.rules).toEqual([
      {
        expr: [
          {
            match: {
              op: '==',
              left: { payload: { protocol: 'ip', field: 'saddr' } },
              right: { prefix: { addr: '198.18.1.0', len: 24 } },
            },
          },
          orMark(ACCEPT_MARK),
          { return: null },
        ],
      },
    ]);
    expect(t.chains['raw-cali-po-gnp/dnt']!.rules[0]!.expr.at(-1)).toEqual({ drop: null });
    // Failsafes before conntrack also let the replies of failsafe connections through.
    const fsIn = t.chains['raw-cali-failsafe-in']!.rules;
    expect(fsIn).toHaveLength(18);
    expect(fsIn[0]!.expr[1]).toEqual({
      match: { op: '==', left: { payload: { protocol: 'tcp', field: 'dport' } }, right: 22 },
    });
    expect(fsIn[9]!.expr[1]).toEqual({
      match: { op: '==', left: { payload: { protocol: 'udp', field: 'sport' } }, right: 53 },
    });
    expect(t.chains['raw-cali-failsafe-out']!.rules).toHaveLength(18);
  });

  it('pre-DNAT endpoint chain: conntrack, mangle failsafes, ingress policy only, no final drop', () => {
    expect(t.chains['mangle-cali-fh-eth0']!.rules).toEqual([
      {
        expr: [
          { match: { op: 'in', left: { ct: { key: 'state' } }, right: ['established', 'related'] } },
          { accept: null },
        ],
      },
      { expr: [{ match: { op: 'in', left: { ct: { key: 'state' } }, right: 'invalid' } }, { drop: null }] },
      { expr: [jumpTo('mangle-cali-failsafe-in')] },
      { expr: [andMark(0xfffcffff)] },
      { expr: [andMark(0xfffdffff)], comment: 'Start of tier default' },
      { expr: [markClear(0x20000), jumpTo('mangle-cali-pi-gnp/pre')] },
      { expr: [markIsSet(ACCEPT_MARK), { return: null }], comment: 'Return if policy accepted' },
    ]);
    expect(t.chains['mangle-cali-pi-gnp/pre']!.rules.map((r) => r.expr.at(-1))).toEqual([
      { drop: null },
      { return: null },
    ]);
    expect(t.chains['mangle-cali-po-gnp/pre']).toBeUndefined();
    expect(t.chains['mangle-cali-failsafe-in']!.rules).toEqual(t.chains['filter-cali-failsafe-in']!.rules);
  });

  it('lets the filter stage accept what an earlier stage accepted', () => {
    const already = {
      expr: [markIsSet(ACCEPT_MARK), { accept: null }],
      comment: 'Accepted by untracked or pre-DNAT policy',
    };
    const input = t.chains['filter-cali-INPUT']!.rules;
    expect(input[1]).toEqual(already);
    expect(input[2]).toEqual({ expr: [andMark(0xffe4ffff)] });
    expect(t.chains['filter-cali-OUTPUT']!.rules[0]).toEqual(already);
    const fwd = t.chains['filter-cali-FORWARD']!.rules;
    // The accept bit survives; the from-host-endpoint forward policy is skipped for it.
    expect(fwd[0]).toEqual({ expr: [andMark(~(0x20000 | 0x80000 | 0x100000) >>> 0)] });
    expect(fwd[1]).toEqual({ expr: [markClear(ACCEPT_MARK), jumpTo('filter-cali-from-hep-forward')] });
    expect(fwd.at(-1)).toEqual({
      expr: [markIsSet(ACCEPT_MARK), { accept: null }],
      comment: 'Policy explicitly accepted packet.',
    });
  });

  it('leaves the stages empty without such policies', () => {
    const plain = renderRuleset(stateOf(small), DEFAULT_RULES_CONFIG).tables[0]!;
    expect(plain.maps['raw-cali-from-host-endpoint']!.elements).toEqual([]);
    expect(plain.maps['raw-cali-to-host-endpoint']!.elements).toEqual([]);
    expect(plain.maps['mangle-cali-from-host-endpoint']!.elements).toEqual([]);
    expect(Object.keys(plain.chains).filter((c) => /^(raw|mangle)-cali-p[io]-/.test(c))).toEqual([]);
  });
});

describe('all-interfaces ("*") host endpoint', () => {
  const IIF = { meta: { key: 'iifname' } };
  const OIF = { meta: { key: 'oifname' } };
  const gotoChain = (target: string) => ({ goto: { target } });
  const isIface = (key: object, right: string) => ({ match: { op: '==', left: key, right } });
  const skipWorkload = (key: object) => ({
    expr: [isIface(key, 'cali*'), { return: null }],
    comment: 'Workload interfaces skip the all-interfaces host endpoint',
  });
  const toAll = (chain: string) => ({ expr: [gotoChain(chain)], comment: 'All-interfaces host endpoint' });
  const cfg = { ...DEFAULT_RULES_CONFIG, ipv6Support: false };
  const resources: CalcResource[] = [
    profile('projectcalico-default-allow', { ingress: [{ action: 'Allow' }], egress: [{ action: 'Allow' }] }),
    hep('node1-auto-hep', {
      labels: { auto: 'yes' },
      ips: ['198.18.0.1'],
      iface: '*',
      profiles: ['projectcalico-default-allow'],
    }),
    hep('named', { labels: { named: 'yes' }, ips: ['198.18.0.2'], iface: 'eth1' }),
    wep('app', 'web', { ips: ['198.19.0.2/32'], iface: 'cali1234' }),
    gnp('deny-src', {
      selector: 'has(auto)',
      ingress: [{ action: 'Deny', source: { nets: ['198.18.9.9/32'] } }],
    }),
    gnp('fwd', { selector: 'has(auto)', applyOnForward: true, ingress: [{ action: 'Allow' }] }),
  ];
  const t = renderRuleset(stateOf(resources), cfg).tables[0]!;

  it('dispatches to the "*" endpoint after the map misses, skipping workload interfaces', () => {
    expect(t.chains['filter-cali-from-host-endpoint']!.rules).toEqual([
      { expr: [{ vmap: { key: IIF, data: '@filter-cali-from-host-endpoint' } }] },
      skipWorkload(IIF),
      toAll('filter-cali-fh-any-interface-at-all'),
    ]);
    expect(t.chains['filter-cali-to-host-endpoint']!.rules).toEqual([
      { expr: [{ vmap: { key: OIF, data: '@filter-cali-to-host-endpoint' } }] },
      skipWorkload(OIF),
      toAll('filter-cali-th-any-interface-at-all'),
    ]);
    expect(t.chains['filter-cali-from-hep-forward']!.rules.slice(1)).toEqual([
      skipWorkload(IIF),
      toAll('filter-cali-fhfw-any-interface-at-all'),
    ]);
    expect(t.chains['filter-cali-to-hep-forward']!.rules.slice(1)).toEqual([
      skipWorkload(OIF),
      toAll('filter-cali-thfw-any-interface-at-all'),
    ]);
    // The workload interface prefixes are configurable; each gets its skip rule.
    const t2 = renderRuleset(stateOf(resources), { ...cfg, interfacePrefixes: ['cali', 'tap'] }).tables[0]!;
    expect(t2.chains['filter-cali-from-host-endpoint']!.rules.slice(1, 3)).toEqual([
      skipWorkload(IIF),
      { ...skipWorkload(IIF), expr: [isIface(IIF, 'tap*'), { return: null }] },
    ]);
  });

  it('renders the "*" endpoint chains: failsafes, normal policies, then its profiles', () => {
    const fh = t.chains['filter-cali-fh-any-interface-at-all']!.rules;
    expect(fh[2]).toEqual({ expr: [{ jump: { target: 'filter-cali-failsafe-in' } }] });
    const text = JSON.stringify(fh);
    expect(text).toContain('filter-cali-pi-gnp/deny-src');
    expect(text).toContain('filter-cali-pri-projectcalico-default-allow');
    expect(fh.at(-1)).toEqual({ expr: [{ drop: null }], comment: 'Drop if no profiles matched' });
    const th = t.chains['filter-cali-th-any-interface-at-all']!.rules;
    expect(th[2]).toEqual({ expr: [{ jump: { target: 'filter-cali-failsafe-out' } }] });
    expect(JSON.stringify(th)).toContain('filter-cali-pro-projectcalico-default-allow');
    // Forward chains: only applyOnForward policy, no profiles.
    const fhfw = JSON.stringify(t.chains['filter-cali-fhfw-any-interface-at-all']);
    expect(fhfw).toContain('filter-cali-pi-gnp/fwd');
    expect(fhfw).not.toContain('gnp/deny-src');
    expect(fhfw).not.toContain('filter-cali-pri-');
  });

  it('lets a named host endpoint win: its interface stays in the maps, "*" is never a map key', () => {
    for (const m of [
      'filter-cali-from-host-endpoint',
      'filter-cali-to-host-endpoint',
      'filter-cali-from-hep-forward',
      'filter-cali-to-hep-forward',
    ]) {
      expect(t.maps[m]!.elements.map(([k]) => k)).toEqual(['eth1']);
    }
    expect(t.maps['filter-cali-from-host-endpoint']!.elements[0]![1]).toEqual(
      gotoChain('filter-cali-fh-eth1'),
    );
    // Workloads keep their own dispatch.
    expect(t.maps['filter-cali-from-wl-dispatch']!.elements.map(([k]) => k)).toEqual(['cali1234']);
    expect(Object.keys(t.chains).filter((c) => c.includes('*'))).toEqual([]);
  });

  it('dispatches pre-DNAT policy to "*" by default; a named endpoint without any returns', () => {
    const withPre = renderRuleset(
      stateOf([
        ...resources,
        gnp('pre', {
          selector: 'has(auto)',
          preDNAT: true,
          applyOnForward: true,
          ingress: [{ action: 'Deny', source: { nets: ['198.18.9.8/32'] } }],
        }),
      ]),
      cfg,
    ).tables[0]!;
    expect(withPre.chains['mangle-cali-from-host-endpoint']!.rules).toEqual([
      { expr: [{ vmap: { key: IIF, data: '@mangle-cali-from-host-endpoint' } }] },
      skipWorkload(IIF),
      toAll('mangle-cali-fh-any-interface-at-all'),
    ]);
    expect(withPre.maps['mangle-cali-from-host-endpoint']!.elements).toEqual([['eth1', { return: null }]]);
    const fh = withPre.chains['mangle-cali-fh-any-interface-at-all']!.rules;
    expect(fh[2]).toEqual({ expr: [{ jump: { target: 'mangle-cali-failsafe-in' } }] });
    expect(JSON.stringify(fh)).toContain('mangle-cali-pi-gnp/pre');
    // Without pre-DNAT policy on "*", the mangle dispatch has no default.
    expect(t.chains['mangle-cali-from-host-endpoint']!.rules).toHaveLength(1);
    expect(t.maps['mangle-cali-from-host-endpoint']!.elements).toEqual([]);
  });

  it('ignores doNotTrack policy on "*", as upstream does', () => {
    const withDnt = renderRuleset(
      stateOf([
        ...resources,
        gnp('dnt', {
          selector: 'has(auto)',
          doNotTrack: true,
          applyOnForward: true,
          ingress: [{ action: 'Deny', source: { nets: ['198.18.9.7/32'] } }],
        }),
      ]),
      cfg,
    ).tables[0]!;
    expect(withDnt.chains['raw-cali-from-host-endpoint']!.rules).toHaveLength(1);
    expect(withDnt.chains['raw-cali-to-host-endpoint']!.rules).toHaveLength(1);
    expect(
      Object.keys(withDnt.chains).filter((c) => c.startsWith('raw-cali-') && c.includes('any-interface')),
    ).toEqual([]);
  });

  it('uses only this node\'s "*" endpoint, the first by name when there are several', () => {
    const other = renderRuleset(
      stateOf([hep('other-auto-hep', { node: 'node2', labels: { auto: 'yes' }, iface: '*' })]),
      cfg,
    ).tables[0]!;
    expect(other.chains['filter-cali-fh-any-interface-at-all']).toBeUndefined();
    expect(other.chains['filter-cali-from-host-endpoint']!.rules).toHaveLength(1);

    const two = renderRuleset(
      stateOf([
        profile('p-b', { ingress: [{ action: 'Allow' }] }),
        hep('b', { iface: '*', profiles: ['p-b'] }),
        hep('a', { iface: '*' }),
      ]),
      cfg,
    ).tables[0]!;
    // "a" wins: no profile, so its chain ends in the plain drop without jumping to p-b.
    expect(JSON.stringify(two.chains['filter-cali-fh-any-interface-at-all'])).not.toContain('p-b');
  });

  it('renders no default without a "*" endpoint', () => {
    const plain = renderRuleset(stateOf(small), cfg).tables[0]!;
    for (const c of ['from-host-endpoint', 'to-host-endpoint', 'from-hep-forward', 'to-hep-forward']) {
      expect(plain.chains[`filter-cali-${c}`]!.rules).toHaveLength(1);
    }
  });
});

describe('mark bits', () => {
  it('allocates accept, pass, drop, scratch0, scratch1 lowest first from the mask', () => {
    expect(allocateMarks(0xffff0000)).toEqual({
      accept: 0x10000,
      pass: 0x20000,
      drop: 0x40000,
      scratch0: 0x80000,
      scratch1: 0x100000,
      endpoint: 0xffe00000,
    });
    expect(() => allocateMarks(0xf)).toThrow(/at least 5/);
  });
});

describe('VXLAN packets to the host', () => {
  const state = stateOf(small);
  const udp4789 = [
    { match: { op: '==', left: { meta: { key: 'l4proto' } }, right: 'udp' } },
    { match: { op: '==', left: { payload: { protocol: 'udp', field: 'dport' } }, right: 4789 } },
    { match: { op: '==', left: { fib: { result: 'type', flags: ['daddr'] } }, right: 'local' } },
  ];

  it('are accepted from the allowed hosts and dropped from any other, first thing in filter-cali-INPUT', () => {
    const [ip, ip6] = renderRuleset(state, DEFAULT_RULES_CONFIG, {
      vxlanSources: ['198.18.0.3', '198.18.0.4', '198.18.9.0/24', '198.18.9.7/32'],
    }).tables;
    expect(ip!.sets['cali40all-vxlan-net']).toEqual({
      name: 'cali40all-vxlan-net',
      type: 'ipv4_addr',
      flags: ['interval'],
      // An address inside another entry's CIDR is left out (an interval set refuses overlaps).
      elements: ['198.18.0.3', '198.18.0.4', { prefix: { addr: '198.18.9.0', len: 24 } }],
    });
    expect(ip!.chains['filter-cali-INPUT']!.rules.slice(0, 3)).toEqual([
      {
        expr: [
          ...udp4789,
          {
            match: {
              op: '==',
              left: { payload: { protocol: 'ip', field: 'saddr' } },
              right: '@cali40all-vxlan-net',
            },
          },
          { accept: null },
        ],
        comment: 'Allow IPv4 VXLAN packets from allowed hosts',
      },
      { expr: [...udp4789, { drop: null }], comment: 'Drop IPv4 VXLAN packets from non-allowed hosts' },
      {
        expr: [
          { match: { op: '==', left: { meta: { key: 'iifname' } }, right: 'cali*' } },
          { goto: { target: 'filter-cali-wl-to-host' } },
        ],
      },
    ]);
    // IPv4 VXLAN only: the IPv6 table has neither the set nor the rules.
    expect(ip6!.sets['cali60all-vxlan-net']).toBeUndefined();
    expect(JSON.stringify(ip6!.chains['filter-cali-INPUT'])).not.toContain('4789');
  });

  it('IPv6 VXLAN: the ip6 table accepts them only from the IPv6 sources, the ip table is unchanged', () => {
    const [ip, ip6] = renderRuleset(state, DEFAULT_RULES_CONFIG, {
      vxlanSources: ['198.18.0.3'],
      vxlanSourcesV6: ['fd00:18::3', 'fd00:18:9::/64'],
    }).tables;
    expect(ip!.sets['cali40all-vxlan-net']!.elements).toEqual(['198.18.0.3']);
    expect(ip6!.sets['cali60all-vxlan-net']).toEqual({
      name: 'cali60all-vxlan-net',
      type: 'ipv6_addr',
      flags: ['interval'],
      elements: ['fd00:18::3', { prefix: { addr: 'fd00:18:9::', len: 64 } }],
    });
    expect(ip6!.chains['filter-cali-INPUT']!.rules.slice(0, 2)).toEqual([
      {
        expr: [
          ...udp4789,
          {
            match: {
              op: '==',
              left: { payload: { protocol: 'ip6', field: 'saddr' } },
              right: '@cali60all-vxlan-net',
            },
          },
          { accept: null },
        ],
        comment: 'Allow IPv6 VXLAN packets from allowed hosts',
      },
      { expr: [...udp4789, { drop: null }], comment: 'Drop IPv6 VXLAN packets from non-allowed hosts' },
    ]);
  });

  it('use the configured VXLAN port, and an empty set still drops every VXLAN packet', () => {
    const [ip] = renderRuleset(
      state,
      { ...DEFAULT_RULES_CONFIG, vxlanPort: 8472 },
      { vxlanSources: [] },
    ).tables;
    expect(ip!.sets['cali40all-vxlan-net']!.elements).toEqual([]);
    const input = JSON.stringify(ip!.chains['filter-cali-INPUT']!.rules.slice(0, 2));
    expect(input).toContain('"right":8472');
    expect(input).not.toContain('4789');
  });

  it('come after the IPIP pair, which accepts IPIP only from Calico hosts', () => {
    const [ip] = renderRuleset(state, DEFAULT_RULES_CONFIG, {
      ipipSources: ['198.18.0.2', '198.18.0.3'],
      vxlanSources: ['198.18.0.3'],
    }).tables;
    expect(ip!.sets['cali40all-hosts-net']!.elements).toEqual(['198.18.0.2', '198.18.0.3']);
    const ipip = { match: { op: '==', left: { meta: { key: 'l4proto' } }, right: 4 } };
    const rules = ip!.chains['filter-cali-INPUT']!.rules;
    expect(rules.slice(0, 2)).toEqual([
      {
        expr: [
          ipip,
          {
            match: {
              op: '==',
              left: { payload: { protocol: 'ip', field: 'saddr' } },
              right: '@cali40all-hosts-net',
            },
          },
          udp4789[2],
          { accept: null },
        ],
        comment: 'Allow IPIP packets from Calico hosts',
      },
      // Unlike VXLAN's, the drop is not limited to local destinations.
      { expr: [ipip, { drop: null }], comment: 'Drop IPIP packets from non-Calico hosts' },
    ]);
    expect(rules[2]!.comment).toBe('Allow IPv4 VXLAN packets from allowed hosts');
  });

  it('to the other hosts pass before host endpoint policy in filter-cali-OUTPUT', () => {
    const [ip] = renderRuleset(state, DEFAULT_RULES_CONFIG, {
      ipipSources: ['198.18.0.2', '198.18.0.3'],
      vxlanSources: ['198.18.0.3'],
    }).tables;
    const fromLocal = {
      match: { op: '==', left: { fib: { result: 'type', flags: ['saddr'] } }, right: 'local' },
    };
    const daddrIn = (set: string) => ({
      match: { op: '==', left: { payload: { protocol: 'ip', field: 'daddr' } }, right: `@${set}` },
    });
    const rules = ip!.chains['filter-cali-OUTPUT']!.rules;
    const hepJump = rules.findIndex((r) => JSON.stringify(r.expr).includes('filter-cali-to-host-endpoint'));
    expect(rules.slice(hepJump - 3, hepJump - 1)).toEqual([
      {
        expr: [
          { match: { op: '==', left: { meta: { key: 'l4proto' } }, right: 4 } },
          daddrIn('cali40all-hosts-net'),
          fromLocal,
          { accept: null },
        ],
        comment: 'Allow IPIP packets to other Calico hosts',
      },
      {
        expr: [udp4789[0], udp4789[1], fromLocal, daddrIn('cali40all-vxlan-net'), { accept: null }],
        comment: 'Allow IPv4 VXLAN packets to other allowed hosts',
      },
    ]);
  });

  it('are left alone without VXLAN', () => {
    const [ip] = renderRuleset(state, DEFAULT_RULES_CONFIG).tables;
    expect(ip!.sets['cali40all-vxlan-net']).toBeUndefined();
    expect(JSON.stringify(ip!.chains['filter-cali-INPUT'])).not.toContain('4789');
  });
});

describe('staged policies', () => {
  // Deny rules that would drop everything to and from the web pod, were they enforced.
  const staged: CalcResource[] = [
    snp('app', 'deny-web', {
      stagedAction: 'Set',
      order: 1,
      selector: "app == 'web'",
      types: ['Ingress', 'Egress'],
      ingress: [{ action: 'Deny' }],
      egress: [{ action: 'Deny' }],
    }),
    sgnp('security.deny-all', { tier: 'security', selector: 'all()', ingress: [{ action: 'Deny' }] }),
    sknp('app', 'isolate-web', { podSelector: { matchLabels: { app: 'web' } }, policyTypes: ['Ingress'] }),
  ];
  const withTier = [...small, tier('security', 100)];

  it('leave the rendered ruleset exactly as it is: they neither allow nor deny', () => {
    const without = renderRuleset(stateOf(withTier), DEFAULT_RULES_CONFIG);
    const withStaged = renderRuleset(stateOf([...withTier, ...staged]), DEFAULT_RULES_CONFIG);
    expect(withStaged).toEqual(without);
    // The enforced policy is still the one the web pod's chains jump to, and nothing drops in the
    // tier that holds only a staged policy.
    const chains = Object.keys(withStaged.tables[0]!.chains);
    expect(chains.filter((c) => c.includes('cali-pi-') || c.includes('cali-po-'))).toEqual([
      'filter-cali-pi-np/app/web',
      'filter-cali-po-np/app/web',
    ]);
    expect(JSON.stringify(withStaged)).not.toContain('deny-web');
    expect(JSON.stringify(withStaged)).not.toContain('security');
  });

  it('arriving, changing and leaving cause no dataplane change', () => {
    const g = new CalcGraph({ hostname: 'node1' });
    for (const r of withTier) g.onUpdate({ kind: 'set', resource: r });
    g.flush();
    const before = g.state();
    for (const r of staged) g.onUpdate({ kind: 'set', resource: r });
    const added = g.flush();
    g.onUpdate({
      kind: 'set',
      resource: snp('app', 'deny-web', { selector: 'all()', ingress: [{ action: 'Deny' }] }),
    });
    const changed = g.flush();
    for (const r of staged) g.onUpdate({ kind: 'delete', resource: r });
    const removed = g.flush();
    expect(g.state()).toEqual(before);
    for (const diff of [added, changed, removed]) {
      expect(renderRuleset(g.state(), DEFAULT_RULES_CONFIG)).toEqual(
        renderRuleset(before, DEFAULT_RULES_CONFIG),
      );
      expect(JSON.stringify(diff)).not.toMatch(/deny-web|security|isolate-web/);
    }
  });
});

describe('NAT outgoing options (upstream cali-nat-outgoing)', () => {
  const state = stateOf(small);
  const saddrMasq = {
    match: {
      op: '==',
      left: { payload: { protocol: 'ip', field: 'saddr' } },
      right: '@cali40masq-ipam-pools',
    },
  };
  const daddrNotPools = {
    match: {
      op: '!=',
      left: { payload: { protocol: 'ip', field: 'daddr' } },
      right: '@cali40network-ip-pools',
    },
  };
  const l4 = (p: string) => ({ match: { op: '==', left: { meta: { key: 'l4proto' } }, right: p } });
  const natRules = (cfg: Partial<RulesConfig>, tunnels = {}) =>
    renderRuleset(state, { ...DEFAULT_RULES_CONFIG, ...cfg }, tunnels).tables[0]!.chains[
      'nat-cali-nat-outgoing'
    ]!.rules;

  it('natPortRange: TCP and UDP masquerade to the range and return, everything else plain', () => {
    const range = { port: { range: [32768, 32800] } };
    expect(natRules({ natPortRange: { min: 32768, max: 32800 } })).toEqual([
      { expr: [saddrMasq, daddrNotPools, l4('tcp'), { masquerade: range }] },
      { expr: [saddrMasq, daddrNotPools, l4('tcp'), { return: null }] },
      { expr: [saddrMasq, daddrNotPools, l4('udp'), { masquerade: range }] },
      { expr: [saddrMasq, daddrNotPools, l4('udp'), { return: null }] },
      { expr: [saddrMasq, daddrNotPools, { masquerade: null }] },
    ]);
  });

  it('natOutgoingAddress with natPortRange: SNAT to that address and those ports', () => {
    const rules = natRules({ natOutgoingAddress: '198.18.0.9', natPortRange: { min: 40000, max: 40000 } });
    expect(rules.map((r) => r.expr.at(-1))).toEqual([
      { snat: { addr: '198.18.0.9', port: 40000 } },
      { return: null },
      { snat: { addr: '198.18.0.9', port: 40000 } },
      { return: null },
      { snat: { addr: '198.18.0.9' } },
    ]);
  });

  it('exclusions IPPoolsAndHostIPs: nothing to a node’s address is translated', () => {
    const hosts = { natExcludedHosts: ['198.18.0.2', '198.18.0.3'] };
    const [ip] = renderRuleset(
      state,
      { ...DEFAULT_RULES_CONFIG, natOutgoingExclusions: 'IPPoolsAndHostIPs' },
      hosts,
    ).tables;
    expect(ip!.sets['cali40all-hosts-net']!.elements).toEqual(['198.18.0.2', '198.18.0.3']);
    expect(ip!.chains['nat-cali-nat-outgoing']!.rules).toEqual([
      {
        expr: [
          saddrMasq,
          daddrNotPools,
          {
            match: {
              op: '!=',
              left: { payload: { protocol: 'ip', field: 'daddr' } },
              right: '@cali40all-hosts-net',
            },
          },
          { masquerade: null },
        ],
      },
    ]);
    // The set alone opens no IPIP: without an IPIP pool, INPUT has no IPIP rules.
    expect(JSON.stringify(ip!.chains['filter-cali-INPUT']!.rules)).not.toContain('all-hosts');
  });

  it('the interface filter limits NAT to traffic leaving through it (eth+ is a prefix)', () => {
    const rules = natRules({ natOutgoingInterfaceFilter: 'eth+' });
    expect(rules).toEqual([
      {
        expr: [
          saddrMasq,
          daddrNotPools,
          { match: { op: '==', left: { meta: { key: 'oifname' } }, right: 'eth*' } },
          { masquerade: null },
        ],
      },
    ]);
  });

  it('reads the three from a FelixConfiguration spec, upstream field names', () => {
    const cfg = rulesConfigFromFelix({
      natPortRange: '32768:65535',
      natOutgoingExclusions: 'IPPoolsAndHostIPs',
      iptablesNATOutgoingInterfaceFilter: 'eth0',
    } as Parameters<typeof rulesConfigFromFelix>[0]);
    expect(cfg.natPortRange).toEqual({ min: 32768, max: 65535 });
    expect(cfg.natOutgoingExclusions).toBe('IPPoolsAndHostIPs');
    expect(cfg.natOutgoingInterfaceFilter).toBe('eth0');
  });
});
