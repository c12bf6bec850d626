/**
 * The incremental renderer against the full one: after every change of a long random walk over
 * datastore states, the ruleset it keeps equals `renderRuleset` of the whole state, and the names
 * it reports as changed are enough: diffing only those gives the same commands as diffing all.
 */
import type { Rule } from '@calico-ts/api';
import { describe, expect, it } from 'vitest';
import { CalcGraph } from '../calc/calc-graph.js';
import {
  allow,
  deny,
  globalNetSet,
  gnp,
  hep,
  np,
  pool,
  profile,
  resourceKey,
  wep,
} from '../calc/testing-internal/resources.js';
import type { CalcResource } from '../calc/types.js';
import { DEFAULT_RULES_CONFIG, type RulesConfig } from './config.js';
import { IncrementalRenderer } from './incremental-renderer.js';
import { annotateRuleset } from './rule-hashes.js';
import { tablesCopy } from './ruleset.js';
import { diffRuleset } from './ruleset-diff.js';
import { renderRuleset } from './ruleset-renderer.js';

const sorted = (cmds: unknown[]) => cmds.map((c) => JSON.stringify(c)).sort();

/** Deterministic pseudo-random numbers (mulberry32). */
function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const fromRole = (role: string, port: number): Rule => ({
  action: 'Allow',
  protocol: 'TCP',
  source: { selector: `role == '${role}'` },
  destination: { ports: [port] },
});

/** Each slot is one resource; a step sets a slot to one of its variants or deletes it. */
const SLOTS: CalcResource[][] = [
  ...[1, 2, 3, 4].map((i) => [
    wep('ns1', `w${i}`, { labels: { app: 'web', role: 'a' }, ips: [`198.18.1.${i}/32`], profiles: ['p1'] }),
    wep('ns1', `w${i}`, { labels: { app: 'db', role: 'b' }, ips: [`198.18.1.${i}/32`], profiles: ['p1'] }),
    wep('ns1', `w${i}`, { labels: { app: 'web', role: 'b' }, ips: [`198.18.1.${i + 10}/32`] }),
    wep('ns1', `w${i}`, { node: 'node2', labels: { app: 'web', role: 'a' }, ips: [`198.18.1.${i}/32`] }),
  ]),
  // Two endpoints claiming one interface: the first by key wins.
  [
    wep('ns2', 'x1', { labels: { app: 'web' }, ips: ['198.18.2.1/32'], iface: 'calishared1' }),
    wep('ns2', 'x1', { labels: { app: 'db' }, ips: ['198.18.2.1/32'], iface: 'calishared1' }),
  ],
  [wep('ns2', 'x2', { labels: { app: 'db' }, ips: ['198.18.2.2/32'], iface: 'calishared1' })],
  [
    hep('h1', { labels: { host: 'yes' }, ips: ['198.18.3.1'], iface: 'eth0' }),
    hep('h1', { labels: { host: 'no' }, ips: ['198.18.3.1'], iface: 'eth0' }),
    hep('h1', { labels: { host: 'yes' }, ips: ['198.18.3.1'], iface: '*' }),
  ],
  [
    gnp('default.web', { selector: "app == 'web'", ingress: [fromRole('b', 80)], egress: [allow] }),
    gnp('default.web', {
      selector: "app == 'web'",
      ingress: [fromRole('b', 80), fromRole('a', 443)],
      egress: [allow],
    }),
    gnp('default.web', { selector: "app == 'db'", ingress: [deny] }),
  ],
  [gnp('default.db', { order: 10, selector: "app == 'db'", ingress: [fromRole('a', 5432)] })],
  [np('ns1', 'default.local', { selector: 'all()', egress: [{ action: 'Pass' }] })],
  [
    gnp('default.untracked', {
      selector: "host == 'yes'",
      doNotTrack: true,
      applyOnForward: true,
      ingress: [allow],
      egress: [allow],
    }),
    gnp('default.untracked', {
      selector: "host == 'yes'",
      doNotTrack: true,
      applyOnForward: true,
      ingress: [deny],
      egress: [allow],
    }),
  ],
  [
    gnp('default.prednat', {
      selector: "host == 'yes'",
      preDNAT: true,
      applyOnForward: true,
      ingress: [allow],
    }),
  ],
  [
    profile('p1', { ingress: [allow], egress: [allow] }),
    profile('p1', { ingress: [fromRole('a', 22)], egress: [allow], labelsToApply: { role: 'b' } }),
  ],
  [
    globalNetSet('gns1', { role: 'a' }, ['198.18.9.0/24']),
    globalNetSet('gns1', { role: 'b' }, ['198.18.8.0/24']),
  ],
  [pool('pool1', '198.19.0.0/16', true), pool('pool1', '198.19.0.0/16', false)],
  [pool('pool2', 'fd00:198:19::/48', true)],
];

