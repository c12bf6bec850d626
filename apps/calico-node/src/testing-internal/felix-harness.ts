/**
 * The start-up the Felix lab tests share (see felix-lab.ts for the topology): their
 * prerequisites, the bundled `calico-cni` and `calico-node`, and `calico-node -felix` started in
 * the node namespace with its log collected.
 */
import { type ChildProcess, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { etcdAvailable } from '@calico-ts/datastore/testing';
import { describe, it } from 'vitest';
import { bundleFelix, FELIX_ARGS } from './felix-executable.js';
import { collectLines, type FelixLab, logFile } from './felix-lab.js';

/**
 * What a lab test lacks to run: root, etcd, and each of `tools` not on the PATH. When something
 * is missing, registers a suite named `suite` whose one test fails under `CI=true` (there a
 * missing prerequisite is a failure, never a skip) and is skipped elsewhere.
 */
export function labPrerequisites(suite: string, tools: readonly string[]): string[] {
  const missing: string[] = [];
  if (process.getuid?.() !== 0) missing.push('root');
  if (!etcdAvailable()) missing.push('etcd');
  for (const tool of tools) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) missing.push(tool);
  }
  if (missing.length > 0) {
    describe(suite, () => {
      it.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
        throw new Error(`missing prerequisites: ${missing.join(', ')}`);
      });
    });
  }
  return missing;
}

/** Resolves once `f` is true, checking every `everyMs`; throws after `ms`. */
export async function eventually(
  what: string,
  f: () => Promise<boolean> | boolean,
  ms = 15_000,
  everyMs = 100,
): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    if (await f()) return;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting until ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * Bundles the CNI plugin into the lab's temp dir and Felix (`calico-node -felix`, see
 * felix-executable.ts) into calico-node's bin/.
 */
export async function bundleLabBinaries(lab: FelixLab): Promise<{ cniBin: string; felixBin: string }> {
  // @ts-expect-error: a plain .mjs build script without type declarations
  const { bundle: bundleCni } = await import('../../../../packages/cni-plugin/scripts/bundle.mjs');
  const cniBin = join(lab.tmp, 'cni-bin');
  await bundleCni(cniBin);
  const felixBin: string = await bundleFelix();
  return { cniBin, felixBin };
}

/** A running Felix (`calico-node -felix`) and the lines it has written so far. */
export interface FelixProcess {
  readonly child: ChildProcess;
  readonly lines: string[];
}

/**
 * Starts `felixBin` in the lab's node namespace against the lab's etcd, with its health server on
 * 127.0.0.1:`healthPort` and its MTU file in the lab's temp dir; `env` adds to that (or overrides
 * it). Its output is collected into `lines` and `felix.log` in the lab's temp dir.
 */
export function startLabFelix(
  lab: FelixLab,
  felixBin: string,
  healthPort: number,
  env: Record<string, string> = {},
): FelixProcess {
  const child = lab.spawnIn(lab.node, felixBin, [...FELIX_ARGS], {
    PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin',
    FELIX_FELIXHOSTNAME: lab.nodeName,
    FELIX_ETCDENDPOINTS: 'http://127.0.0.1:2379',
    FELIX_HEALTHENABLED: 'true',
    FELIX_HEALTHHOST: '127.0.0.1',
    FELIX_HEALTHPORT: String(healthPort),
    FELIX_MTUFILEPATH: join(lab.tmp, 'mtu'),
    ...env,
  });
  const lines: string[] = [];
  collectLines(child, lines, logFile(join(lab.tmp, 'felix.log')));
  return { child, lines };
}
