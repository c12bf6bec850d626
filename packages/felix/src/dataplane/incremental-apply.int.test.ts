/**
 * A change costs what it changes, against the real libnftables and kernel in a throw-away network
 * namespace: the same change is made on a node with N unrelated policies and on one with 2N, and
 * the nftables commands of its transaction are compared (counts, never times). What the change
 * did is checked in the kernel's own listing. Needs root, ip, nft.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { Rule } from '@calico-ts/api';
import { type NftCommand, NftContext, Transaction } from '@calico-ts/nftables';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CalcGraph } from '../calc/calc-graph.js';
import { gnp, pool, profile, wep } from '../calc/testing-internal/resources.js';
import type { CalcResource, CalcUpdate } from '../calc/types.js';
import { DEFAULT_RULES_CONFIG } from '../rules/config.js';
import { IncrementalRenderer } from '../rules/incremental-renderer.js';
import { NftablesDataplane } from './nftables-dataplane.js';

function missing(): string | undefined {
  if (process.getuid?.() !== 0) return 'root';
  for (const t of ['ip', 'nft', 'nsenter'])
    if (spawnSync('sh', ['-c', `command -v ${t}`]).status !== 0) return t;
  return undefined;
}
const why = missing();
if (why !== undefined && process.env.CI === 'true') {
  throw new Error(`incremental-apply.int.test needs ${why} (CI=true: prerequisites are required)`);
}

const PODS = 8;
/** A pod of app0, which only policy 0 selects. */
const NEW_POD = PODS;

/** Pods 0, 4, 8… are app0, the others app1–app3. */
function pod(i: number, role = `r${i % 3}`): CalcResource {
  return wep('a', `pod${i}`, {
    labels: { app: `app${i % 4}`, role },
    profiles: ['kns.a'],
    ips: [`198.19.0.${i + 1}/32`],
    iface: `calipod${i}`,
  });
}

function rules(p: number, extra: boolean, noEgress = false): { ingress: Rule[]; egress: Rule[] } {
  const ingress: Rule[] = [
    {
      action: 'Allow',
      protocol: 'TCP',
      source: { selector: `role == 'r${p % 3}'` },
      destination: { ports: [80 + p] },
    },
    { action: 'Deny', source: { nets: [`198.18.${p % 250}.0/24`] } },
  ];
  if (extra) ingress.push({ action: 'Allow', protocol: 'TCP', destination: { ports: [9999] } });
  const egress: Rule[] = [{ action: 'Allow', protocol: 'UDP', destination: { ports: [53] } }];
  return { ingress, egress: noEgress ? [] : egress };
}

/**
 * Policy 0 selects the pods of app0; the others, the "unrelated" ones, select the other pods (so
 * they are active and rendered) but never a pod a test adds or relabels.
 */
function policy(p: number, extra = false, noEgress = false): CalcResource {
  return gnp(`default.pol-${String(p).padStart(3, '0')}`, {
    order: 100 + p,
    selector: p === 0 ? "app == 'app0'" : `app == 'app${1 + (p % 3)}'`,
    types: ['Ingress', 'Egress'],
    ...rules(p, extra, noEgress),
  });
}

/** Every command of each transaction the dataplane ran, in order. */
class Counting {
  readonly batches: NftCommand[][] = [];
  constructor(private readonly inner: NftContext) {}
  run(commands: Parameters<NftContext['run']>[0], opts?: Parameters<NftContext['run']>[1]) {
    if (commands instanceof Transaction) this.batches.push([...commands.commands()]);
    return this.inner.run(commands, opts);
  }
  listRuleset() {
    return this.inner.listRuleset();
  }
  ruleHandles(...a: Parameters<NftContext['ruleHandles']>) {
    return this.inner.ruleHandles(...a);
  }
  listTable(...a: Parameters<NftContext['listTable']>) {
    return this.inner.listTable(...a);
  }
  close() {
    return this.inner.close();
  }
}

interface Node {
  readonly graph: CalcGraph;
  readonly renderer: IncrementalRenderer;
  readonly dp: NftablesDataplane;
  readonly nft: Counting;
}

