// The churn bench, small: 10 hosts for 30 s (longer if a fault kind has not happened by then), every
// fault of the chaos loop at least once but the etcd link cut, and what the bench exists to show: no
// address held by two live pods at any time, nothing left after `calicoctl ipam check` and release.
// The link cut is left out here because it is known to leave a WorkloadEndpoint behind in about one
// run in ten (bench/churn/README.md, "Open"): a known bug, reported, not a flake to retry.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { expect, test } from 'vitest';

const BENCH = join(import.meta.dirname, 'churn.bench.mjs');

function runBench(argv: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BENCH, ...argv], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b) => {
      stdout += b;
    });
    child.stderr.on('data', (b) => {
      stderr += b;
    });
    child.once('error', reject);
    // The bench cleans up after itself on SIGTERM (namespaces, processes, temp dir).
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

test('10 hosts of CNI churn under SIGKILLs and etcd restarts: no duplicate, no leak', async () => {
  const r = await runBench(['--hosts', '10', '--duration', '30', '--no-link-cut']);
  const out = r.stdout;
  const context = `${out}\n${r.stderr.slice(-3000)}`;
  // Every fault happened (the bench goes on until each kind has).
  const chaos =
    /chaos: plugin services SIGKILLed (\d+), etcd SIGKILLed and restarted (\d+), etcd cut off 10 s (\d+)/.exec(
      out,
    );
  expect(chaos, context).not.toBeNull();
  expect(Number(chaos![1]), context).toBeGreaterThan(0);
  expect(Number(chaos![2]), context).toBeGreaterThan(0);
  expect(Number(chaos![3]), context).toBe(0);
  const killed = /killed mid-ADD (\d+), mid-DEL (\d+)/.exec(out);
  expect(killed, context).not.toBeNull();
  expect(Number(killed![1]), context).toBeGreaterThan(0);
  expect(Number(killed![2]), context).toBeGreaterThan(0);
  // Pods were made and torn down.
  const adds = /ADD: (\d+) \((\d+) ok\)/.exec(out);
  expect(Number(adds?.[2]), context).toBeGreaterThan(0);
  // What the bench is for; it ends with these two lines.
  const lines = out.trimEnd().split('\n');
  expect(lines.slice(-2), context).toEqual(['duplicates: 0', 'leaked after GC: 0']);
  expect(r.code, context).toBe(0);
}, 240_000);
