/**
 * diffRuleset moves nftables from one desired ruleset to another: applying its commands to the
 * current state (with the kernel's rules about references, enforced by `@calico-ts/nftables`'
 * FakeNft, itself checked against libnftables) must give exactly the desired state, and unchanged
 * objects must not be touched.
 */
import { type NftCommand, type NftRuleset, Transaction } from '@calico-ts/nftables';
import { FakeNft } from '@calico-ts/nftables/testing';
import { describe, expect, it } from 'vitest';
import { CalcGraph } from '../calc/calc-graph.js';
import { gnp, hep, netSet, np, pool, profile, tier, wep } from '../calc/testing-internal/resources.js';
import type { CalcResource } from '../calc/types.js';
import { DEFAULT_RULES_CONFIG } from './config.js';
import { emptyRuleset, type NftDesired } from './ruleset.js';
import { diffRuleset } from './ruleset-diff.js';
import { renderRuleset } from './ruleset-renderer.js';

function render(resources: CalcResource[]): NftDesired {
  const g = new CalcGraph({ hostname: 'node1' });
  for (const r of resources) g.onUpdate({ kind: 'set', resource: r });
  g.flush();
  return renderRuleset(g.state(), DEFAULT_RULES_CONFIG);
}

/**
 * A listing compared by content: without handles (a chain made by a diff has another number than
 * the same chain made from nothing), chains, sets and maps by name, elements by value. The rules of
 * a chain stay in order.
 */
function byContent(rs: NftRuleset): unknown {
  const byName = (a: { name: string }, b: { name: string }) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
  const strip = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(strip);
    if (v === null || typeof v !== 'object') return v;
    return Object.fromEntries(
      Object.entries(v)
        .filter(([k]) => k !== 'handle')
        .map(([k, x]) => [k, strip(x)]),
    );
  };
  return rs.tables.map((t) => ({
    ...(strip({ family: t.family, name: t.name }) as object),
    chains: [...t.chains].sort(byName).map(strip),
    sets: [...t.sets, ...t.maps].sort(byName).map((x) => {
      const s = strip(x) as { elem?: unknown[] };
      if (s.elem) s.elem = s.elem.map((e) => JSON.stringify(e)).sort();
      return s;
    }),
  }));
}

/** What the fake kernel holds after each batch ran as one transaction, by content. */
function programmed(...batches: NftCommand[][]): unknown {
  const nft = new FakeNft();
  for (const b of batches) nft.runSync(Transaction.of(b));
  return byContent(nft.dump());
}

/** `desired` programmed from nothing: what a diff to it must leave. */
function normalizeRuleset(desired: NftDesired): unknown {
  return programmed(diffRuleset(emptyRuleset(), desired));
}

/**
 * The diff from `current` to `desired`, run on a fake kernel that holds `current` (the kernel's
 * rules about references and element types enforced by `FakeNft`).
 */
function applyDiff(current: NftDesired, desired: NftDesired): { result: unknown; commands: NftCommand[] } {
  const commands = diffRuleset(current, desired);
  return { result: programmed(diffRuleset(emptyRuleset(), current), commands), commands };
}

const clusterA: CalcResource[] = [
  tier('security', 10, 'Pass'),
  profile('kns.a', { ingress: [{ action: 'Allow' }], egress: [{ action: 'Allow' }] }),
  wep('a', 'web', { labels: { app: 'web' }, profiles: ['kns.a'], ips: ['10.65.0.1/32'], iface: 'caliweb' }),
  wep('a', 'db', { labels: { app: 'db' }, profiles: ['kns.a'], ips: ['10.65.0.2/32'], iface: 'calidb' }),
  netSet('a', 'ext', { ext: 'yes' }, ['192.0.2.0/24']),
  gnp('security.screen', { tier: 'security', selector: 'all()', ingress: [{ action: 'Pass' }] }),
  np('a', 'db', {
    selector: "app == 'db'",
    ingress: [
      {
        action: 'Allow',
        protocol: 'TCP',
        source: { selector: "app == 'web'" },
        destination: { ports: [5432] },
      },
    ],
    egress: [{ action: 'Allow', destination: { selector: "ext == 'yes'" } }],
  }),
  pool('p', '10.65.0.0/16', true),
];

