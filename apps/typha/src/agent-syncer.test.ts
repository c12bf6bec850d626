import { Syncer } from '@calico-ts/datastore';
import { describe, expect, it } from 'vitest';
import { type AgentTyphaConfig, addressesFromEndpoints, agentSyncer, usesTypha } from './agent-syncer.js';
import { TyphaClient } from './client.js';
import { agentConfig } from './testing-internal/agent-config.js';

const NONE: AgentTyphaConfig = agentConfig();
const callbacks = { sources: [], onUpdate: () => {}, onInSync: () => {} };

describe('agentSyncer', () => {
  it('uses Typha only when an address or a Service is configured', () => {
    expect(usesTypha(NONE)).toBe(false);
    expect(agentSyncer(callbacks, NONE, { client: 'felix', syncerType: 'felix' })).toBeInstanceOf(Syncer);
    const viaAddr = { ...NONE, TyphaAddr: '10.0.0.1:5473' };
    expect(usesTypha(viaAddr)).toBe(true);
    expect(agentSyncer(callbacks, viaAddr, { client: 'felix', syncerType: 'felix' })).toBeInstanceOf(
      TyphaClient,
    );
  });

  it('needs a way to read Endpoints for a Service name', () => {
    const viaSvc = { ...NONE, TyphaK8sServiceName: 'calico-typha' };
    expect(() => agentSyncer(callbacks, viaSvc, { client: 'felix', syncerType: 'felix' })).toThrow(
      /Endpoints/,
    );
    expect(
      agentSyncer(callbacks, viaSvc, {
        client: 'felix',
        syncerType: 'felix',
        getEndpoints: async () => ({}),
      }),
    ).toBeInstanceOf(TyphaClient);
  });

  it("takes the addresses of the Endpoints' calico-typha port", () => {
    const endpoints = {
      subsets: [
        {
          addresses: [{ ip: '10.0.0.5' }, { ip: 'fd00::5' }],
          ports: [
            { name: 'metrics', port: 9093 },
            { name: 'calico-typha', port: 5473 },
          ],
        },
        { addresses: [{ ip: '10.0.0.6' }], ports: [{ name: 'other', port: 1 }] },
      ],
    };
    expect(addressesFromEndpoints(endpoints)).toEqual(['10.0.0.5:5473', '[fd00::5]:5473']);
    expect(addressesFromEndpoints({})).toEqual([]);
  });
});
