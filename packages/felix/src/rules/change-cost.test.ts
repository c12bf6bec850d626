/**
 * A change costs what it changes: the same change made on a node with N unrelated policies and on
 * one with 2N gives the very same nftables commands (compared whole, never timed), and each kind
 * of change touches only its own objects: one rule, a pod's chains and elements, set elements.
 * Calculation only: the calc graph, the incremental renderer and the diff, no kernel.
 */
import type { Rule } from '@calico-ts/api';
import type { NftCommand } from '@calico-ts/nftables';
import { describe, expect, it } from 'vitest';
import { CalcGraph } from '../calc/calc-graph.js';
import { globalNetSet, gnp, pool, profile, wep } from '../calc/testing-internal/resources.js';
import type { CalcResource, CalcUpdate } from '../calc/types.js';
import { DEFAULT_RULES_CONFIG } from './config.js';
import { IncrementalRenderer } from './incremental-renderer.js';
import { type NftDesired, tablesCopy } from './ruleset.js';
import { diffRuleset, type RuleHandles, ruleHandlesKey, trailingRemovals } from './ruleset-diff.js';

const PODS = 12;
const NEW_POD = PODS;

/** Pods 0, 4, 8… are app0 (only policy 0 selects them); the others app1–app3. */
function pod(i: number, role = `r${i % 3}`): CalcResource {
  return wep('a', `pod${i}`, {
    labels: { app: `app${i % 4}`, role },
    profiles: ['kns.a'],
    ips: [`198.19.0.${i + 1}/32`],
    iface: `calipod${i}`,
  });
}

/** Rules of every shape the renderer has: IP sets, anonymous sets of ports and nets, a deny. */
function rules(p: number, extra: 'none' | 'end' | 'middle'): { ingress: Rule[]; egress: Rule[] } {
  const ingress: Rule[] = [
    {
      action: 'Allow',
      protocol: 'TCP',
      source: { selector: `role == 'r${p % 3}'` },
      destination: { ports: [80 + (p % 50), `${8000 + p}:${8010 + p}`] },
    },
    { action: 'Deny', source: { nets: [`198.18.${p % 250}.0/24`, `198.18.${p % 250}.128/32`] } },
    { action: 'Allow', protocol: 'UDP', destination: { nets: ['198.18.200.0/24'], ports: [53, 5353] } },
  ];
  const added: Rule = { action: 'Allow', protocol: 'TCP', destination: { ports: [9999] } };
  if (extra === 'end') ingress.push(added);
  if (extra === 'middle') ingress.splice(1, 0, added);
  return { ingress, egress: [{ action: 'Allow', destination: { selector: "role == 'ext'" } }] };
}

/** Policy 0 selects app0; the unrelated ones select the other pods (so they are rendered). */
function policy(p: number, extra: 'none' | 'end' | 'middle' = 'none'): CalcResource {
  return gnp(`default.pol-${String(p).padStart(4, '0')}`, {
    order: 100 + p,
    selector: p === 0 ? "app == 'app0'" : `app == 'app${1 + (p % 3)}'`,
    types: ['Ingress', 'Egress'],
    ...rules(p, extra),
  });
}

function nsProfile(extraRule: boolean): CalcResource {
  const ingress: Rule[] = [{ action: 'Allow' }];
  if (extraRule) ingress.unshift({ action: 'Deny', protocol: 'TCP', destination: { ports: [7777] } });
  return profile('kns.a', { ingress, egress: [{ action: 'Allow' }] });
}

/** A network set that `role == 'ext'` rules take in: its nets change, nothing else. */
const netSet = (n: number) => globalNetSet('ext', { role: 'ext' }, [`198.18.100.${n}/32`, '198.18.101.0/24']);

interface Node {
  readonly graph: CalcGraph;
  readonly renderer: IncrementalRenderer;
  programmed: NftDesired;
}

function node(policies: number): Node {
  const graph = new CalcGraph({ hostname: 'node1' });
  const renderer = new IncrementalRenderer(DEFAULT_RULES_CONFIG);
  const set = (resource: CalcResource) => graph.onUpdate({ kind: 'set', resource });
  set(nsProfile(false));
  set(pool('p', '198.19.0.0/16', true));
  set(netSet(1));
  for (let i = 0; i < PODS; i++) set(pod(i));
  for (let p = 0; p < policies; p++) set(policy(p));
  graph.onUpdate({ kind: 'in-sync' });
  renderer.onUpdate(graph.flush());
  expect(renderer.render()).toBeUndefined();
  return { graph, renderer, programmed: tablesCopy(renderer.desired()) };
}

/** One batch through the pipeline: the commands of its transaction (what the dataplane sends). */
function change(n: Node, updates: CalcUpdate[]): NftCommand[] {
  for (const u of updates) n.graph.onUpdate(u);
  n.renderer.onUpdate(n.graph.flush());
  const names = n.renderer.render();
  expect(names).toBeDefined();
  const desired = n.renderer.desired();
  const commands = diffRuleset(n.programmed, desired, names);
  n.programmed = tablesCopy(desired);
  return commands;
}

/** A command's verb and object kind, e.g. `add rule`, `flush set`. */
const shapes = (cmds: NftCommand[]) =>
  cmds.map((c) => {
    const [verb, body] = Object.entries(c)[0]! as [string, Record<string, unknown>];
    return `${verb} ${Object.keys(body)[0]}`;
  });

/** The names of the chains, sets and maps the commands write. */
const objects = (cmds: NftCommand[]) =>
  new Set(
    cmds.map((c) => {
      const body = Object.values(c)[0] as Record<string, { chain?: string; name?: string }>;
      const [kind, o] = Object.entries(body)[0]!;
      return `${kind} ${kind === 'rule' ? o.chain : o.name}`;
    }),
  );

