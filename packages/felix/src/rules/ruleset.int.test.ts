/**
 * The rendered JSON and the diffs between rulesets, fed to the real nft (libnftables) inside a
 * private network namespace (`unshare -n`) that disappears with the process: proves the commands
 * are valid libnftables JSON and that their order satisfies the kernel. Needs root, nft, unshare.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CalcGraph } from '../calc/calc-graph.js';
import { gnp, hep, netSet, np, pool, profile, tier, wep } from '../calc/testing-internal/resources.js';
import type { CalcResource } from '../calc/types.js';
import { DEFAULT_RULES_CONFIG } from './config.js';
import { emptyRuleset, type NftDesired } from './ruleset.js';
import { diffRuleset, toNftDocument } from './ruleset-diff.js';
import { renderRuleset, type TunnelRules } from './ruleset-renderer.js';

function available(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
}
const ready = process.getuid?.() === 0 && available('nft') && available('unshare');
if (!ready && process.env.CI === 'true') {
  throw new Error('ruleset.int.test needs root, nft and unshare (CI=true: prerequisites are required)');
}

function render(resources: CalcResource[], tunnels: TunnelRules = {}): NftDesired {
  const g = new CalcGraph({ hostname: 'node1' });
  for (const r of resources) g.onUpdate({ kind: 'set', resource: r });
  g.flush();
  return renderRuleset(g.state(), DEFAULT_RULES_CONFIG, tunnels);
}

const A = render([
  tier('security', 10, 'Pass'),
  profile('kns.a', {
    labelsToApply: { 'pcns.team': 'a' },
    ingress: [{ action: 'Allow' }],
    egress: [{ action: 'Allow' }],
  }),
  wep('a', 'web', {
    labels: { app: 'web' },
    profiles: ['kns.a'],
    ips: ['198.19.0.1/32', 'fd00:19::1/128'],
    iface: 'caliweb',
    ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
  }),
  wep('a', 'db', { labels: { app: 'db' }, profiles: ['kns.a'], ips: ['198.19.0.2/32'], iface: 'calidb' }),
  netSet('a', 'ext', { ext: 'yes' }, ['192.0.2.0/24', '192.0.2.7/32']),
  gnp('security.screen', {
    tier: 'security',
    selector: 'all()',
    ingress: [{ action: 'Log', protocol: 'ICMP', icmp: { type: 8, code: 0 } }, { action: 'Pass' }],
    egress: [{ action: 'Deny', protocol: 'UDP', destination: { ports: [4789] } }, { action: 'Pass' }],
  }),
  np('a', 'db', {
    selector: "app == 'db'",
    ingress: [
      {
        action: 'Allow',
        protocol: 'TCP',
        source: { selector: "app == 'web'", notNets: ['198.19.9.0/24', '198.19.8.0/24'] },
        destination: { ports: [5432, '6000:6010', 'http'] },
      },
      { action: 'Allow', protocol: 'ICMPv6', notICMP: { type: 1, code: 3 } },
    ],
    egress: [
      { action: 'Allow', destination: { selector: "ext == 'yes'", notSelector: 'has(blocked)' } },
      { action: 'Deny', notProtocol: 'TCP', source: { nets: ['198.19.0.0/16', 'fd00:19::/64'] } },
    ],
  }),
  pool('p', '198.19.0.0/16', true),
  pool('p6', 'fd00:19::/64', true),
]);

const B = render(
  [
    profile('kns.a', { ingress: [{ action: 'Allow' }] }),
    wep('a', 'db', { labels: { app: 'db' }, profiles: ['kns.a'], ips: ['198.19.0.2/32'], iface: 'calidb' }),
    wep('a', 'cache', {
      labels: { app: 'web' },
      profiles: ['kns.a'],
      ips: ['198.19.0.3/32'],
      iface: 'calicache',
    }),
    np('a', 'db', {
      selector: "app == 'db'",
      ingress: [
        {
          action: 'Allow',
          protocol: 'UDP',
          source: { selector: "app == 'web'", ports: ['dns'] },
          destination: { ports: ['dns', 53] },
        },
      ],
    }),
    hep('eth0', { labels: { host: 'y' }, ips: ['198.18.0.1'], iface: 'eth0' }),
    gnp('host', {
      selector: 'has(host)',
      applyOnForward: true,
      ingress: [{ action: 'Allow', protocol: 'TCP', destination: { ports: [22] } }],
    }),
    gnp('host-untracked', {
      selector: 'has(host)',
      doNotTrack: true,
      applyOnForward: true,
      ingress: [{ action: 'Allow', protocol: 'UDP', destination: { ports: [53] } }],
      egress: [{ action: 'Allow', protocol: 'UDP', source: { ports: [53] } }],
    }),
    gnp('host-prednat', {
      selector: 'has(host)',
      preDNAT: true,
      applyOnForward: true,
      ingress: [{ action: 'Deny', source: { nets: ['198.18.9.0/24'] } }],
    }),
    pool('p', '198.19.0.0/16', false),
  ],
  {
    ipipSources: ['198.18.0.2', '198.18.0.3'],
    vxlanSources: ['198.18.0.3', '198.18.9.0/24'],
    vxlanSourcesV6: ['fd00:18::3', 'fd00:18:9::/64'],
  },
);

describe.skipIf(!ready)('rendered rulesets in real nftables', () => {
  const dir = mkdtempSync(join(tmpdir(), 'felix-nft-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function run(steps: [NftDesired, NftDesired][]): { status: number | null; out: string } {
    const files = steps.map(([from, to], i) => {
      const f = join(dir, `step${i}.json`);
      writeFileSync(f, JSON.stringify(toNftDocument(diffRuleset(from, to))));
      return f;
    });
    const script = `${files.map((f) => `nft -j -f ${f}`).join(' && ')} && nft list ruleset`;
    const r = spawnSync('unshare', ['-n', 'sh', '-c', script], { encoding: 'utf8' });
    return { status: r.status, out: `${r.stdout}${r.stderr}` };
  }

  it('programs A, moves to B, back to A and removes everything', () => {
    const r = run([
      [emptyRuleset(), A],
      [A, B],
      [B, A],
      [A, emptyRuleset()],
    ]);
    expect(r.out).toBe('');
    expect(r.status).toBe(0);
  });

  it('ends in B with its chains, maps and sets programmed', () => {
    const r = run([
      [emptyRuleset(), A],
      [A, B],
    ]);
    expect(r.status).toBe(0);
    expect(r.out).toContain('chain filter-cali-fhfw-eth0');
    expect(r.out).toContain('"eth0" : goto raw-cali-fh-eth0');
    expect(r.out).toContain('"eth0" : goto mangle-cali-fh-eth0');
    expect(r.out).toMatch(/type filter hook prerouting priority raw; policy accept;/);
    expect(r.out).toMatch(/type filter hook prerouting priority mangle; policy accept;/);
    expect(r.out).toMatch(/meta mark & 0x00010000 == 0x00010000 notrack/);
    expect(r.out).toContain('"eth0" : goto filter-cali-fh-eth0');
    expect(r.out).toContain('"calicache" : goto filter-cali-tw-calicache');
    expect(r.out).not.toContain('caliweb');
    expect(r.out).not.toContain('filter-cali-pi-gnp/security.screen');
    expect(r.out).toContain('elements = { 198.18.0.3, 198.18.9.0/24 }');
    expect(r.out).toMatch(
      /udp dport 4789 fib daddr type local ip saddr @cali40all-vxlan-net accept comment "Allow IPv4 VXLAN packets from allowed hosts"/,
    );
    expect(r.out).toMatch(/udp dport 4789 fib daddr type local drop/);
    expect(r.out).toMatch(
      /meta l4proto ipencap ip saddr @cali40all-hosts-net fib daddr type local accept comment "Allow IPIP packets from Calico hosts"/,
    );
    expect(r.out).toMatch(/meta l4proto ipencap drop comment "Drop IPIP packets from non-Calico hosts"/);
    expect(r.out).toMatch(
      /meta l4proto ipencap ip daddr @cali40all-hosts-net fib saddr type local accept comment "Allow IPIP packets to other Calico hosts"/,
    );
    expect(r.out).toMatch(/udp dport 4789 fib saddr type local ip daddr @cali40all-vxlan-net accept/);
    // B has a host endpoint: its egress policy runs in the output hook.
    expect(r.out).toMatch(/type filter hook output priority filter; policy accept;/);
    // No pool masquerades in B: its nat hook went away with A's NAT pools.
    expect(r.out).not.toMatch(/hook postrouting/);
  });

  it('hooks in A (no host endpoint, NAT pools) only filter input and forward, and NAT', () => {
    const r = run([[emptyRuleset(), A]]);
    expect(r.status).toBe(0);
    const hooks = [...r.out.matchAll(/table (\w+) calico|type (\w+) hook (\w+) priority (\w+)/g)]
      .map((m) => (m[1] ? `${m[1]}:` : `${m[2]} ${m[3]} ${m[4]}`))
      .join(' ');
    expect(hooks).toBe(
      'ip: filter input filter filter forward filter nat postrouting srcnat ' +
        'ip6: filter input filter filter forward filter nat postrouting srcnat',
    );
    expect(r.out).toContain('chain raw-cali-PREROUTING');
  });
});
