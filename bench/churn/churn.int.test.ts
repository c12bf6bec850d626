// The churn bench, small: on etcd 10 hosts for 30 s, on the Kubernetes datastore 5 hosts for 30 s
// (longer if a fault kind has not happened by then), every fault of the chaos loop at least once,
// and what the bench exists to show: no address held by two live pods at any time, nothing left
// after `calicoctl ipam check` and release.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { kubeApiServerAvailable } from '@calico-ts/datastore/testing';
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

/** The bench's report: every fault happened, pods were made, no duplicate and no leak. */
function expectClean(r: { code: number | null; stdout: string; stderr: string }, kdd: boolean): void {
  const out = r.stdout;
  const context = `${out}\n${r.stderr.slice(-3000)}`;
  // Every fault happened (the bench goes on until each kind has).
  const chaos =
    /chaos: plugin services SIGKILLed (\d+), etcd SIGKILLed and restarted (\d+), etcd cut off 10 s (\d+)(?:, API server SIGKILLed and restarted (\d+))?/.exec(
      out,
    );
  expect(chaos, context).not.toBeNull();
  expect(Number(chaos![1]), context).toBeGreaterThan(0);
  expect(Number(chaos![2]), context).toBeGreaterThan(0);
  expect(Number(chaos![3]), context).toBeGreaterThan(0);
  if (kdd) expect(Number(chaos![4]), context).toBeGreaterThan(0);
  else expect(chaos![4], context).toBeUndefined();
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
}

test('etcd: 10 hosts of CNI churn under SIGKILLs, etcd restarts and link cuts: no duplicate, no leak', async () => {
  expectClean(await runBench(['--hosts', '10', '--duration', '30']), false);
}, 300_000);

// Under CI=true `kubeApiServerAvailable()` is true: a missing kube-apiserver fails the test there.
test.skipIf(!kubeApiServerAvailable())(
  'Kubernetes datastore: 5 hosts of churn, also with API server restarts: no duplicate, no leak',
  async () => {
    expectClean(await runBench(['--datastore', 'kubernetes', '--hosts', '5', '--duration', '30']), true);
  },
  480_000,
);