async function startNode(ctx: NftContext, policies: number): Promise<Node> {
  const nft = new Counting(ctx);
  const graph = new CalcGraph({ hostname: 'node1' });
  const renderer = new IncrementalRenderer(DEFAULT_RULES_CONFIG);
  const dp = new NftablesDataplane({ nft });
  graph.onUpdate({ kind: 'set', resource: profile('kns.a', { ingress: [{ action: 'Allow' }] }) });
  graph.onUpdate({ kind: 'set', resource: pool('p', '198.19.0.0/16', true) });
  for (let i = 0; i < PODS; i++) graph.onUpdate({ kind: 'set', resource: pod(i) });
  for (let p = 0; p < policies; p++) graph.onUpdate({ kind: 'set', resource: policy(p) });
  graph.onUpdate({ kind: 'in-sync' });
  renderer.onUpdate(graph.flush());
  expect((await dp.apply(renderer.desired(), renderer.render())).mode).toBe('resync');
  return { graph, renderer, dp, nft };
}

/** One batch of updates through the pipeline; the commands of its one transaction. */
async function change(n: Node, updates: CalcUpdate[]): Promise<NftCommand[]> {
  for (const u of updates) n.graph.onUpdate(u);
  n.renderer.onUpdate(n.graph.flush());
  const before = n.nft.batches.length;
  const r = await n.dp.apply(n.renderer.desired(), n.renderer.render());
  expect(r.mode).toBe('incremental');
  expect(n.nft.batches.length - before).toBe(r.commands > 0 ? 1 : 0);
  return r.commands > 0 ? n.nft.batches.at(-1)! : [];
}

/** A command's verb and object kind, e.g. `add rule`, `flush set`. */
const shapes = (cmds: NftCommand[]) =>
  cmds.map((c) => {
    const [verb, body] = Object.entries(c)[0]! as [string, Record<string, unknown>];
    return `${verb} ${Object.keys(body)[0]}`;
  });