// Web deleted, a new endpoint, the db policy's rules changed, a host endpoint, the pool without NAT.
const clusterB: CalcResource[] = [
  profile('kns.a', { ingress: [{ action: 'Allow' }], egress: [{ action: 'Allow' }] }),
  wep('a', 'db', { labels: { app: 'db' }, profiles: ['kns.a'], ips: ['10.65.0.2/32'], iface: 'calidb' }),
  wep('a', 'cache', {
    labels: { app: 'web' },
    profiles: ['kns.a'],
    ips: ['10.65.0.3/32'],
    iface: 'calicache',
  }),
  np('a', 'db', {
    selector: "app == 'db'",
    ingress: [
      {
        action: 'Allow',
        protocol: 'TCP',
        source: { selector: "app == 'web'" },
        destination: { ports: [5432, 'pg'] },
      },
    ],
  }),
  hep('eth0', { labels: { host: 'y' }, ips: ['198.18.0.1'], iface: 'eth0' }),
  gnp('host', {
    selector: 'has(host)',
    ingress: [{ action: 'Allow', protocol: 'TCP', destination: { ports: [22] } }],
  }),
  pool('p', '10.65.0.0/16', false),
];

describe('diffRuleset', () => {
  const A = render(clusterA);
  const B = render(clusterB);
  const empty = emptyRuleset();

  for (const [name, from, to] of [
    ['empty → A', empty, A],
    ['A → B', A, B],
    ['B → A', B, A],
    ['A → empty', A, empty],
  ] as const) {
    it(`${name}: applying the diff gives the desired ruleset`, () => {
      const { result } = applyDiff(from, to);
      expect(result).toEqual(normalizeRuleset(to));
    });
  }

  it('emits nothing when nothing changed', () => {
    expect(diffRuleset(A, render(clusterA))).toEqual([]);
  });

  it('moves one IP set member by refilling that set only, and touches no chain', () => {
    const moved = clusterA.map((r) =>
      r.kind === 'WorkloadEndpoint' && r.metadata.name === 'web'
        ? wep('a', 'web', {
            labels: { app: 'web' },
            profiles: ['kns.a'],
            ips: ['10.65.0.9/32'],
            iface: 'caliweb',
          })
        : r,
    );
    const { result, commands } = applyDiff(A, render(moved));
    expect(result).toEqual(normalizeRuleset(render(moved)));
    const kinds = commands.map((c) => `${Object.keys(c)[0]} ${Object.keys(Object.values(c)[0]!)[0]}`);
    // IPv4 only: the set lost 10.65.0.1 and gained 10.65.0.9: flushed and refilled with what it
    // keeps, never `delete element` (libnftables would fetch every interval set's elements).
    expect(kinds).toEqual(['flush set', 'add set']);
    const refill = commands[1] as unknown as { add: { set: { name: string; elem: unknown[] } } };
    const flushed = commands[0] as unknown as { flush: { set: { name: string } } };
    expect(refill.add.set.name).toBe(flushed.flush.set.name);
    expect(refill.add.set.elem).toEqual(render(moved).tables[0]!.sets[refill.add.set.name]!.elements);
  });

  it('adds a member to existing sets with an add set of just the new elements', () => {
    const more = [
      ...clusterA,
      wep('a', 'web2', {
        labels: { app: 'web' },
        profiles: ['kns.a'],
        ips: ['10.65.0.9/32'],
        iface: 'caliweb2',
      }),
    ];
    const { result, commands } = applyDiff(A, render(more));
    expect(result).toEqual(normalizeRuleset(render(more)));
    const setAdds = commands.filter((c) => 'add' in c && 'set' in c.add) as {
      add: { set: { elem?: unknown[] } };
    }[];
    expect(setAdds.length).toBeGreaterThan(0);
    for (const c of setAdds) expect(c.add.set.elem).toEqual(['10.65.0.9']);
    expect(commands.some((c) => 'element' in Object.values(c)[0]!)).toBe(false);
    expect(commands.some((c) => 'flush' in c && !('chain' in c.flush))).toBe(false);
  });

  it('replaces a changed chain by flushing and re-adding only that chain', () => {
    const changed = clusterA.map((r) =>
      r.kind === 'NetworkPolicy'
        ? np('a', 'db', {
            selector: "app == 'db'",
            ingress: [
              {
                action: 'Allow',
                protocol: 'TCP',
                source: { selector: "app == 'web'" },
                destination: { ports: [5433] },
              },
            ],
            egress: [{ action: 'Allow', destination: { selector: "ext == 'yes'" } }],
          })
        : r,
    );
    const { result, commands } = applyDiff(A, render(changed));
    expect(result).toEqual(normalizeRuleset(render(changed)));
    const flushed = commands
      .filter((c) => 'flush' in c)
      .map((c) =>
        'flush' in c && 'chain' in c.flush ? `${c.flush.chain.family} ${c.flush.chain.name}` : '',
      );
    expect(flushed).toEqual(['ip filter-cali-pi-np/a/db', 'ip6 filter-cali-pi-np/a/db']);
    expect(commands.every((c) => 'flush' in c || ('add' in c && 'rule' in c.add))).toBe(true);
  });

  it('appends a rule added at the end of a policy without flushing its chain', () => {
    const dbPolicy = (extra: boolean) =>
      np('a', 'db', {
        selector: "app == 'db'",
        ingress: [
          {
            action: 'Allow',
            protocol: 'TCP',
            source: { selector: "app == 'web'" },
            destination: { ports: [5432] },
          },
          ...(extra
            ? [{ action: 'Allow' as const, protocol: 'TCP' as const, destination: { ports: [9999] } }]
            : []),
        ],
        egress: [{ action: 'Allow', destination: { selector: "ext == 'yes'" } }],
      });
    const withRule = clusterA.map((r) => (r.kind === 'NetworkPolicy' ? dbPolicy(true) : r));
    const { result, commands } = applyDiff(A, render(withRule));
    expect(result).toEqual(normalizeRuleset(render(withRule)));
    expect(commands.map((c) => Object.keys(Object.values(c)[0]!)[0])).toEqual(['rule', 'rule']);
    expect(commands.every((c) => 'add' in c && 'rule' in c.add)).toBe(true);
    expect(JSON.stringify(commands)).toContain('9999');
    // Removing it again rewrites the chain (a rule is deleted by flushing and refilling).
    const back = applyDiff(render(withRule), A);
    expect(back.result).toEqual(normalizeRuleset(A));
    expect(back.commands.filter((c) => 'flush' in c)).toHaveLength(2);
  });

  it('creates referenced chains before their referrers and deletes them after', () => {
    const { commands } = applyDiff(A, B);
    const idx = (pred: (c: NftCommand) => boolean) => commands.findIndex(pred);
    const addChain = idx(
      (c) => 'add' in c && 'chain' in c.add && c.add.chain.name === 'filter-cali-pi-gnp/host',
    );
    const jumpToIt = idx(
      (c) =>
        'add' in c &&
        'rule' in c.add &&
        JSON.stringify(c.add.rule.expr).includes('"filter-cali-pi-gnp/host"'),
    );
    expect(addChain).toBeGreaterThanOrEqual(0);
    expect(addChain).toBeLessThan(jumpToIt);
    const delChain = idx(
      (c) =>
        'delete' in c && 'chain' in c.delete && c.delete.chain.name === 'filter-cali-pi-gnp/security.screen',
    );
    const flushReferrer = idx(
      (c) => 'flush' in c && 'chain' in c.flush && c.flush.chain.name === 'filter-cali-tw-calidb',
    );
    expect(flushReferrer).toBeGreaterThanOrEqual(0);
    expect(flushReferrer).toBeLessThan(delChain);
  });

  it('recreates a set whose type changed and the chains that use it', () => {
    const cur: NftDesired = {
      tables: [
        {
          family: 'ip',
          name: 'calico',
          sets: { s: { name: 's', type: 'ipv4_addr', flags: ['interval'], elements: ['10.0.0.1'] } },
          maps: {},
          chains: {
            c: {
              name: 'c',
              rules: [{ expr: [{ match: { op: '==', left: { meta: { key: 'iifname' } }, right: '@s' } }] }],
            },
            d: {
              name: 'd',
              base: { type: 'filter', hook: 'input', prio: 0, policy: 'accept' },
              rules: [{ expr: [{ jump: { target: 'c' } }] }],
            },
          },
        },
      ],
    };
    const des: NftDesired = {
      tables: [
        {
          ...cur.tables[0]!,
          sets: {
            s: { name: 's', type: ['ipv4_addr', 'inet_proto', 'inet_service'], flags: [], elements: [] },
          },
          chains: {
            ...cur.tables[0]!.chains,
            d: {
              name: 'd',
              base: { type: 'filter', hook: 'input', prio: 10, policy: 'accept' },
              rules: [{ expr: [{ jump: { target: 'c' } }] }],
            },
          },
        },
      ],
    };
    const { result } = applyDiff(cur, des);
    expect(result).toEqual(normalizeRuleset(des));
  });
});
