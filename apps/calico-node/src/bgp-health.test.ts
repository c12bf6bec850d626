import type { ProtocolRow } from '@calico-ts/bird-bridge';
import { describe, expect, it } from 'vitest';
import { bgpHealthReport, bgpPeersOf, birdReadiness, peerAddressOf } from './bgp-health.js';

const row = (name: string, proto: string, state: string, info: string): ProtocolRow => ({
  name,
  proto,
  table: proto === 'BGP' ? '---' : 'master4',
  state,
  since: '09:07:36.607',
  info,
});

const ROWS = [
  row('device1', 'Device', 'up', ''),
  row('kernel1', 'Kernel', 'up', ''),
  row('Mesh_198_18_0_12', 'BGP', 'up', 'Established'),
  row('Mesh_198_18_0_13', 'BGP', 'start', 'Active        Socket: Connection refused'),
  row('Global_198_18_0_1_port_1790', 'BGP', 'up', 'Established'),
  row('Local_Workload_198_19_0_5', 'BGP', 'up', 'Established'),
];

describe('BGP peers from show protocols', () => {
  it('keeps Calico peers with address, type and state', () => {
    expect(bgpPeersOf(ROWS).map((p) => [p.peerIP, p.type, p.bgpState, p.established])).toEqual([
      ['198.18.0.12', 'node-to-node mesh', 'Established', true],
      ['198.18.0.13', 'node-to-node mesh', 'Active', false],
      ['198.18.0.1', 'global', 'Established', true],
    ]);
  });
  it('decodes IPv6 peer names', () => {
    expect(peerAddressOf('fd00__12')).toBe('fd00::12');
  });
});

describe('-bird-ready', () => {
  const peers = bgpPeersOf(ROWS);
  it('is ready with no peers', () => {
    expect(birdReadiness([], 0, 30_000, false)).toEqual({ ok: true });
  });
  it('needs every peer while the node is young', () => {
    expect(birdReadiness(peers, 1000, 30_000, false)).toEqual({
      ok: false,
      reason: 'BGP not established with 198.18.0.13',
    });
    const up = peers.filter((p) => p.established);
    expect(birdReadiness(up, 1000, 30_000, false)).toEqual({ ok: true });
    expect(birdReadiness(up, 1000, 30_000, true)).toEqual({
      ok: false,
      reason: 'graceful restart in progress',
    });
  });
  it('needs one peer later on', () => {
    expect(birdReadiness(peers, 60_000, 30_000, false)).toEqual({ ok: true });
    const down = peers.filter((p) => !p.established);
    expect(birdReadiness(down, 60_000, 30_000, false).ok).toBe(false);
  });
});

describe('the readiness calico-node adds to Felix', () => {
  it('is ready only when every peer is Established', () => {
    const peers = bgpPeersOf(ROWS);
    expect(bgpHealthReport(peers.filter((p) => p.established))).toEqual({ live: true, ready: true });
    expect(bgpHealthReport(peers)).toEqual({
      live: true,
      ready: false,
      detail: 'BGP not established with 198.18.0.13 Active',
    });
    expect(bgpHealthReport(new Error('connect ENOENT /run/bird.ctl'))).toEqual({
      live: true,
      ready: false,
      detail: 'BIRD: connect ENOENT /run/bird.ctl',
    });
  });
});
