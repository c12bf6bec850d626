/**
 * What the BGP scenarios read back from a running lab, as a user could: BIRD's sessions on a
 * node's control socket, the block affinities in the lab's etcd, `lab status -o json`, and
 * resources written with `lab calicoctl apply -f`.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BirdControlClient } from '@calico-ts/bird-bridge';
import type { LabDriver } from './lab-driver.js';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `fn` until it returns something truthy; throws with `what` and the last value after `ms`. */
export async function until<T>(what: string, fn: () => Promise<T> | T, ms = 30_000, every = 250): Promise<T> {
  const end = Date.now() + ms;
  let last: T | undefined;
  let lastError: unknown;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      lastError = e;
    }
    if (Date.now() > end) {
      throw new Error(
        `${what}: not within ${ms} ms (last: ${JSON.stringify(last)}${lastError ? `, error: ${String(lastError)}` : ''})`,
      );
    }
    await sleep(every);
  }
}

export interface Session {
  readonly name: string;
  /** BIRD's protocol state: `up`, `start`, … */
  readonly state: string;
  /** First word of the info column: `Established`, `Active`, `Connect`, … */
  readonly bgp: string;
}

/** Every BGP protocol of the node's BIRD, sorted by name. */
export async function bgpSessions(runDir: string): Promise<Session[]> {
  const rows = await new BirdControlClient(join(runDir, 'bird.ctl')).showProtocols();
  return rows
    .filter((r) => r.proto === 'BGP')
    .map((r) => ({ name: r.name, state: r.state, bgp: r.info.split(/\s+/)[0] ?? '' }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** `Mesh_198_18_0_12 Established`, one string per session, for readable comparisons. */
export function sessionLines(sessions: readonly Session[]): string[] {
  return sessions.map((s) => `${s.name} ${s.bgp}`);
}

/** The `Session:` words of `show protocols all "<name>"`, e.g. `internal multihop route-reflector AS4`. */
export async function sessionWords(runDir: string, protocol: string): Promise<string> {
  const r = await new BirdControlClient(join(runDir, 'bird.ctl')).command(`show protocols all "${protocol}"`);
  const line = r.lines.map((l) => l.text).find((t) => /^\s*Session:/.test(t));
  return line?.replace(/^\s*Session:\s*/, '').trim() ?? '';
}

/** `lab calicoctl apply -f` of a YAML text (written to `dir`). */
export async function applyYaml(lab: LabDriver, dir: string, name: string, yaml: string): Promise<void> {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, yaml);
  await lab.ok('calicoctl', 'apply', '-f', file);
}

/**
 * Block affinities as stored in the lab's etcd (`/calico/ipam/v2/host/<node>/ipv4/block/<cidr>`),
 * read with etcdctl inside the lab's etcd namespace: node name → CIDRs, sorted.
 */
export function affineBlocks(etcdNetns: string, etcdUrl: string): Map<string, string[]> {
  const r = spawnSync(
    'ip',
    [
      'netns',
      'exec',
      etcdNetns,
      'etcdctl',
      `--endpoints=${etcdUrl}`,
      'get',
      '--prefix',
      '/calico/ipam/v2/host/',
      '--keys-only',
    ],
    { encoding: 'utf8', env: { ...process.env, ETCDCTL_API: '3' } },
  );
  if (r.status !== 0) throw new Error(`etcdctl get: ${r.stderr}`);
  const out = new Map<string, string[]>();
  for (const key of r.stdout.split('\n').filter((l) => l !== '')) {
    const m = /^\/calico\/ipam\/v2\/host\/([^/]+)\/ipv4\/block\/(.+)-(\d+)$/.exec(key);
    if (!m) continue;
    out.set(m[1]!, [...(out.get(m[1]!) ?? []), `${m[2]}/${m[3]}`].sort());
  }
  return out;
}

/**
 * Block affinities where the lab's datastore keeps them, node name → CIDRs (sorted): on etcd the
 * keys above, on the Kubernetes datastore the BlockAffinity CRDs read with `lab kubectl`. Only
 * confirmed affinities (a released one is being deleted).
 */
export async function blockAffinities(lab: LabDriver): Promise<Map<string, string[]>> {
  const s = lab.state();
  if (s.plan.datastore !== 'kubernetes') return affineBlocks(s.plan.etcdNetns, s.plan.etcdUrl);
  const r = await lab.ok('kubectl', 'get', 'blockaffinities.crd.projectcalico.org', '-o', 'json');
  const items = (
    JSON.parse(r.stdout) as {
      items: { spec: { node: string; cidr: string; state?: string; deleted?: string } }[];
    }
  ).items;
  const out = new Map<string, string[]>();
  for (const { spec } of items) {
    if (spec.state !== 'confirmed' || spec.deleted === 'true') continue;
    out.set(spec.node, [...(out.get(spec.node) ?? []), spec.cidr].sort());
  }
  return out;
}

export interface StatusPeer {
  protocol: string;
  peerIP: string;
  node?: string;
  type: string;
  bgpState: string;
  rrClient: boolean;
  session?: string;
}

export interface LabStatusJson {
  nodes: {
    name: string;
    ip: string;
    ready: boolean;
    calicoNode: { pid?: number; running: boolean };
    bird?: { pid?: number; running: boolean };
    peers?: StatusPeer[];
    bgpRole?: string;
  }[];
}

export async function labStatus(lab: LabDriver): Promise<{ json: LabStatusJson; table: string }> {
  const json = JSON.parse((await lab.ok('status', '-o', 'json')).stdout) as LabStatusJson;
  const table = (await lab.ok('status')).stdout;
  return { json, table };
}
