/**
 * NftablesDataplane on FakeNft (libnftables' atomicity and reference rules): whole states move in
 * one transaction, read-back finds nothing to do after a clean programming or a restart, and
 * tampering with the kernel (a rule, a chain, a set element, a whole table) is repaired.
 */
import {
  type NftBatch,
  type NftClient,
  type NftCommand,
  type NftResult,
  Transaction,
} from '@calico-ts/nftables';
import { FakeNft } from '@calico-ts/nftables/testing';
import { describe, expect, it } from 'vitest';
import { CalcGraph } from '../calc/calc-graph.js';
import { np, pool, profile, wep } from '../calc/testing-internal/resources.js';
import type { CalcResource } from '../calc/types.js';
import { DEFAULT_RULES_CONFIG } from '../rules/config.js';
import { hashOfComment } from '../rules/rule-hashes.js';
import type { NftDesired } from '../rules/ruleset.js';
import { commandFamily } from '../rules/ruleset-diff.js';
import { renderRuleset } from '../rules/ruleset-renderer.js';
import { NftablesDataplane } from './nftables-dataplane.js';

function render(resources: CalcResource[]): NftDesired {
  const g = new CalcGraph({ hostname: 'node1' });
  for (const r of resources) g.onUpdate({ kind: 'set', resource: r });
  g.flush();
  return renderRuleset(g.state(), { ...DEFAULT_RULES_CONFIG, ipv6Support: false });
}

const base: CalcResource[] = [
  profile('kns.a', { ingress: [{ action: 'Allow' }], egress: [{ action: 'Allow' }] }),
  wep('a', 'web', { labels: { app: 'web' }, profiles: ['kns.a'], ips: ['198.19.0.1/32'], iface: 'caliweb' }),
  wep('a', 'db', { labels: { app: 'db' }, profiles: ['kns.a'], ips: ['198.19.0.2/32'], iface: 'calidb' }),
  np('a', 'db', {
    selector: "app == 'db'",
    ingress: [{ action: 'Allow', protocol: 'TCP', source: { selector: "app == 'web'" } }],
  }),
  pool('p', '198.19.0.0/16', true),
];
const A = render(base);
const B = render([
  ...base,
  wep('a', 'cache', {
    labels: { app: 'web' },
    profiles: ['kns.a'],
    ips: ['198.19.0.3/32'],
    iface: 'calicache',
  }),
]);

const table = (nft: FakeNft) => nft.dump().tables.find((t) => t.family === 'ip' && t.name === 'calico')!;
const chain = (nft: FakeNft, name: string) => table(nft).chains.find((c) => c.name === name)!;

/** The programmed state in a comparable form: chain → rule comments, set → elements, map → keys. */
function summary(nft: FakeNft) {
  const t = table(nft);
  return {
    chains: Object.fromEntries(t.chains.map((c) => [c.name, c.rules.map((r) => r.comment)])),
    sets: Object.fromEntries(
      t.sets.map((s) => [s.name, (s.elem ?? []).map((e) => JSON.stringify(e)).sort()]),
    ),
    maps: Object.fromEntries(
      t.maps.map((m) => [m.name, (m.elem ?? []).map((e) => String((e as unknown[])[0])).sort()]),
    ),
  };
}

async function programmed(desired: NftDesired) {
  const nft = new FakeNft();
  const dp = new NftablesDataplane({ nft });
  await dp.apply(desired);
  return { nft, dp };
}

