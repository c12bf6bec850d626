/**
 * NftablesDataplane against the real libnftables and kernel, in a throw-away network namespace:
 * after programming, the read-back finds nothing to repair (the kernel's print forms meet the
 * rendered ones); a rule deleted and a rule added with the `nft` CLI are repaired by the next
 * resync; a second context (a restarted Felix) finds nothing to do. Needs root, ip, nft.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { NftContext } from '@calico-ts/nftables';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CalcGraph } from '../calc/calc-graph.js';
import { gnp, netSet, np, pool, profile, tier, wep } from '../calc/testing-internal/resources.js';
import type { CalcResource } from '../calc/types.js';
import { DEFAULT_RULES_CONFIG } from '../rules/config.js';
import type { NftDesired } from '../rules/ruleset.js';
import { renderRuleset } from '../rules/ruleset-renderer.js';
import { NftablesDataplane } from './nftables-dataplane.js';

function missing(): string | undefined {
  if (process.getuid?.() !== 0) return 'root';
  for (const t of ['ip', 'nft']) if (spawnSync('sh', ['-c', `command -v ${t}`]).status !== 0) return t;
  return undefined;
}
const why = missing();
if (why !== undefined && process.env.CI === 'true') {
  throw new Error(`nftables-dataplane.int.test needs ${why} (CI=true: prerequisites are required)`);
}

function render(resources: CalcResource[]): NftDesired {
  const g = new CalcGraph({ hostname: 'node1' });
  for (const r of resources) g.onUpdate({ kind: 'set', resource: r });
  g.flush();
  return renderRuleset(g.state(), DEFAULT_RULES_CONFIG);
}

const common: CalcResource[] = [
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
  netSet('a', 'ext', { ext: 'yes' }, ['192.0.2.0/24', '198.18.5.0/24']),
  gnp('security.screen', {
    tier: 'security',
    selector: 'all()',
    ingress: [{ action: 'Log', protocol: 'ICMP' }, { action: 'Pass' }],
  }),
  pool('p', '198.19.0.0/16', true),
];
const A = render([
  ...common,
  np('a', 'db', {
    selector: "app == 'db'",
    ingress: [
      {
        action: 'Allow',
        protocol: 'TCP',
        source: { selector: "app == 'web'", notNets: ['198.19.9.0/24'] },
        destination: { ports: [5432, '6000:6010', 'http'] },
      },
    ],
    egress: [{ action: 'Allow', destination: { selector: "ext == 'yes'" } }],
  }),
]);
const B = render([
  ...common,
  np('a', 'db', {
    selector: "app == 'db'",
    ingress: [{ action: 'Allow', protocol: 'UDP', destination: { ports: [53] } }],
  }),
]);

function nft(ns: string, args: string[]): string {
  return execFileSync('nsenter', [`--net=/run/netns/${ns}`, 'nft', ...args], { encoding: 'utf8' });
}

describe.skipIf(why !== undefined)('NftablesDataplane in a real network namespace', () => {
  const ns = `felixdp-${randomBytes(3).toString('hex')}`;
  let ctx: NftContext;

  beforeAll(async () => {
    execFileSync('ip', ['netns', 'add', ns]);
    ctx = await NftContext.open({ netns: ns });
  });
  afterAll(async () => {
    await ctx?.close();
    spawnSync('ip', ['netns', 'del', ns]);
  });

  it('programs A; a resync then finds nothing to repair', async () => {
    const dp = new NftablesDataplane({ nft: ctx });
    expect((await dp.apply(A)).commands).toBeGreaterThan(50);
    expect(await dp.resync(A)).toEqual({ mode: 'resync', commands: 0 });
    const text = nft(ns, ['list', 'table', 'ip', 'calico']);
    expect(text).toMatch(/comment "cali:[A-Za-z0-9_-]{16}; Unknown interface"/);
  });

  it('moves to B incrementally, and a fresh context (a restart) finds nothing to do', async () => {
    const dp = new NftablesDataplane({ nft: ctx });
    await dp.apply(A);
    expect(await dp.apply(B)).toMatchObject({ mode: 'incremental' });
    const restarted = await NftContext.open({ netns: ns });
    try {
      expect(await new NftablesDataplane({ nft: restarted }).apply(B)).toEqual({
        mode: 'resync',
        commands: 0,
      });
    } finally {
      await restarted.close();
    }
  });

  it('repairs a rule deleted and a rule inserted with the nft CLI', async () => {
    const dp = new NftablesDataplane({ nft: ctx });
    await dp.apply(A);
    const before = nft(ns, ['list', 'table', 'ip', 'calico']);
    const listing = JSON.parse(nft(ns, ['-j', 'list', 'chain', 'ip', 'calico', 'filter-cali-tw-calidb'])) as {
      nftables: { rule?: { handle: number } }[];
    };
    const handles = listing.nftables.filter((i) => i.rule).map((i) => i.rule!.handle);
    nft(ns, ['delete', 'rule', 'ip', 'calico', 'filter-cali-tw-calidb', 'handle', String(handles.at(-1))]);
    nft(ns, ['insert', 'rule', 'ip', 'calico', 'filter-cali-FORWARD', 'accept']);
    expect(nft(ns, ['list', 'table', 'ip', 'calico'])).not.toBe(before);
    const r = await dp.resync(A);
    expect(r.commands).toBeGreaterThan(0);
    const normalize = (t: string) => t.replace(/ # handle \d+/g, '');
    expect(normalize(nft(ns, ['list', 'table', 'ip', 'calico']))).toBe(normalize(before));
    expect(await dp.resync(A)).toEqual({ mode: 'resync', commands: 0 });
  });

  it('with a context per family: one transaction each at once, the same kernel state, then incremental', async () => {
    nft(ns, ['flush', 'ruleset']);
    const single = new NftablesDataplane({ nft: ctx });
    await single.apply(A);
    const expected = {
      ip: nft(ns, ['list', 'table', 'ip', 'calico']),
      ip6: nft(ns, ['list', 'table', 'ip6', 'calico']),
    };
    nft(ns, ['flush', 'ruleset']);
    const ctx6 = await NftContext.open({ netns: ns });
    try {
      const dp = new NftablesDataplane({ nft: ctx, nftIp6: ctx6, splitMinCommands: 1 });
      const r = await dp.apply(A);
      expect(r.mode).toBe('resync');
      const normalize = (t: string) => t.replace(/ # handle \d+/g, '');
      expect(normalize(nft(ns, ['list', 'table', 'ip', 'calico']))).toBe(normalize(expected.ip));
      expect(normalize(nft(ns, ['list', 'table', 'ip6', 'calico']))).toBe(normalize(expected.ip6));
      expect(await dp.resync(A)).toEqual({ mode: 'resync', commands: 0 });
      expect(await dp.apply(B)).toMatchObject({ mode: 'incremental' });
      expect(await new NftablesDataplane({ nft: ctx6 }).apply(B)).toEqual({ mode: 'resync', commands: 0 });
    } finally {
      await ctx6.close();
    }
  });
});
