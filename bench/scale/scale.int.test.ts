// The scale bench, small: 10 nodes over 200 endpoints and 20 policies, with and without Typha.
// Asserted are the harness's own invariants, never its timings: every node reached in-sync and
// applied every policy change, etcd served one watch per source through Typha (its sources, 17 on
// etcd) and one per node and Felix source without it (10 × 13).
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { etcdAvailable } from '@calico-ts/datastore/testing';
import { expect, test } from 'vitest';

const BENCH = join(import.meta.dirname, 'scale.bench.mjs');
const FELIX_SOURCES = 13;

function runBench(argv: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BENCH, ...argv], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (b) => {
      output += b;
    });
    child.stderr.on('data', (b) => {
      output += b;
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

interface ModeResult {
  mode: string;
  nodes: number;
  synced: number;
  watchers: number;
  sources?: number;
  changes: { nodes: number }[];
  typhaClients?: number;
}

test.skipIf(!etcdAvailable())(
  '10 nodes with and without Typha: all converge, one watch per source through Typha',
  async () => {
    const dir = await mkdtemp(join(tmpdir(), 'scale-bench-test-'));
    try {
      const out = join(dir, 'scale.json');
      const r = await runBench([
        '--nodes',
        '10',
        '--endpoints',
        '200',
        '--policies',
        '20',
        '--changes',
        '2',
        '--per-process',
        '5',
        '--tls',
        '--out',
        out,
      ]);
      expect(r.code, r.output).toBe(0);
      const { results } = JSON.parse(await readFile(out, 'utf8')) as { results: ModeResult[] };
      expect(results.map((m) => m.mode)).toEqual(['direct', 'typha']);
      for (const m of results) {
        expect(m.synced, m.mode).toBe(10);
        expect(
          m.changes.map((c) => c.nodes),
          m.mode,
        ).toEqual([10, 10]);
      }
      const [direct, typha] = results as [ModeResult, ModeResult];
      expect(direct.watchers).toBe(10 * FELIX_SOURCES);
      expect(typha.sources).toBe(17);
      expect(typha.watchers).toBe(typha.sources);
      expect(typha.typhaClients).toBe(10);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  },
  600_000,
);