describe('NftablesDataplane', () => {
  it('programs the whole ruleset in one transaction, every rule tagged with its hash', async () => {
    const { nft } = await programmed(A);
    expect(nft.transactions).toHaveLength(1);
    const t = table(nft);
    const rules = t.chains.flatMap((c) => c.rules);
    expect(rules.length).toBeGreaterThan(20);
    for (const r of rules) expect(hashOfComment(r.comment)).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(chain(nft, 'filter-cali-to-wl-dispatch').rules[1]!.comment).toMatch(
      /^cali:[A-Za-z0-9_-]{16}; Unknown interface$/,
    );
    expect(Object.keys(summary(nft).maps)).toContain('filter-cali-to-wl-dispatch');
    expect(summary(nft).maps['filter-cali-to-wl-dispatch']).toEqual(['calidb', 'caliweb']);
  });

  it('moves to the next state in one incremental transaction without reading back', async () => {
    const { nft, dp } = await programmed(A);
    const r = await dp.apply(B);
    expect(r.mode).toBe('incremental');
    expect(nft.transactions).toHaveLength(2);
    expect(summary(nft).maps['filter-cali-to-wl-dispatch']).toEqual(['calicache', 'calidb', 'caliweb']);
    // Only what changed: the new endpoint's chains, map elements and IP set members.
    const cmds = JSON.stringify(nft.transactions[1]);
    expect(cmds).toContain('filter-cali-tw-calicache');
    expect(cmds).not.toContain('filter-cali-tw-calidb"');
  });

  it('asks its client to warm its cache for its tables after each transaction, and shrugs off a failed warm-up', async () => {
    class WarmingNft extends FakeNft {
      readonly warmed: string[][] = [];
      fail = false;
      warmCache(tables: readonly { family: string; name: string }[]): Promise<void> {
        this.warmed.push(tables.map((t) => `${t.family} ${t.name}`));
        return this.fail ? Promise.reject(new Error('cache fetch failed')) : Promise.resolve();
      }
    }
    const nft = new WarmingNft();
    const dp = new NftablesDataplane({ nft });
    await dp.apply(A);
    await dp.settled();
    expect(nft.warmed).toEqual([['ip calico']]);
    nft.fail = true;
    expect((await dp.apply(B)).mode).toBe('incremental');
    await dp.settled();
    expect(nft.warmed).toHaveLength(2);
    expect(summary(nft).maps['filter-cali-to-wl-dispatch']).toEqual(['calicache', 'calidb', 'caliweb']);
    // No transaction, nothing to warm.
    expect(await dp.apply(B)).toEqual({ mode: 'incremental', commands: 0 });
    expect(nft.warmed).toHaveLength(2);
  });

  it('finds nothing to do on a resync of an untouched kernel, or after a restart', async () => {
    const { nft, dp } = await programmed(A);
    expect(await dp.resync(A)).toEqual({ mode: 'resync', commands: 0 });
    const restarted = new NftablesDataplane({ nft });
    expect(await restarted.apply(A)).toEqual({ mode: 'resync', commands: 0 });
    expect(nft.transactions).toHaveLength(1);
  });

  it('puts back a rule deleted by hand, on the next resync', async () => {
    const { nft, dp } = await programmed(A);
    const before = summary(nft);
    const victim = chain(nft, 'filter-cali-tw-calidb').rules.at(-2)!;
    nft.runSync([
      {
        delete: {
          rule: { family: 'ip', table: 'calico', chain: 'filter-cali-tw-calidb', handle: victim.handle },
        },
      },
    ]);
    expect(summary(nft)).not.toEqual(before);
    const r = await dp.resync(A);
    expect(r.commands).toBeGreaterThan(0);
    expect(summary(nft)).toEqual(before);
    // The repair is one transaction and touches only that chain.
    const repair = JSON.stringify(nft.transactions.at(-1));
    expect(repair).toContain('filter-cali-tw-calidb');
    expect(repair).not.toContain('filter-cali-tw-caliweb');
  });

  it('removes a chain and a rule added by hand, and restores a deleted set element and map entry', async () => {
    const { nft, dp } = await programmed(A);
    const before = summary(nft);
    const setName = Object.keys(before.sets).find((s) => s.startsWith('cali40s'))!;
    nft.runSync([
      { add: { chain: { family: 'ip', table: 'calico', name: 'intruder' } } },
      { add: { rule: { family: 'ip', table: 'calico', chain: 'intruder', expr: [{ accept: null }] } } },
      {
        insert: {
          rule: {
            family: 'ip',
            table: 'calico',
            chain: 'filter-cali-FORWARD',
            expr: [{ jump: { target: 'intruder' } }],
          },
        },
      },
      { delete: { element: { family: 'ip', table: 'calico', name: setName, elem: ['198.19.0.1'] } } },
      {
        delete: {
          element: { family: 'ip', table: 'calico', name: 'filter-cali-to-wl-dispatch', elem: ['calidb'] },
        },
      },
    ]);
    await dp.resync(A);
    expect(summary(nft)).toEqual(before);
  });

  it('recreates a table deleted by hand', async () => {
    const { nft, dp } = await programmed(A);
    const before = summary(nft);
    nft.runSync([{ delete: { table: { family: 'ip', name: 'calico' } } }]);
    await dp.resync(A);
    expect(summary(nft)).toEqual(before);
  });

  it('falls back to a read-back repair when an incremental batch no longer fits the kernel', async () => {
    const { nft, dp } = await programmed(A);
    // Someone removes the db endpoint's ingress chain (and its map entry) behind Felix's back;
    // the incremental diff to B does not know and would not restore it.
    nft.runSync([
      {
        delete: {
          element: { family: 'ip', table: 'calico', name: 'filter-cali-to-wl-dispatch', elem: ['calidb'] },
        },
      },
      { delete: { chain: { family: 'ip', table: 'calico', name: 'filter-cali-tw-calidb' } } },
    ]);
    const moved = await dp.apply(B);
    expect(moved.mode).toBe('incremental');
    const fresh = await programmed(B);
    // Incremental left the damage (it trusts what it programmed); the timer's resync repairs it.
    expect(summary(nft)).not.toEqual(summary(fresh.nft));
    await dp.resync(B);
    expect(summary(nft)).toEqual(summary(fresh.nft));
  });

  it('leaves the kernel unchanged when nftables refuses a batch, and reads back on the next apply', async () => {
    const { nft } = await programmed(A);
    const dp = new NftablesDataplane({ nft });
    const before = nft.dumpJson();
    nft.failNext('Error: Could not process rule: Cannot allocate memory\n');
    await expect(dp.apply(B)).rejects.toMatchObject({ code: 'failed' });
    expect(nft.dumpJson()).toBe(before);
    expect(dp.programmed).toBeUndefined();
    expect(await dp.apply(B)).toMatchObject({ mode: 'resync' });
    expect(summary(nft)).toEqual(summary((await programmed(B)).nft));
  });

  it('retries a refused incremental batch as a repair in the same call', async () => {
    const { nft, dp } = await programmed(A);
    // The web endpoint's egress chain vanishes: the incremental move to a state without web
    // would delete it and fail; the repair reads back and succeeds.
    nft.runSync([
      {
        delete: {
          element: { family: 'ip', table: 'calico', name: 'filter-cali-from-wl-dispatch', elem: ['caliweb'] },
        },
      },
      { delete: { chain: { family: 'ip', table: 'calico', name: 'filter-cali-fw-caliweb' } } },
    ]);
    const withoutWeb = render(base.filter((r) => r.metadata.name !== 'web'));
    const r = await dp.apply(withoutWeb);
    expect(r.mode).toBe('resync');
    expect(summary(nft)).toEqual(summary((await programmed(withoutWeb)).nft));
  });

  it('removes a calico table of a family it no longer programs', async () => {
    const nft = new FakeNft();
    const dp = new NftablesDataplane({ nft });
    const g = new CalcGraph({ hostname: 'node1' });
    for (const r of base) g.onUpdate({ kind: 'set', resource: r });
    g.flush();
    await dp.apply(renderRuleset(g.state(), DEFAULT_RULES_CONFIG));
    expect(nft.dump().tables.map((t) => `${t.family} ${t.name}`)).toEqual(['ip calico', 'ip6 calico']);
    await new NftablesDataplane({ nft }).apply(A);
    expect(nft.dump().tables.map((t) => `${t.family} ${t.name}`)).toEqual(['ip calico']);
  });

  describe('with a second client for ip6', () => {
    const dual = (resources: CalcResource[]) => {
      const g = new CalcGraph({ hostname: 'node1' });
      for (const r of resources) g.onUpdate({ kind: 'set', resource: r });
      g.flush();
      return renderRuleset(g.state(), { ...DEFAULT_RULES_CONFIG, ipv6Support: true });
    };
    /** A client of the shared fake kernel that records the families of each batch it ran. */
    class Via implements NftClient {
      readonly batches: string[][] = [];
      failNext = false;
      constructor(readonly kernel: FakeNft) {}
      async run(commands: NftBatch): Promise<NftResult> {
        // The dataplane sends its batch as a Transaction.
        const doc = (
          typeof commands === 'string'
            ? JSON.parse(commands).nftables
            : commands instanceof Transaction
              ? commands.commands()
              : commands
        ) as readonly NftCommand[];
        const families = new Set<string>();
        for (const c of doc) {
          const family = 'metainfo' in c ? undefined : commandFamily(c);
          if (family) families.add(family);
        }
        if (this.failNext) {
          this.failNext = false;
          throw new Error('Error: Could not process rule: No such file or directory');
        }
        this.batches.push([...families].sort());
        return this.kernel.run(commands);
      }
      listRuleset() {
        return this.kernel.listRuleset();
      }
      listTable(family: 'ip' | 'ip6', name: string) {
        return this.kernel.listTable(family, name);
      }
      close() {
        return Promise.resolve();
      }
    }
    const A6 = dual(base);
    const B6 = dual([
      ...base,
      wep('a', 'cache', {
        labels: { app: 'web' },
        profiles: ['kns.a'],
        ips: ['fd00::3/128'],
        iface: 'calicache',
      }),
    ]);

    it('runs a large batch as one transaction per family, each in its own client', async () => {
      const kernel = new FakeNft();
      const ip = new Via(kernel);
      const ip6 = new Via(kernel);
      const dp = new NftablesDataplane({ nft: ip, nftIp6: ip6, splitMinCommands: 1 });
      const r = await dp.apply(A6);
      expect(r.mode).toBe('resync');
      expect(ip.batches).toEqual([['ip']]);
      expect(ip6.batches).toEqual([['ip6']]);
      // The kernel holds what one client alone would have programmed.
      const one = new FakeNft();
      await new NftablesDataplane({ nft: one }).apply(A6);
      expect(kernel.dump()).toEqual(one.dump());
      expect(await dp.resync(A6)).toEqual({ mode: 'resync', commands: 0 });
    });

    it('keeps a batch below the threshold in one transaction of the first client', async () => {
      const kernel = new FakeNft();
      const ip = new Via(kernel);
      const ip6 = new Via(kernel);
      const dp = new NftablesDataplane({ nft: ip, nftIp6: ip6, splitMinCommands: 1_000_000 });
      await dp.apply(A6);
      await dp.apply(B6);
      expect(ip.batches).toEqual([
        ['ip', 'ip6'],
        ['ip', 'ip6'],
      ]);
      expect(ip6.batches).toEqual([]);
    });

    it('waits for the other family when one fails, throws, and repairs on the next apply', async () => {
      const kernel = new FakeNft();
      const ip = new Via(kernel);
      const ip6 = new Via(kernel);
      const dp = new NftablesDataplane({ nft: ip, nftIp6: ip6, splitMinCommands: 1 });
      ip6.failNext = true;
      await expect(dp.apply(A6)).rejects.toThrow(/No such file/);
      // The ip family's transaction ran to its end; the ip6 table is not there.
      expect(ip.batches).toEqual([['ip']]);
      expect(kernel.dump().tables.map((t) => t.family)).toEqual(['ip']);
      const r = await dp.apply(A6);
      expect(r.mode).toBe('resync');
      // The repair holds ip6 commands only: one family, so one transaction, in the first client.
      expect(ip.batches).toEqual([['ip'], ['ip6']]);
      expect(ip6.batches).toEqual([]);
      const one = new FakeNft();
      await new NftablesDataplane({ nft: one }).apply(A6);
      expect(kernel.dump()).toEqual(one.dump());
    });
  });
});
