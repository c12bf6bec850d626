import { parseSelector } from '@calico-ts/api';
import { describe, expect, it } from 'vitest';
import { CalcGraph } from './calc-graph.js';
import { SelectorIndex } from './selector-index.js';
import { gnp, wep } from './testing-internal/resources.js';

function recordingIndex() {
  const events: string[] = [];
  const index = new SelectorIndex({
    onMatchStarted: (s, i) => events.push(`+${s}:${i}`),
    onMatchStopped: (s, i) => events.push(`-${s}:${i}`),
  });
  return { index, events };
}

describe('SelectorIndex', () => {
  it('reports matches as selectors and items come and go', () => {
    const { index, events } = recordingIndex();
    index.updateItem('a', { app: 'web' });
    index.updateSelector('web', parseSelector("app == 'web'"));
    index.updateSelector('notdb', parseSelector("app != 'db'"));
    index.updateItem('b', {});
    expect(events).toEqual(['+web:a', '+notdb:a', '+notdb:b']);
    events.length = 0;
    index.updateItem('a', { app: 'db' });
    expect(events.sort()).toEqual(['-notdb:a', '-web:a']);
    events.length = 0;
    index.deleteSelector('notdb');
    index.deleteItem('a');
    expect(events).toEqual(['-notdb:b']);
    expect([...index.itemsMatching('web')]).toEqual([]);
  });

  it('re-evaluates only selectors naming a changed label', () => {
    const { index } = recordingIndex();
    for (let i = 0; i < 50; i++) index.updateSelector(`s${i}`, parseSelector(`k${i} == 'x'`));
    index.updateSelector('all', parseSelector('all()'));
    index.updateItem('item', { k1: 'x', other: 'y' });
    const before = index.evaluations;
    index.updateItem('item', { k1: 'x', other: 'z' }); // no selector names `other`
    expect(index.evaluations - before).toBe(0);
    index.updateItem('item', { k1: 'no', other: 'z' });
    expect(index.evaluations - before).toBe(1);
    expect([...index.selectorsMatching('item')]).toEqual(['all']);
  });

  it('evaluates a new item only against selectors naming its labels', () => {
    const { index } = recordingIndex();
    for (let i = 0; i < 50; i++) index.updateSelector(`s${i}`, parseSelector(`has(k${i})`));
    index.updateSelector('neg', parseSelector('!has(k3)'));
    const before = index.evaluations;
    index.updateItem('item', { k7: '' });
    expect(index.evaluations - before).toBe(1);
    expect([...index.selectorsMatching('item')].sort()).toEqual(['neg', 's7']);
  });
});

describe('CalcGraph selector evaluations', () => {
  it('a label change on one endpoint re-evaluates only the selectors naming that label', () => {
    const g = new CalcGraph({ hostname: 'node1' });
    const POLICIES = 200;
    const ENDPOINTS = 200;
    for (let i = 0; i < POLICIES; i++) {
      g.onUpdate({
        kind: 'set',
        resource: gnp(`p${i}`, {
          selector: `app${i} == 'on'`,
          ingress: [{ action: 'Allow', source: { selector: `role${i} == 'client'` } }],
        }),
      });
    }
    for (let i = 0; i < ENDPOINTS; i++) {
      g.onUpdate({
        kind: 'set',
        resource: wep('ns', `w${i}`, {
          labels: { [`app${i}`]: 'on', [`role${(i + 1) % POLICIES}`]: 'client' },
          ips: [`10.0.${i >> 8}.${i & 255}/32`],
        }),
      });
    }
    g.flush();
    const before = g.selectorEvaluations;

    // w5 stops being a client of p6 and becomes a client of p7.
    g.onUpdate({
      kind: 'set',
      resource: wep('ns', 'w5', { labels: { app5: 'on', role7: 'client' }, ips: ['10.0.0.5/32'] }),
    });
    const diff = g.flush();
    const spent = g.selectorEvaluations - before;
    // One IP set selector names role6, one names role7; nothing else can change.
    expect(spent).toBe(2);
    expect(spent).toBeLessThan(POLICIES); // versus a full re-match of every selector
    const members = Object.fromEntries(diff.ipSetsUpdated.map((s) => [s.selector, s.members]));
    expect(members).toEqual({ 'role6 == "client"': [], 'role7 == "client"': ['10.0.0.5/32', '10.0.0.6/32'] });

    // An address-only change evaluates nothing.
    const before2 = g.selectorEvaluations;
    g.onUpdate({
      kind: 'set',
      resource: wep('ns', 'w5', { labels: { app5: 'on', role7: 'client' }, ips: ['10.0.9.9/32'] }),
    });
    const diff2 = g.flush();
    expect(g.selectorEvaluations - before2).toBe(0);
    expect(diff2.ipSetsUpdated.map((s) => s.members)).toEqual([['10.0.0.6/32', '10.0.9.9/32']]);
  });
});
