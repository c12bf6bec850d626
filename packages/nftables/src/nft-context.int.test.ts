/**
 * NftContext against the real libnftables 1.0.6 and kernel, each test in its own throw-away
 * network namespace. What the kernel holds is read back with the `nft` CLI inside the namespace,
 * never through the code under test.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isNftablesError, type NftablesError } from './errors.js';
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
  fibType,
  flush,
  goto,
  iifname,
  insert,
  ipDaddr,
  ipSaddr,
  jump,
  l4proto,
  log,
  map,
  markMatch,
  masquerade,
  meta,
  ne,
  oifname,
  payload,
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
} from './json/builders.js';
import type { NftRuleset } from './json/ruleset.js';
import type { NftCommand, NftStatement } from './json/types.js';
import { NftContext } from './nft-context.js';
import { FakeNft } from './testing/fake-nft.js';
import {
  cliRuleset,
  cliRulesetText,
  inCI,
  missingPrerequisite,
  runIn,
  Scratch,
} from './testing-internal/privileged.js';
import { Transaction } from './transaction.js';

const missing = missingPrerequisite();
const t = tableRef('ip', 'calico');

async function failure(p: Promise<unknown>): Promise<NftablesError> {
  try {
    await p;
  } catch (e) {
    if (isNftablesError(e)) return e;
    throw e;
  }
  throw new Error('expected a failure');
}

/** Elements of hash sets come back in the kernel's order; compare them as sets. */
function canonical(rs: NftRuleset): NftRuleset {
  const copy = structuredClone(rs);
  for (const tbl of copy.tables) {
    for (const s of [...tbl.sets, ...tbl.maps]) {
      if (s.elem) s.elem.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
    }
  }
  return copy;
}

function threadNetnsInode(): number {
  return statSync('/proc/thread-self/ns/net').ino;
}

