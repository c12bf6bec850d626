/**
 * `lab bench`: a few figures measured on the running lab, with throw-away pods in namespace
 * `lab-bench`: how long a pod takes to create (netns, CNI ADD, endpoint labels, listener), how long
 * until every other node's kernel routes a node's first block (BGP convergence, bgp mode), and
 * pod-to-pod TCP connect times on one node and across nodes. The pods are deleted afterwards.
 */
import { spawnSync } from 'node:child_process';
import type { Output } from './cli.js';
import { measureConnectivity } from './observe.js';
import { usesBird } from './plan.js';
import type { Artifacts } from './prereqs.js';
import { Progress } from './progress.js';
import { table } from './render.js';
import type { LabState, PodRecord } from './state.js';
import { nsCreate, podCreate, podDelete } from './workloads.js';

const NAMESPACE = 'lab-bench';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface BenchReport {
  readonly pods: number;
  readonly podCreateMs: readonly number[];
  /** Per node: ms from the start of its first pod's creation until every other node routes the block. */
  readonly routeConvergenceMs: Readonly<Record<string, number | null>>;
  readonly connectMs: { readonly sameNode: readonly number[]; readonly crossNode: readonly number[] };
  readonly unreachable: number;
}

export function median(xs: readonly number[]): number | undefined {
  if (xs.length === 0) return undefined;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function blockOf(ip: string): string {
  const o = ip.split('.').map(Number);
  return `${o[0]}.${o[1]}.${o[2]}.${o[3]! & 0xc0}/26`;
}

function routed(netns: string, dst: string): boolean {
  const r = spawnSync('ip', ['-n', netns, '-j', 'route', 'show', dst], { encoding: 'utf8' });
  try {
    return (JSON.parse(r.stdout) as { protocol?: string }[]).some((x) => x.protocol === 'bird');
  } catch {
    return false;
  }
}

export async function labBench(
  state: LabState,
  arts: Artifacts,
  pods: number,
  out: Progress,
): Promise<BenchReport> {
  const quiet = new Progress(() => {});
  const nodes = state.plan.nodes;
  await nsCreate(state, NAMESPACE, {}, quiet);
  const made: PodRecord[] = [];
  const createMs: number[] = [];
  const convergence: Record<string, number | null> = {};
  try {
    for (let i = 0; i < pods; i++) {
      const node = nodes[i % nodes.length]!;
      const t0 = performance.now();
      const pod = await podCreate(
        state,
        arts,
        {
          namespace: NAMESPACE,
          name: `bench-${i + 1}`,
          node: node.name,
          labels: { app: 'bench' },
          ports: [{ port: 80 }],
        },
        quiet,
      );
      createMs.push(performance.now() - t0);
      made.push(pod);
      out.step(`pod ${NAMESPACE}/${pod.name} on ${node.name}: ${Math.round(createMs.at(-1)!)} ms`);
      if (usesBird(state.mode) && !(node.name in convergence) && nodes.length > 1) {
        const others = nodes.filter((n) => n.name !== node.name);
        const block = blockOf(pod.ip!);
        const end = t0 + 30_000;
        while (performance.now() < end && !others.every((n) => routed(n.netns, block))) await sleep(20);
        convergence[node.name] = others.every((n) => routed(n.netns, block)) ? performance.now() - t0 : null;
      }
    }
    const report = await measureConnectivity({ ...state, pods: made }, arts, {
      protocol: 'tcp',
      port: 80,
      timeoutMs: 2000,
    });
    const nodeOf = new Map(made.map((p) => [`${p.namespace}/${p.name}`, p.node]));
    const same: number[] = [];
    const cross: number[] = [];
    for (const c of report.cells.filter((x) => x.reachable)) {
      (nodeOf.get(c.from) === nodeOf.get(c.to) ? same : cross).push(c.ms);
    }
    return {
      pods,
      podCreateMs: createMs,
      routeConvergenceMs: convergence,
      connectMs: { sameNode: same, crossNode: cross },
      unreachable: report.unreachable,
    };
  } finally {
    for (const p of made) await podDelete(state, p.namespace, p.name, quiet).catch(() => {});
  }
}

export function renderBench(r: BenchReport, output: Output): string {
  if (output === 'json') return JSON.stringify(r, null, 2);
  const fmt = (v: number | undefined | null) => (v === undefined || v === null ? '-' : `${v.toFixed(1)} ms`);
  const conv = Object.values(r.routeConvergenceMs);
  return (
    table(
      ['MEASURE', 'MEDIAN', 'MIN', 'MAX', 'SAMPLES'],
      [
        ['pod create (Pod, CNI ADD, listener, status)', r.podCreateMs],
        ['first block routed on every other node (BGP)', conv.filter((x): x is number => x !== null)],
        ['TCP connect + reply, same node', r.connectMs.sameNode],
        ['TCP connect + reply, across nodes', r.connectMs.crossNode],
      ].map(([label, xs]) => {
        const v = xs as number[];
        return [
          label as string,
          fmt(median(v)),
          fmt(v.length ? Math.min(...v) : undefined),
          fmt(v.length ? Math.max(...v) : undefined),
          String(v.length),
        ];
      }),
    ) + (r.unreachable > 0 ? `\n${r.unreachable} pairs unreachable` : '')
  );
}
