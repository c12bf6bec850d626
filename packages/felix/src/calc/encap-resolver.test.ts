/**
 * The tunnels as part of the graph: Nodes, IPPools and IPAM blocks go through the same
 * dispatcher as the policies, and VXLAN, IPIP and the tunnel sources come out in the same diff,
 * once in sync and only when they change. One pool update feeds the rules' pool state and the
 * tunnels alike.
 */
import { describe, expect, it } from 'vitest';
import { CalcGraph } from './calc-graph.js';
import { applyDataplaneDiff, changesRules, emptyDataplaneState, isEmptyDiff } from './dataplane-state.js';
import type { EncapConfig } from './encap-resolver.js';
import { encapPool, node } from './testing-internal/encap-resources.js';
import type { CalcResource, DataplaneDiff } from './types.js';

const CFG: EncapConfig = {
  vxlanVni: 4096,
  vxlanPort: 4789,
  vxlanMtu: 0,
  vxlanMtuV6: 0,
  ipipMtu: 0,
  programClusterRoutes: false,
  ipv6Support: false,
  externalNodes: [],
  natExcludeHosts: false,
  hostMtu: 1500,
};

function blockResource(cidr: string, host: string): CalcResource {
  return {
    kind: 'IPAMBlock',
    metadata: { name: `/calico/ipam/v2/assignment/ipv4/block/${cidr.replace('/', '-')}` },
    spec: { cidr, affinity: `host:${host}`, allocations: [], attributes: [] },
  };
}

function graphWithTwoNodes(): CalcGraph {
  const g = new CalcGraph({ hostname: 'node-a' });
  g.setEncapConfig(CFG);
  for (const r of [
    node('node-a', '198.18.0.2/24', { vxlan: '198.19.0.0' }),
    node('node-b', '198.18.0.3/24', { vxlan: '198.19.0.64' }),
    encapPool('vx', '198.19.0.0/16', { vxlanMode: 'Always' }),
    blockResource('198.19.0.0/26', 'node-a'),
    blockResource('198.19.0.64/26', 'node-b'),
  ] as CalcResource[]) {
    g.onUpdate({ kind: 'set', resource: r });
  }
  return g;
}

describe('the tunnels in the calculation graph', () => {
  it('emits nothing of them before in-sync, then everything in the same diff as the pools', () => {
    const g = graphWithTwoNodes();
    const early = g.flush();
    expect(early.vxlan).toBeUndefined();
    expect(early.poolsUpdated.map((p) => p.name)).toEqual(['vx']);
    expect(g.encapPending).toBe(false);
    g.onUpdate({ kind: 'in-sync' });
    expect(g.encapPending).toBe(true);
    const d = g.flush();
    expect(d.vxlan?.device?.tunnelAddress).toBe('198.19.0.0');
    expect(d.vxlan?.routes).toEqual([
      { kind: 'blackhole', dst: '198.19.0.0/26' },
      { kind: 'tunnel', dst: '198.19.0.64/26', gateway: '198.19.0.64', dev: 'vxlan.calico' },
    ]);
    expect(d.ipip).toEqual({ enabled: false, routes: [], waiting: [] });
    expect(d.vxlanV6).toBeUndefined();
    expect(d.tunnelSources).toEqual({ vxlanSources: ['198.18.0.3'] });
    expect(d.poolEncaps).toEqual({ vxlan: true, ipip: false });
    expect(changesRules(d)).toBe(true);
  });

  it('emits only what changed: a remote block moves one route; an unrelated change emits no tunnel', () => {
    const g = graphWithTwoNodes();
    g.onUpdate({ kind: 'in-sync' });
    g.flush();
    expect(isEmptyDiff(g.flush())).toBe(true);
    g.onUpdate({ kind: 'set', resource: blockResource('198.19.0.128/26', 'node-b') });
    const d = g.flush();
    expect(d.vxlan?.routes.map((r) => r.dst)).toEqual(['198.19.0.0/26', '198.19.0.64/26', '198.19.0.128/26']);
    expect(d.tunnelSources).toBeUndefined();
    expect(d.ipip).toBeUndefined();
    expect(changesRules(d)).toBe(false);
    // The same block again: its routing facts did not change, nothing is derived.
    g.onUpdate({ kind: 'set', resource: blockResource('198.19.0.128/26', 'node-b') });
    expect(g.encapPending).toBe(false);
    // A config whose values did not change is no change either.
    g.setEncapConfig({ ...CFG });
    expect(isEmptyDiff(g.flush())).toBe(true);
  });

  it('adds up to the state the graph reports, tunnels included', () => {
    const g = graphWithTwoNodes();
    let folded = emptyDataplaneState();
    const step = (): DataplaneDiff => {
      const d = g.flush();
      folded = applyDataplaneDiff(folded, d);
      return d;
    };
    step();
    g.onUpdate({ kind: 'in-sync' });
    step();
    g.onUpdate({ kind: 'delete', resource: { kind: 'Node', metadata: { name: 'node-b' } } });
    step();
    expect(folded).toEqual(g.state());
    expect(g.state().vxlan?.routes).toEqual([{ kind: 'blackhole', dst: '198.19.0.0/26' }]);
    expect(g.state().tunnelSources).toEqual({ vxlanSources: [] });
  });
});
