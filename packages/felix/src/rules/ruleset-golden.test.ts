/**
 * Byte-exact goldens of what Felix sends to libnftables: for a handful of calc states and rules
 * configurations, the transaction that programs each from nothing and the ones that move between
 * two of them, each printed one command per line exactly as `JSON.stringify` gives it (the document
 * the dataplane sends is these lines joined with commas).
 *
 * The other renderer tests compare objects, which ignores the order of keys; these compare text,
 * so a change of builder or vocabulary that reorders a key, or drops or adds one, shows up here.
 * The files under `__goldens__/` were written from the code before such a change; when a test
 * here fails, the ruleset Felix programs changed, and the golden is updated only when that was
 * the point of the change.
 */
import { describe, expect, it } from 'vitest';
import { CalcGraph } from '../calc/calc-graph.js';
import { gnp, hep, netSet, np, pool, profile, sgnp, tier, wep } from '../calc/testing-internal/resources.js';
import type { CalcResource } from '../calc/types.js';
import { DEFAULT_RULES_CONFIG, type RulesConfig, rulesConfigFromFelix } from './config.js';
import { annotateRuleset } from './rule-hashes.js';
import { emptyRuleset, type NftDesired } from './ruleset.js';
import { diffRuleset, toNftDocument } from './ruleset-diff.js';
import { renderRuleset, type TunnelRules } from './ruleset-renderer.js';

function render(resources: CalcResource[], cfg: RulesConfig = DEFAULT_RULES_CONFIG, tunnels?: TunnelRules) {
  const g = new CalcGraph({ hostname: 'node1' });
  for (const r of resources) g.onUpdate({ kind: 'set', resource: r });
  g.flush();
  return annotateRuleset(renderRuleset(g.state(), cfg, tunnels));
}

/** The document's text, one command per line: joined with commas it is the document sent. */
function lines(from: NftDesired, to: NftDesired): string {
  const doc = JSON.stringify(toNftDocument(diffRuleset(from, to)));
  const items = (JSON.parse(doc) as { nftables: unknown[] }).nftables.map((c) => JSON.stringify(c));
  expect(`{"nftables":[${items.join(',')}]}`).toBe(doc);
  return `${items.join('\n')}\n`;
}

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
  wep('app', 'v6', { labels: { app: 'v6' }, profiles: ['kns.app'], ips: ['fd00:65::9/128'], iface: 'cali6' }),
  np('app', 'web', {
    selector: "app == 'web'",
    ingress: [
      {
        action: 'Allow',
        protocol: 'TCP',
        source: { selector: "app == 'client'" },
        destination: { ports: [80, '8000:8080'] },
      },
      { action: 'Deny', protocol: 'UDP', source: { nets: ['10.0.0.0/8'] } },
      { action: 'Log', protocol: 'ICMP' },
    ],
    egress: [{ action: 'Allow', destination: { nets: ['192.0.2.0/24', '2001:db8::/32'] } }],
  }),
  pool('pool4', '10.65.0.0/16', true),
  pool('pool6', 'fd00:65::/64', true),
];

const hosts: CalcResource[] = [
  tier('security', 10, 'Pass'),
  profile('projectcalico-default-allow', { ingress: [{ action: 'Allow' }], egress: [{ action: 'Allow' }] }),
  hep('h1', { labels: { host: 'a' }, ips: ['198.18.0.1'], iface: 'eth0' }),
  hep('h2', { labels: { other: 'b' }, ips: ['198.18.0.2'], iface: 'eth1' }),
  hep('auto', {
    labels: { auto: 'yes' },
    ips: ['198.18.0.3'],
    iface: '*',
    profiles: ['projectcalico-default-allow'],
  }),
  wep('app', 'web', { labels: { app: 'web' }, ips: ['198.19.0.2/32'], iface: 'cali1234' }),
  gnp('security.screen', { tier: 'security', selector: 'all()', ingress: [{ action: 'Pass' }] }),
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
  gnp('fwd', { selector: 'has(auto)', applyOnForward: true, ingress: [{ action: 'Allow' }] }),
  sgnp('staged', { selector: 'all()', ingress: [{ action: 'Deny' }] }),
  netSet('app', 'ext', { ext: 'yes' }, ['192.0.2.0/24']),
  np('app', 'web', {
    selector: "app == 'web'",
    egress: [{ action: 'Allow', destination: { selector: "ext == 'yes'" } }],
  }),
  pool('p', '198.19.0.0/16', true),
];

const tunnels: TunnelRules = {
  vxlanSources: ['198.18.0.3', '198.18.0.4', '198.18.9.0/24'],
  vxlanSourcesV6: ['fd00:18::3'],
  ipipSources: ['198.18.0.5', '198.18.0.6'],
  natExcludedHosts: ['198.18.0.5', '198.18.0.6'],
};

const configs: Record<string, RulesConfig> = {
  default: DEFAULT_RULES_CONFIG,
  failsafe: rulesConfigFromFelix({
    failsafeInboundHostPorts: [{ protocol: 'TCP', port: 22, net: '198.18.0.0/24' }],
  }),
  nat: {
    ...DEFAULT_RULES_CONFIG,
    natPortRange: { min: 32768, max: 32800 },
    natOutgoingExclusions: 'IPPoolsAndHostIPs',
    natOutgoingInterfaceFilter: 'eth+',
  },
  snat: {
    ...DEFAULT_RULES_CONFIG,
    natOutgoingAddress: '198.18.0.9',
    natPortRange: { min: 40000, max: 40000 },
  },
  v4only: { ...DEFAULT_RULES_CONFIG, ipv6Support: false },
};

describe('the transactions Felix sends, byte for byte', () => {
  const empty = emptyRuleset();
  const states: Record<string, NftDesired> = {
    'small-default': render(small),
    'small-tunnels-nat': render(small, configs.nat!, tunnels),
    'small-snat': render(small, configs.snat!),
    'hosts-failsafe': render(hosts, configs.failsafe!),
    'hosts-v4only-tunnels': render(hosts, configs.v4only!, tunnels),
  };

  for (const [name, state] of Object.entries(states)) {
    it(`${name}: from nothing`, async () => {
      await expect(lines(empty, state)).toMatchFileSnapshot(`__goldens__/${name}.full.txt`);
    });
  }

  for (const [from, to] of [
    ['small-default', 'hosts-failsafe'],
    ['hosts-failsafe', 'small-default'],
    ['small-default', 'small-tunnels-nat'],
    ['hosts-failsafe', 'hosts-v4only-tunnels'],
  ] as const) {
    it(`${from} → ${to}`, async () => {
      await expect(lines(states[from]!, states[to]!)).toMatchFileSnapshot(`__goldens__/${from}--${to}.txt`);
    });
  }

  it('to nothing', async () => {
    await expect(lines(states['hosts-failsafe']!, empty)).toMatchFileSnapshot('__goldens__/to-nothing.txt');
  });
});