describe.skipIf(missing !== undefined && !inCI)(
  'NftContext on libnftables (root, network namespaces)',
  () => {
    let s: Scratch;
    const open: NftContext[] = [];

    beforeAll(() => {
      if (missing) throw new Error(`privileged test prerequisite missing: ${missing}`);
    });
    beforeEach(() => {
      s = new Scratch();
    });
    afterEach(async () => {
      for (const ctx of open.splice(0)) await ctx.close();
      s.cleanup();
    });

    async function openIn(netns?: string): Promise<NftContext> {
      const ctx = await NftContext.open(netns === undefined ? {} : { netns });
      open.push(ctx);
      return ctx;
    }

    it('close() settles while a call is still in flight, and the process then exits by itself', () => {
      // In a process of its own: an awaited close() that never settles shows as Node's exit 13
      // (unsettled top-level await) once nothing else keeps the process alive.
      const ns = s.makeNetns('close');
      const dir = mkdtempSync(join(tmpdir(), 'nft-close-'));
      try {
        const index = fileURLToPath(new URL('../dist/index.js', import.meta.url));
        const script = join(dir, 'close.mjs');
        writeFileSync(
          script,
          [
            `import { NftContext } from ${JSON.stringify(index)};`,
            `const ctx = await NftContext.open({ netns: ${JSON.stringify(ns)} });`,
            "await ctx.run('add table ip t');",
            "const warm = ctx.warmCache([{ family: 'ip', name: 't' }]);",
            'await ctx.close();',
            'await warm.catch(() => {});',
            "console.log('closed');",
          ].join('\n'),
        );
        const r = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 30_000 });
        expect({ status: r.status, stdout: r.stdout.trim() }).toEqual({ status: 0, stdout: 'closed' });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('programs table calico with chains, sets, maps and rules, exactly as nft -j list ruleset shows', async () => {
      const ns = s.makeNetns('a');
      const ctx = await openIn(ns);
      const rules: Record<string, NftStatement[][]> = {
        'filter-FORWARD': [
          [ctState('established', 'related'), accept()],
          [ctState('invalid'), counter(), drop()],
          [vmap(meta('iifname'), setRef('cali-dispatch'))],
          [oifname('cali*'), ipSaddr(setRef('cali-hosts')), counter(), jump('cali-fw')],
        ],
        'cali-fw': [
          [tcpDport(anonSet([80, 443])), setMark(0x10000, 0x10000), returnVerdict()],
          [markMatch(0x10000, 0x10000), log({ prefix: 'calico-drop: ' }), drop()],
          [fibType(['daddr'], 'local'), goto('cali-end')],
          [l4proto('icmp'), accept()],
          [
            iifname('eth0'),
            ipDaddr(cidr('198.19.0.0/16')),
            vmap(meta('oifname'), [
              ['cali1', accept()],
              ['cali2', drop()],
            ]),
          ],
        ],
        'nat-POSTROUTING': [
          [
            ipSaddr(setRef('cali-masq')),
            ne(payload('ip', 'daddr'), setRef('cali-masq')),
            masquerade({ flags: ['fully-random'] }),
          ],
        ],
      };
      const res = await ctx.run(
        [
          add(table(t)),
          add(chain(t, 'filter-FORWARD', { type: 'filter', hook: 'forward', prio: 0, policy: 'accept' })),
          add(chain(t, 'cali-fw')),
          add(chain(t, 'cali-end')),
          add(chain(t, 'nat-POSTROUTING', { type: 'nat', hook: 'postrouting', prio: 100 })),
          add(set(t, 'cali-hosts', 'ipv4_addr', { flags: ['interval'] })),
          add(set(t, 'cali-masq', 'ipv4_addr', { flags: ['interval'], elem: [cidr('198.19.0.0/16')] })),
          add(set(t, 'cali-ports', 'inet_service')),
          add(map(t, 'cali-dispatch', 'ifname', 'verdict')),
          add(map(t, 'cali-marks', 'ipv4_addr', 'mark')),
          add(elements(t, 'cali-hosts', [cidr('198.18.0.0/24'), cidr('198.18.1.7/32')])),
          add(elements(t, 'cali-ports', [53, 80, 443])),
          add(
            elements(t, 'cali-dispatch', [
              ['cali1', jump('cali-fw')],
              ['cali2', goto('cali-end')],
            ]),
          ),
          add(elements(t, 'cali-marks', [['198.18.0.9', 0x10000]])),
          ...Object.entries(rules).flatMap(([c, list]) =>
            list.map((expr, i) =>
              add(rule(t, c, expr, c === 'cali-fw' && i === 0 ? { comment: 'cali:web' } : {})),
            ),
          ),
        ],
        { echo: true },
      );
      // Handles: chains 1-4, sets and maps 5-9, then rules; an anonymous set or map takes the
      // handle before its rule (15 after 14, 20 after 19).
      const handles = res.items.flatMap((i) => {
        const r = (i as { add: { rule?: { handle: number } } }).add.rule;
        return r ? [r.handle] : [];
      });
      expect(handles).toEqual([10, 11, 12, 13, 15, 16, 17, 18, 20, 21]);

      const ruleState = (c: string, handle: number, expr: NftStatement[], comment?: string) => ({
        family: 'ip',
        table: 'calico',
        chain: c,
        handle,
        ...(comment === undefined ? {} : { comment }),
        expr,
      });
      const R = rules;
      const expected = {
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
                name: 'cali-hosts',
                table: 'calico',
                type: 'ipv4_addr',
                handle: 5,
                flags: ['interval'],
                elem: [{ prefix: { addr: '198.18.0.0', len: 24 } }, '198.18.1.7'],
              },
              {
                family: 'ip',
                name: 'cali-masq',
                table: 'calico',
                type: 'ipv4_addr',
                handle: 6,
                flags: ['interval'],
                elem: [{ prefix: { addr: '198.19.0.0', len: 16 } }],
              },
              {
                family: 'ip',
                name: 'cali-ports',
                table: 'calico',
                type: 'inet_service',
                handle: 7,
                elem: [53, 80, 443],
              },
            ],
            maps: [
              {
                family: 'ip',
                name: 'cali-dispatch',
                table: 'calico',
                type: 'ifname',
                handle: 8,
                map: 'verdict',
                elem: [
                  ['cali1', { jump: { target: 'cali-fw' } }],
                  ['cali2', { goto: { target: 'cali-end' } }],
                ],
              },
              {
                family: 'ip',
                name: 'cali-marks',
                table: 'calico',
                type: 'ipv4_addr',
                handle: 9,
                map: 'mark',
                elem: [['198.18.0.9', 65536]],
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
                rules: R['filter-FORWARD']!.map((e, i) =>
                  ruleState('filter-FORWARD', [10, 11, 12, 13][i]!, e),
                ),
              },
              {
                family: 'ip',
                table: 'calico',
                name: 'cali-fw',
                handle: 2,
                rules: R['cali-fw']!.map((e, i) =>
                  ruleState('cali-fw', [15, 16, 17, 18, 20][i]!, e, i === 0 ? 'cali:web' : undefined),
                ),
              },
              { family: 'ip', table: 'calico', name: 'cali-end', handle: 3, rules: [] },
              {
                family: 'ip',
                table: 'calico',
                name: 'nat-POSTROUTING',
                handle: 4,
                type: 'nat',
                hook: 'postrouting',
                prio: 100,
                policy: 'accept',
                rules: [ruleState('nat-POSTROUTING', 21, R['nat-POSTROUTING']![0]!)],
              },
            ],
          },
        ],
      };
      expect(canonical(cliRuleset(ns))).toEqual(canonical(expected as NftRuleset));
      // The context reads back the same.
      expect(canonical(await ctx.listRuleset())).toEqual(canonical(expected as NftRuleset));
      expect(canonical({ tables: [await ctx.listTable('ip', 'calico')], others: [] }).tables).toEqual(
        canonical(expected as NftRuleset).tables,
      );
    });

    it('applies a batch whose last command fails not at all', async () => {
      const ns = s.makeNetns('a');
      const ctx = await openIn(ns);
      await ctx.run([
        add(table(t)),
        add(chain(t, 'a')),
        add(set(t, 's', 'ipv4_addr')),
        add(rule(t, 'a', [accept()])),
      ]);
      const before = cliRulesetText(ns);

      const batch: NftCommand[] = [
        add(chain(t, 'b')),
        add(rule(t, 'a', [jump('b')])),
        add(elements(t, 's', ['198.18.0.1'])),
        flush(chain(t, 'a')),
        add(table(tableRef('ip', 'other'))),
      ];
      // Rejected by nft's parser: a statement it does not know.
      const parse = await failure(ctx.run([...batch, add(rule(t, 'b', [{ bogus: null } as never]))]));
      expect(parse.code).toBe('invalid');
      expect(parse.commandIndex).toBe(5);
      expect(parse.netns).toBe(ns);
      expect(parse.detail).toContain("Unknown statement object 'bogus'.");
      expect(cliRulesetText(ns)).toBe(before);

      // Rejected by the kernel: a jump to a chain that does not exist.
      const kernel = await failure(ctx.run([...batch, add(rule(t, 'b', [goto('missing')]))]));
      expect(kernel.code).toBe('not-found');
      expect(kernel.detail).toBe(
        'internal:0:0-0: Error: Could not process rule: No such file or directory\n\n',
      );
      expect(cliRulesetText(ns)).toBe(before);

      // Rejected by nft's evaluation: a value that is not an address of the set's type.
      const value = await failure(ctx.run([...batch, add(elements(t, 's', ['2001:db8::1']))]));
      expect(value.code).toBe('invalid');
      expect(cliRulesetText(ns)).toBe(before);

      // The same batch with a valid last command goes through whole.
      await ctx.run([...batch, add(rule(t, 'b', [drop()]))]);
      const after = cliRuleset(ns);
      expect(after.tables.map((x) => x.name)).toEqual(['calico', 'other']);
      expect(after.tables[0]!.chains.map((c) => [c.name, c.rules.map((r) => r.expr)])).toEqual([
        ['a', []],
        ['b', [[drop()]]],
      ]);
    });

    it('leaves the host ruleset and the calling thread namespace untouched', async () => {
      const hostBefore = cliRulesetText(undefined);
      const threadBefore = threadNetnsInode();
      const ns = s.makeNetns('a');
      const ctx = await openIn(ns);
      await ctx.run([
        add(table(t)),
        add(chain(t, 'in', { type: 'filter', hook: 'input', prio: 0, policy: 'drop' })),
      ]);
      await ctx.run([add(rule(t, 'in', [iifname('lo'), accept()]))]);
      expect(cliRuleset(ns).tables.map((x) => x.name)).toEqual(['calico']);

      expect(threadNetnsInode()).toBe(threadBefore);
      expect(statSync('/proc/self/ns/net').ino).toBe(threadBefore);
      expect(cliRulesetText(undefined)).toBe(hostBefore);
      // A context without netns acts in the caller's namespace: it sees the host's ruleset.
      const host = await openIn();
      expect(await host.listRuleset()).toEqual(cliRuleset(undefined));
      expect((await host.listRuleset()).tables.some((x) => x.name === 'calico' && x.family === 'ip')).toBe(
        cliRuleset(undefined).tables.some((x) => x.name === 'calico' && x.family === 'ip'),
      );
    });

    it('drops a ping between two namespaces with a drop rule, and passes it with accept', async () => {
      const a = s.makeNetns('a');
      const b = s.makeNetns('b');
      const sh = (ns: string, ...argv: string[]) => {
        const r = runIn(ns, argv);
        if (r.code !== 0) throw new Error(`${argv.join(' ')} in ${ns}: ${r.err}`);
      };
      sh(a, 'ip', 'link', 'add', 'veth-a', 'type', 'veth', 'peer', 'name', 'veth-b');
      sh(a, 'ip', 'link', 'set', 'veth-b', 'netns', b);
      sh(a, 'ip', 'addr', 'add', '198.18.0.1/24', 'dev', 'veth-a');
      sh(b, 'ip', 'addr', 'add', '198.18.0.2/24', 'dev', 'veth-b');
      sh(a, 'ip', 'link', 'set', 'veth-a', 'up');
      sh(b, 'ip', 'link', 'set', 'veth-b', 'up');
      // A veth pair reports carrier a moment after `up`; on a loaded machine a ping sent before
      // that (or an ARP reply later than one second) fails for reasons that are not the rules'.
      for (const [ns, dev] of [
        [a, 'veth-a'],
        [b, 'veth-b'],
      ] as const) {
        const deadline = Date.now() + 10_000;
        while (!runIn(ns, ['ip', 'link', 'show', dev]).out.includes('LOWER_UP')) {
          if (Date.now() > deadline) throw new Error(`${dev} in ${ns} has no carrier after 10 s`);
          await new Promise((r) => setTimeout(r, 20));
        }
      }
      const ping = () => runIn(a, ['ping', '-c', '1', '-W', '3', '198.18.0.2']).code;
      expect(ping()).toBe(0);

      const ctx = await openIn(b);
      const res = await ctx.run(
        [
          add(table(t)),
          add(chain(t, 'input', { type: 'filter', hook: 'input', prio: 0, policy: 'accept' })),
          add(rule(t, 'input', [ipSaddr('198.18.0.1'), l4proto('icmp'), counter(), accept()])),
        ],
        { echo: true },
      );
      const handle = (res.items[2] as { add: { rule: { handle: number } } }).add.rule.handle;
      expect(ping()).toBe(0);
      const counted = (await ctx.listTable('ip', 'calico')).chains[0]!.rules[0]!.expr[2] as {
        counter: { packets: number };
      };
      expect(counted.counter.packets).toBeGreaterThanOrEqual(1);

      await ctx.run([
        replace(rule(t, 'input', [ipSaddr('198.18.0.1'), l4proto('icmp'), counter(), drop()], { handle })),
      ]);
      expect(ping()).not.toBe(0);
      const dropped = (await ctx.listTable('ip', 'calico')).chains[0]!.rules[0]!.expr[2] as {
        counter: { packets: number };
      };
      expect(dropped.counter.packets).toBeGreaterThanOrEqual(1);
      // Namespace a has no rules: the drop lives only in b.
      expect(cliRuleset(a).tables).toEqual([]);

      await ctx.run([del(ruleRef(t, 'input', handle))]);
      expect(ping()).toBe(0);
    });

    it('keeps two contexts in two namespaces apart, used at the same time', async () => {
      const a = s.makeNetns('a');
      const b = s.makeNetns('b');
      const [ca, cb] = await Promise.all([openIn(a), openIn(b)]);
      await Promise.all([
        ca.run([add(table(tableRef('ip', 'only-a'))), add(chain(tableRef('ip', 'only-a'), 'x'))]),
        cb.run([add(table(tableRef('inet', 'only-b')))]),
      ]);
      expect(cliRuleset(a).tables.map((x) => `${x.family} ${x.name}`)).toEqual(['ip only-a']);
      expect(cliRuleset(b).tables.map((x) => `${x.family} ${x.name}`)).toEqual(['inet only-b']);
      // Many calls queued at once run in call order, one transaction each.
      const calls = Array.from({ length: 20 }, (_, i) =>
        ca.run([add(chain(tableRef('ip', 'only-a'), `c${i}`))]),
      );
      await Promise.all(calls);
      expect(cliRuleset(a).tables[0]!.chains.map((c) => c.name)).toEqual([
        'x',
        ...Array.from({ length: 20 }, (_, i) => `c${i}`),
      ]);
    });

    it('takes nft syntax and JSON text as well as commands', async () => {
      const ns = s.makeNetns('a');
      const ctx = await openIn(ns);
      await ctx.run(
        'add table ip calico; add chain ip calico a; add rule ip calico a iifname "cali*" accept',
      );
      const listed = await ctx.run('list chain ip calico a');
      expect(listed.items).toEqual([
        { chain: { family: 'ip', table: 'calico', name: 'a', handle: 1 } },
        {
          rule: { family: 'ip', table: 'calico', chain: 'a', handle: 2, expr: [iifname('cali*'), accept()] },
        },
      ]);
      await ctx.run('{"nftables":[{"delete":{"table":{"family":"ip","name":"calico"}}}]}');
      expect(cliRuleset(ns).tables).toEqual([]);
      const e = await failure(ctx.run('add chain ip calico x { bad }'));
      expect(e.code).toBe('invalid');
      expect(e.detail).toContain('syntax error');
    });

    it('warms its cache without changing the kernel, and still sees what another process changed after', async () => {
      const ns = s.makeNetns('a');
      const ctx = await openIn(ns);
      await ctx.run(
        'add table ip calico; add chain ip calico a; add set ip calico s { type ipv4_addr; flags interval; elements = { 198.18.0.1 }; }; add rule ip calico a ip saddr @s accept',
      );
      const before = runIn(ns, ['nft', '-a', 'list', 'ruleset']).out;
      await ctx.warmCache([{ family: 'ip', name: 'calico' }]);
      expect(runIn(ns, ['nft', '-a', 'list', 'ruleset']).out).toBe(before);
      // Another process adds a set after the warm-up: the next transaction must know it.
      expect(runIn(ns, ['nft', 'add set ip calico t { type ipv4_addr; }']).code).toBe(0);
      await ctx.run([add(rule(t, 'a', [ipSaddr(setRef('t')), drop()]))]);
      await ctx.warmCache([{ family: 'ip', name: 'calico' }]);
      await ctx.run('flush set ip calico s');
      expect(runIn(ns, ['nft', 'list', 'chain', 'ip', 'calico', 'a']).out).toContain('ip saddr @t drop');
      expect(runIn(ns, ['nft', 'list', 'set', 'ip', 'calico', 's']).out).not.toContain('198.18.0.1');
      const e = await failure(ctx.warmCache([{ family: 'ip', name: 'calico; flush ruleset' }]));
      expect(e.code).toBe('invalid');
      expect(runIn(ns, ['nft', 'list', 'chain', 'ip', 'calico', 'a']).out).toContain('@s accept');
    });

    it('times each libnftables call, and reports its worker heap and what malloc holds in the process', async () => {
      const ns = s.makeNetns('a');
      const ctx = await openIn(ns);
      const small = await ctx.run('add table ip calico');
      expect(small.runMs).toBeGreaterThan(0);
      const lines = ['add chain ip calico c'];
      for (let i = 0; i < 3000; i++) lines.push(`add rule ip calico c tcp dport ${i + 1} counter`);
      const large = await ctx.run(lines.join('\n'));
      expect(large.runMs).toBeGreaterThan(small.runMs!);
      const before = await ctx.memoryUsage();
      expect(before.workerHeapUsed).toBeGreaterThan(0);
      // malloc is counted for the whole process: 64 MiB that Node mallocs on this thread show.
      const big = Buffer.allocUnsafeSlow(64 << 20).fill(1);
      const after = await ctx.memoryUsage();
      expect(after.mallocInUse! - before.mallocInUse!).toBeGreaterThanOrEqual(60 << 20);
      expect(big[0]).toBe(1);
    });

    it("reads one chain's rule handles and comments, as nft -a lists them", async () => {
      const ns = s.makeNetns('a');
      const ctx = await openIn(ns);
      await ctx.run(
        [
          'add table ip calico',
          'add table ip6 calico',
          'add chain ip calico a',
          'add chain ip calico b',
          'add chain ip6 calico a',
          'add rule ip calico a tcp dport { 80, 443 } accept comment "cali:one"',
          'add rule ip calico a udp dport 53 accept',
          'add rule ip calico b drop comment "cali:other; a longer description"',
          'add rule ip calico a meta mark set mark | 0x10 return comment "cali:three"',
          'add rule ip6 calico a drop comment "cali:six"',
        ].join('\n'),
      );
      const listed = runIn(ns, ['nft', '-a', 'list', 'chain', 'ip', 'calico', 'a']).out;
      const handles = [...listed.matchAll(/# handle (\d+)/g)].map((m) => Number(m[1])).slice(1);
      expect(await ctx.ruleHandles('ip', 'calico', 'a')).toEqual([
        { handle: handles[0], comment: 'cali:one' },
        { handle: handles[1], comment: undefined },
        { handle: handles[2], comment: 'cali:three' },
      ]);
      expect(await ctx.ruleHandles('ip', 'calico', 'b')).toMatchObject([
        { comment: 'cali:other; a longer description' },
      ]);
      expect(await ctx.ruleHandles('ip6', 'calico', 'a')).toMatchObject([{ comment: 'cali:six' }]);
      // The kernel's dump of a chain or table that is not there is empty.
      expect(await ctx.ruleHandles('ip', 'calico', 'nosuch')).toEqual([]);
      expect(await ctx.ruleHandles('ip', 'nosuch', 'a')).toEqual([]);
      // A handle read this way deletes that rule.
      await ctx.run(`delete rule ip calico a handle ${handles[1]}`);
      expect((await ctx.ruleHandles('ip', 'calico', 'a')).map((r) => r.comment)).toEqual([
        'cali:one',
        'cali:three',
      ]);
    });

    it('reports opening failures by code', async () => {
      expect((await failure(NftContext.open({ netns: `${s.prefix}-nosuch` }))).code).toBe('not-found');
      expect((await failure(NftContext.open({ netns: '/etc/hostname' }))).code).toBe('invalid');
      expect((await failure(NftContext.open({ netns: '../x' }))).code).toBe('invalid');
      const lib = await failure(NftContext.open({ library: '/nonexistent/libnftables.so.1' }));
      expect(lib.code).toBe('unavailable');
      expect(lib.message).toContain('/nonexistent/libnftables.so.1');
      // A namespace path, as CNI passes it, works as well as a name.
      const ns = s.makeNetns('a');
      const ctx = await NftContext.open({ netns: `/run/netns/${ns}` });
      await ctx.run([add(table(t))]);
      await ctx.close();
      expect(cliRuleset(ns).tables.map((x) => x.name)).toEqual(['calico']);
      expect((await failure(ctx.run([add(table(t))]))).code).toBe('failed');
      expect((await failure(ctx.listTable('ip', 'calico'))).code).toBe('failed');
    });

    it('checks a batch without committing it in dry-run, and lists missing tables as not-found', async () => {
      const ns = s.makeNetns('a');
      const ctx = await openIn(ns);
      await ctx.run([add(table(t)), add(chain(t, 'a'))], { dryRun: true });
      expect(cliRuleset(ns).tables).toEqual([]);
      expect((await failure(ctx.run([add(chain(t, 'a'))], { dryRun: true }))).code).toBe('not-found');
      expect((await failure(ctx.listTable('ip', 'calico'))).code).toBe('not-found');
    });

    it('agrees with FakeNft on outcomes, error texts, handles and listings', async () => {
      const ns = s.makeNetns('a');
      const real = await openIn(ns);
      const fake = new FakeNft({ netns: ns });
      const o = tableRef('ip', 'other');
      const steps: NftCommand[][] = [
        [
          add(table(t)),
          add(chain(t, 'a')),
          add(chain(t, 'b')),
          add(chain(t, 'c')),
          add(chain(t, 'in', { type: 'filter', hook: 'input', prio: 0 })),
        ],
        [
          add(set(t, 's', 'ipv4_addr')),
          add(set(t, 'v', 'ipv4_addr', { flags: ['interval'] })),
          add(map(t, 'm', 'ifname', 'verdict')),
        ],
        [add(map(t, 'k', 'ipv4_addr', 'mark')), add(elements(t, 'k', [['198.18.0.1', 5]]))],
        [add(rule(t, 'a', [accept()])), add(rule(t, 'a', [drop()])), insert(rule(t, 'a', [returnVerdict()]))],
        // Rules 11, 9, 10 in chain a: `add` with a handle appends, `insert` goes before it.
        [add(rule(t, 'a', [counter()], { handle: 9 })), insert(rule(t, 'a', [log()], { handle: 10 }))],
        [
          add(rule(t, 'a', [log({ prefix: 'x' })], { index: 0 })),
          insert(rule(t, 'a', [setMark(1)], { index: 1 })),
        ],
        [
          add(rule(t, 'b', [tcpDport(anonSet([80, 443])), accept()])),
          add(rule(t, 'b', [ipSaddr(setRef('s')), jump('c')])),
        ],
        [
          add(
            elements(t, 'm', [
              ['cali1', jump('c')],
              ['cali2', drop()],
            ]),
          ),
          add(elements(t, 's', ['198.18.0.1', '198.18.0.2'])),
        ],
        [add(elements(t, 'v', [cidr('198.18.4.0/24'), cidr('198.18.5.5/32')]))],
        [replace(rule(t, 'a', [oifname('eth0'), accept()], { handle: 9 }))],
        [
          add(table(t)),
          add(chain(t, 'a')),
          add(elements(t, 's', ['198.18.0.1'])),
          add(elements(t, 'k', [['198.18.0.1', 5]])),
        ],
        [add(chain(t, 'in', { type: 'filter', hook: 'input', prio: 0, policy: 'drop' }))],
        // Failures, each leaving the state as it was.
        [create(table(t))],
        [create(chain(t, 'a'))],
        [create(elements(t, 's', ['198.18.0.1']))],
        [add(elements(t, 'k', [['198.18.0.1', 6]]))],
        [del(chain(t, 'c'))],
        [del(setByName(t, 's'))],
        // A loop is fine until a base chain reaches it.
        [add(rule(t, 'c', [jump('a')])), add(rule(t, 'a', [goto('c')]))],
        [add(rule(t, 'in', [jump('a')]))],
        [add(rule(t, 'a', [jump('in')]))],
        [add(rule(t, 'nope', [accept()]))],
        [add(rule(t, 'a', [ipSaddr(setRef('nope'))]))],
        [add(elements(t, 's', ['2001:db8::1']))],
        [add(elements(t, 's', [cidr('198.18.0.0/24')]))],
        [del(elements(t, 's', ['198.18.9.9']))],
        [del(elements(t, 'v', [cidr('198.18.9.0/24')]))],
        [del(ruleRef(t, 'a', 999))],
        [insert(rule(t, 'a', [accept()], { handle: 999 }))],
        [del(table(o))],
        [add(chain(o, 'x'))],
        [add(table(o)), create(table(t))],
        // The kernel numbers everything in a batch it rejects, also after the failing command.
        [add(chain(t, 'x1')), add(rule(t, 'a', [accept()])), create(chain(t, 'a')), add(set(t, 'z', 'mark'))],
        // And back to successes, numbering after what the failures used up.
        [add(table(o)), add(chain(o, 'x')), add(rule(o, 'x', [accept()]))],
        [flush(table(t)), del(chain(t, 'c')), del(setByName(t, 's'))],
        [flush(setByName(t, 'v')), del(elements(t, 'k', [['198.18.0.1', 5]]))],
        [add(rule(t, 'a', [ctState('established', 'related'), accept()]))],
        [del(chain(t, 'b'))],
        [del(table(o))],
      ];
      // Half the batches go as command lists, half as Transactions (what Felix sends).
      const outcome = async (c: NftContext | FakeNft, batch: NftCommand[], i: number) => {
        try {
          const r = await c.run(i % 2 === 0 ? batch : Transaction.of(batch), { echo: true });
          return {
            ok: true,
            items: structuredClone(r.items) as Record<string, Record<string, Record<string, unknown>>>[],
          };
        } catch (e) {
          if (!isNftablesError(e)) throw e;
          // nft adds spelling suggestions ("; did you mean set ‘s’ in table ip ‘calico’?") that the
          // fake does not make up.
          return { ok: false, code: e.code, detail: e.detail.replace(/; did you mean [^\n]*\?/, '') };
        }
      };
      for (const [i, batch] of steps.entries()) {
        const [r, f] = [await outcome(real, batch, i), await outcome(fake, batch, i)];
        // libnftables 1.0.6 now and then echoes an added object without its handle (seen for a
        // rule closing a jump loop, and a table re-added after a failed batch); the listing below
        // still checks those handles.
        r.items?.forEach((item, k) => {
          const [verb, body] = Object.entries(item)[0]!;
          const [kind, real] = Object.entries(body)[0]!;
          const faked = f.items?.[k]?.[verb]?.[kind];
          if (real.handle === undefined && faked) delete faked.handle;
        });
        expect({ step: i, ...f }, `step ${i}`).toEqual({ step: i, ...r });
        expect(canonical(fake.dump()), `listing after step ${i}`).toEqual(canonical(cliRuleset(ns)));
      }
    });

    it('runs a Transaction as one batch, and one built with a mistake not at all, as FakeNft does', async () => {
      const ns = s.makeNetns('tx');
      const real = await openIn(ns);
      const fake = new FakeNft({ netns: ns });
      const good = new Transaction()
        .add(table(t))
        .add(chain(t, 'in', { type: 'filter', hook: 'input', prio: 0 }))
        .add(chain(t, 'a'))
        .add(set(t, 's', 'ipv4_addr', { elem: ['198.18.0.1'] }))
        .add(rule(t, 'a', [ipSaddr(setRef('s')), counter(), accept()], { comment: 'x' }))
        .add(rule(t, 'in', [jump('a')]));
      for (const c of [real, fake]) await c.run(good);
      expect(canonical(fake.dump())).toEqual(canonical(cliRuleset(ns)));
      const before = cliRulesetText(ns);
      // The rule before the mistake is valid: nothing of the batch may reach the kernel.
      const bad = new Transaction().add(rule(t, 'a', [drop()])).delete(rule(t, 'a', [drop()]));
      const errors = [await failure(real.run(bad)), await failure(fake.run(bad))];
      for (const e of errors) {
        expect(e.code).toBe('invalid');
        expect(e.commandIndex).toBe(1);
        expect(e.message).toBe('transaction command 1: delete: rule has no handle');
      }
      expect(cliRulesetText(ns)).toBe(before);
      expect(canonical(fake.dump())).toEqual(canonical(cliRuleset(ns)));
    });
  },
);