const set = (resource: CalcResource): CalcUpdate => ({ kind: 'set', resource });
const del = (resource: CalcResource): CalcUpdate => ({ kind: 'delete', resource });

describe('the cost of a change does not grow with unrelated policies', () => {
  // Each case: the change, then what it may touch. Both nodes go through the same sequence.
  const small = node(40);
  const large = node(80);
  const both = (updates: CalcUpdate[]) => {
    const a = change(small, updates);
    const b = change(large, updates);
    // The very same commands, in the same order, on both nodes.
    expect(b).toEqual(a);
    expect(a.length).toBeGreaterThan(0);
    return a;
  };
  const pi0 = 'filter-cali-pi-gnp/default.pol-0000';

  it('has twice the policies on the large node', () => {
    expect(large.renderer.counts.policies).toBe(2 * small.renderer.counts.policies);
    const chains = (n: Node) => Object.keys(n.programmed.tables[0]!.chains).length;
    expect(chains(large)).toBeGreaterThan(chains(small) + 70);
  });

  it('one rule appended to a policy: that rule, in each family', () => {
    const a = both([set(policy(0, 'end'))]);
    expect(shapes(a)).toEqual(['add rule', 'add rule']);
    expect(objects(a)).toEqual(new Set([`rule ${pi0}`]));
  });

  it('that rule removed again: the policy chain and nothing else', () => {
    const a = both([set(policy(0))]);
    expect(objects(a)).toEqual(new Set([`chain ${pi0}`, `rule ${pi0}`]));
  });

  it('a rule removed from the end, its handle known: that rule deleted by handle, nothing added', () => {
    both([set(policy(0, 'end'))]);
    const cmds = (n: Node) => {
      n.graph.onUpdate(set(policy(0)));
      n.renderer.onUpdate(n.graph.flush());
      const names = n.renderer.render()!;
      const desired = n.renderer.desired();
      const shrunk = trailingRemovals(n.programmed, desired, names);
      // Handles as the kernel would give them: a number per rule comment of the shrunk chains.
      const handles: RuleHandles = new Map(
        shrunk.map((c) => {
          const t = n.programmed.tables.find((x) => x.family === c.family)!;
          const rules = t.chains[c.chain]!.rules;
          return [ruleHandlesKey(c.family, c.chain), new Map(rules.map((r, i) => [r.comment!, 100 + i]))];
        }),
      );
      const out = diffRuleset(n.programmed, desired, names, handles);
      n.programmed = tablesCopy(desired);
      return { shrunk, out };
    };
    const a = cmds(small);
    const b = cmds(large);
    expect(b).toEqual(a);
    expect(a.shrunk.map((c) => `${c.family} ${c.chain}`)).toEqual([`ip ${pi0}`, `ip6 ${pi0}`]);
    // The removed rule was the policy's last inbound rule: the fourth in IPv4 (handle 103), the
    // second in IPv6, where the two rules with IPv4 nets do not exist (handle 101).
    expect(a.out).toEqual(
      (
        [
          ['ip', 103],
          ['ip6', 101],
        ] as const
      ).map(([family, handle]) => ({
        delete: { rule: { family, table: 'calico', chain: pi0, handle } },
      })),
    );
  });

  it('one rule inserted in the middle of a policy: the policy chain and nothing else', () => {
    const a = both([set(policy(0, 'middle'))]);
    expect(objects(a)).toEqual(new Set([`chain ${pi0}`, `rule ${pi0}`]));
    both([set(policy(0))]);
  });

  it("a profile's rule: the profile chain and nothing else", () => {
    const a = both([set(nsProfile(true))]);
    expect(objects(a)).toEqual(new Set(['chain filter-cali-pri-kns.a', 'rule filter-cali-pri-kns.a']));
    both([set(nsProfile(false))]);
  });

  it('a pod added: its chains and rules, its dispatch map entries and its address in the sets it joins', () => {
    const a = both([set(pod(NEW_POD))]);
    for (const s of shapes(a)) expect(['add chain', 'add rule', 'add set', 'add map']).toContain(s);
    for (const o of objects(a)) {
      expect(o).toMatch(
        new RegExp(
          `^(chain|rule) filter-cali-[tf]w-calipod${NEW_POD}$|^map filter-cali-(to|from)-wl-dispatch$|^set cali[46]0`,
        ),
      );
    }
    for (const c of a) {
      const body = 'add' in c ? c.add : undefined;
      if (body && 'set' in body) expect(body.set.elem).toEqual([`198.19.0.${NEW_POD + 1}`]);
      if (body && 'map' in body) {
        expect(body.map.elem?.map((e) => (e as [unknown, unknown])[0])).toEqual([`calipod${NEW_POD}`]);
      }
    }
  });

  it('that pod removed: its chains deleted, the maps and sets it leaves refilled', () => {
    const a = both([del(pod(NEW_POD))]);
    for (const s of shapes(a))
      expect(['flush chain', 'delete chain', 'flush set', 'add set', 'flush map', 'add map']).toContain(s);
    for (const c of a) expect(JSON.stringify(c)).not.toContain(`198.19.0.${NEW_POD + 1}"`);
  });

  it("a label change that moves a pod into other rules' selectors: set elements only", () => {
    const a = both([set(pod(4, 'r2'))]);
    expect(new Set(shapes(a))).toEqual(new Set(['add set', 'flush set']));
    both([set(pod(4))]);
  });

  it("a network set's nets: set elements only", () => {
    const a = both([set(netSet(2))]);
    for (const s of shapes(a)) expect(['add set', 'flush set']).toContain(s);
  });
});
