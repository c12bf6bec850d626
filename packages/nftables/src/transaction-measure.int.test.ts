/**
 * A micro-measure, printed and never asserted: ~1000 rules applied in one transaction through
 * NftContext (JSON, and the same rules as nft text, through libnftables on a worker thread) against `nft -f` of the same rules as
 * nft text from a file (a process per apply, as a script would do it), and `nft -j -f` of the same
 * JSON. Each
 * run starts from an empty namespace ruleset. What is asserted is only that every way programmed
 * the same 1000 rules.
 */
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  accept,
  add,
  chain,
  commandsDocument,
  counter,
  flushRuleset,
  ipSaddr,
  rule,
  table,
  tableRef,
  tcpDport,
} from './index.js';
import type { NftCommand } from './json/types.js';
import { NftContext } from './nft-context.js';
import { cliRuleset, inCI, missingPrerequisite, runIn, Scratch } from './testing-internal/privileged.js';

const missing = missingPrerequisite(['ip', 'nft', 'nsenter']);
const RULES = 1000;
const ROUNDS = 5;
const t = tableRef('ip', 'calico');

function addr(i: number): string {
  return `198.18.${Math.floor(i / 250)}.${(i % 250) + 1}`;
}

function batchJson(): NftCommand[] {
  const cmds: NftCommand[] = [
    add(table(t)),
    add(chain(t, 'filter-FORWARD', { type: 'filter', hook: 'forward', prio: 0, policy: 'accept' })),
  ];
  for (let i = 0; i < RULES; i++) {
    cmds.push(add(rule(t, 'filter-FORWARD', [ipSaddr(addr(i)), tcpDport(1000 + i), counter(), accept()])));
  }
  return cmds;
}

function batchText(): string {
  const lines = [
    'add table ip calico',
    'add chain ip calico filter-FORWARD { type filter hook forward priority 0; policy accept; }',
  ];
  for (let i = 0; i < RULES; i++) {
    lines.push(`add rule ip calico filter-FORWARD ip saddr ${addr(i)} tcp dport ${1000 + i} counter accept`);
  }
  return `${lines.join('\n')}\n`;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

describe.skipIf(missing !== undefined && !inCI)('one transaction of ~1000 rules (root, measured)', () => {
  let s: Scratch;
  beforeAll(() => {
    if (missing) throw new Error(`privileged test prerequisite missing: ${missing}`);
  });
  beforeEach(() => {
    s = new Scratch();
  });
  afterEach(() => {
    s.cleanup();
  });

  it('prints libnftables through NftContext against nft -f of the same rules', async () => {
    const ns = s.makeNetns('m');
    const openStart = performance.now();
    const ctx = await NftContext.open({ netns: ns });
    const openMs = performance.now() - openStart;
    try {
      const json = batchJson();
      const text = batchText();
      const jsonText = commandsDocument(json);
      const textFile = s.file('rules.nft', text);
      const jsonFile = s.file('rules.json', jsonText);
      const ruleCount = () => cliRuleset(ns).tables[0]?.chains[0]?.rules.length ?? 0;
      const times = {
        context: [] as number[],
        contextText: [] as number[],
        nftText: [] as number[],
        nftJson: [] as number[],
      };

      for (let round = 0; round < ROUNDS; round++) {
        await ctx.run([flushRuleset()]);
        let t0 = performance.now();
        await ctx.run(json);
        times.context.push(performance.now() - t0);
        expect(ruleCount()).toBe(RULES);

        await ctx.run([flushRuleset()]);
        t0 = performance.now();
        await ctx.run(text);
        times.contextText.push(performance.now() - t0);
        expect(ruleCount()).toBe(RULES);

        await ctx.run([flushRuleset()]);
        t0 = performance.now();
        const r1 = runIn(ns, ['nft', '-f', textFile]);
        times.nftText.push(performance.now() - t0);
        expect(r1.code, r1.err).toBe(0);
        expect(ruleCount()).toBe(RULES);

        await ctx.run([flushRuleset()]);
        t0 = performance.now();
        const r2 = runIn(ns, ['nft', '-j', '-f', jsonFile]);
        times.nftJson.push(performance.now() - t0);
        expect(r2.code, r2.err).toBe(0);
        expect(ruleCount()).toBe(RULES);
      }
      const ctxMs = median(times.context);
      const ctxTextMs = median(times.contextText);
      const textMs = median(times.nftText);
      const jsonMs = median(times.nftJson);
      const fmt = (x: number) => x.toFixed(1).padStart(7);
      console.log(
        [
          `${RULES} rules in one transaction, median of ${ROUNDS} (ms):`,
          `  NftContext.run (JSON, worker thread) ${fmt(ctxMs)}`,
          `  NftContext.run (nft text)            ${fmt(ctxTextMs)}   ratio ${(ctxTextMs / ctxMs).toFixed(2)}x`,
          `  nft -f  (text, one process)          ${fmt(textMs)}   ratio ${(textMs / ctxMs).toFixed(2)}x`,
          `  nft -j -f (JSON, one process)        ${fmt(jsonMs)}   ratio ${(jsonMs / ctxMs).toFixed(2)}x`,
          `  NftContext.open (worker + setns)     ${fmt(openMs)}`,
          `  JSON batch ${(jsonText.length / 1024).toFixed(0)} KiB, text batch ${(text.length / 1024).toFixed(0)} KiB`,
        ].join('\n'),
      );
    } finally {
      await ctx.close();
    }
  });
});