function walk(seed: number, steps: number, config: RulesConfig): void {
  const next = rng(seed);
  const graph = new CalcGraph({ hostname: 'node1' });
  const renderer = new IncrementalRenderer(config);
  const current = new Map<string, CalcResource>();
  graph.onUpdate({ kind: 'in-sync' });
  let before = tablesCopy(renderer.desired());
  for (let step = 0; step < steps; step++) {
    // One to three resources change per batch, as a debounced watch would deliver them.
    const n = 1 + Math.floor(next() * 3);
    for (let k = 0; k < n; k++) {
      const slot = SLOTS[Math.floor(next() * SLOTS.length)]!;
      const pick = Math.floor(next() * (slot.length + 1));
      const key = resourceKey(slot[0]!);
      if (pick === slot.length) {
        const old = current.get(key);
        if (old) graph.onUpdate({ kind: 'delete', resource: old });
        current.delete(key);
      } else {
        graph.onUpdate({ kind: 'set', resource: slot[pick]! });
        current.set(key, slot[pick]!);
      }
    }
    renderer.onUpdate(graph.flush());
    const change = renderer.render();
    const after = renderer.desired();
    const full = annotateRuleset(renderRuleset(graph.state(), config));
    expect(after, `step ${step}`).toEqual(full);
    if (change !== undefined) {
      expect(sorted(diffRuleset(before, after, change)), `step ${step}`).toEqual(
        sorted(diffRuleset(before, after)),
      );
    }
    before = tablesCopy(after);
  }
}

describe('IncrementalRenderer', () => {
  it('keeps the ruleset renderRuleset renders, reporting every object that changed (IPv4 and IPv6)', () => {
    for (const seed of [1, 2, 3]) walk(seed, 80, DEFAULT_RULES_CONFIG);
  }, 120_000);

  it('does so with IPv6 off', () => {
    walk(7, 120, { ...DEFAULT_RULES_CONFIG, ipv6Support: false });
  }, 120_000);

  it('reports only the policy chains when a rule is added to one policy', () => {
    const graph = new CalcGraph({ hostname: 'node1' });
    const renderer = new IncrementalRenderer(DEFAULT_RULES_CONFIG);
    graph.onUpdate({ kind: 'in-sync' });
    for (const r of [SLOTS[0]![0]!, SLOTS[1]![1]!, SLOTS[7]![0]!, SLOTS[8]![0]!]) {
      graph.onUpdate({ kind: 'set', resource: r });
    }
    renderer.onUpdate(graph.flush());
    expect(renderer.render()).toBeUndefined();
    graph.onUpdate({ kind: 'set', resource: SLOTS[7]![1]! });
    renderer.onUpdate(graph.flush());
    const change = renderer.render()!;
    const names = (f: 'ip' | 'ip6') => {
      const c = change.get(f)!;
      return { chains: [...c.chains].sort(), sets: [...c.sets].sort(), maps: [...c.maps] };
    };
    // The new rule's IP set is already there (default.db uses it): nothing else is looked at.
    for (const f of ['ip', 'ip6'] as const) {
      expect(names(f)).toEqual({
        chains: ['filter-cali-pi-gnp/default.web', 'filter-cali-po-gnp/default.web'],
        sets: [],
        maps: [],
      });
    }
  });
});