describe.skipIf(why !== undefined)('incremental nftables programming, in a real network namespace', () => {
  const namespaces: string[] = [];
  const contexts: NftContext[] = [];
  const nftIn = (ns: string, args: string[]) =>
    execFileSync('nsenter', [`--net=/run/netns/${ns}`, 'nft', ...args], { encoding: 'utf8' });

  async function freshNode(policies: number): Promise<{ ns: string; node: Node }> {
    const ns = `felixinc-${randomBytes(3).toString('hex')}`;
    execFileSync('ip', ['netns', 'add', ns]);
    namespaces.push(ns);
    const ctx = await NftContext.open({ netns: ns });
    contexts.push(ctx);
    return { ns, node: await startNode(ctx, policies) };
  }

  let small: { ns: string; node: Node };
  let large: { ns: string; node: Node };
  beforeAll(async () => {
    small = await freshNode(12);
    large = await freshNode(24);
  }, 120_000);
  afterAll(async () => {
    for (const c of contexts) await c.close().catch(() => {});
    for (const ns of namespaces) spawnSync('ip', ['netns', 'del', ns]);
  });

  it('adds one rule to one policy with the same commands whatever the number of unrelated policies', async () => {
    const a = await change(small.node, [{ kind: 'set', resource: policy(0, true) }]);
    const b = await change(large.node, [{ kind: 'set', resource: policy(0, true) }]);
    // The rule goes at the end of policy 0's inbound chain: that one rule is appended, in both
    // families, and nothing else is touched.
    expect(shapes(a)).toEqual(['add rule', 'add rule']);
    expect(b).toEqual(a);
    for (const r of a) expect(JSON.stringify(r)).toContain('filter-cali-pi-gnp/default.pol-000');
    for (const { ns } of [small, large]) {
      const listed = nftIn(ns, ['list', 'chain', 'ip', 'calico', 'filter-cali-pi-gnp/default.pol-000']);
      expect(listed).toMatch(/tcp dport 9999 .*accept|tcp dport 9999/);
      // It is the last rule, after the policy's other rules.
      expect(listed.trim().split('\n').at(-3)).toContain('9999');
    }
    // And back: that rule is deleted by its handle, in both families, the same on both nodes.
    const c = await change(small.node, [{ kind: 'set', resource: policy(0) }]);
    const d = await change(large.node, [{ kind: 'set', resource: policy(0) }]);
    expect(shapes(d)).toEqual(['delete rule', 'delete rule']);
    expect(shapes(c)).toEqual(shapes(d));
    for (const x of d) expect(JSON.stringify(x)).toContain('filter-cali-pi-gnp/default.pol-000');
    // A rule that was there from the start goes the same way: the last egress rule.
    const e = await change(large.node, [{ kind: 'set', resource: policy(0, false, true) }]);
    expect(shapes(e)).toEqual(['delete rule', 'delete rule']);
    for (const x of e) expect(JSON.stringify(x)).toContain('filter-cali-po-gnp/default.pol-000');
    expect(
      nftIn(large.ns, ['list', 'chain', 'ip', 'calico', 'filter-cali-po-gnp/default.pol-000']),
    ).not.toMatch(/udp dport 53/);
    // Put back: appended, as any rule added at the end.
    expect(shapes(await change(large.node, [{ kind: 'set', resource: policy(0) }]))).toEqual([
      'add rule',
      'add rule',
    ]);
    expect(
      nftIn(large.ns, ['list', 'chain', 'ip', 'calico', 'filter-cali-pi-gnp/default.pol-000']),
    ).not.toMatch(/9999/);
    // A read-back finds the kernel exactly as programmed.
    expect(await large.node.dp.resync(large.node.renderer.desired())).toEqual({
      mode: 'resync',
      commands: 0,
    });
  });

  it('adds a pod with the same commands whatever the number of unrelated policies: its chains and elements', async () => {
    const a = await change(small.node, [{ kind: 'set', resource: pod(NEW_POD) }]);
    const b = await change(large.node, [{ kind: 'set', resource: pod(NEW_POD) }]);
    expect(b.length).toBe(a.length);
    for (const s of shapes(a)) expect(['add chain', 'add rule', 'add set', 'add map']).toContain(s);
    // Members and map entries are only added: each `add set` / `add map` holds just the new pod's.
    for (const c of a) {
      const body = 'add' in c ? c.add : undefined;
      if (body && 'set' in body) expect(body.set.elem).toEqual([`198.19.0.${NEW_POD + 1}`]);
      if (body && 'map' in body) {
        expect(body.map.elem?.map((e) => (e as [unknown, unknown])[0])).toEqual([`calipod${NEW_POD}`]);
      }
    }
    expect(nftIn(large.ns, ['list', 'map', 'ip', 'calico', 'filter-cali-to-wl-dispatch'])).toContain(
      `"calipod${NEW_POD}" : goto filter-cali-tw-calipod${NEW_POD}`,
    );
    const gone = await change(large.node, [{ kind: 'delete', resource: pod(NEW_POD) }]);
    for (const s of shapes(gone))
      expect(['flush chain', 'delete chain', 'flush set', 'add set', 'flush map', 'add map']).toContain(s);
    expect(nftIn(large.ns, ['list', 'table', 'ip', 'calico'])).not.toContain(`calipod${NEW_POD}`);
    await change(small.node, [{ kind: 'delete', resource: pod(NEW_POD) }]);
  });

  it('moves a pod into other rules’ IP sets on a label change with set elements only', async () => {
    const a = await change(small.node, [{ kind: 'set', resource: pod(4, 'r2') }]);
    const b = await change(large.node, [{ kind: 'set', resource: pod(4, 'r2') }]);
    expect(b.length).toBe(a.length);
    expect(new Set(shapes(a))).toEqual(new Set(['add set', 'flush set']));
    // A set refilled is one the pod left; a set only added to gets the pod's address alone.
    const flushedSets = new Set(
      a.flatMap((c) => ('flush' in c && 'set' in c.flush ? [c.flush.set.name] : [])),
    );
    for (const c of a) {
      if (!('add' in c) || !('set' in c.add)) continue;
      if (flushedSets.has(c.add.set.name)) expect(c.add.set.elem ?? []).not.toContain('198.19.0.5');
      else expect(c.add.set.elem).toEqual(['198.19.0.5']);
    }
    // A read-back finds the kernel exactly as programmed.
    const desired = large.node.renderer.desired();
    expect(await large.node.dp.resync(desired)).toEqual({ mode: 'resync', commands: 0 });
  });
});
