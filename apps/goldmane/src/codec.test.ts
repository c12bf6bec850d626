import { describe, expect, it } from 'vitest';
import {
  decodeFilter,
  decodeFlowUpdate,
  decodeListRequest,
  decodeStreamRequest,
  encodeFlow,
} from './codec.js';

const wireFlow = {
  Key: {
    source_name: 'web-*',
    dest_name: 'db-*',
    dest_port: 5432,
    proto: 'tcp',
    reporter: 'Src',
    action: 'Allow',
    policies: { enforced_policies: [{ kind: 'NetworkPolicy', name: 'p', action: 'Allow', rule_index: 2 }] },
  },
  start_time: 1_700_000_000,
  end_time: 1_700_000_015,
  bytes_in: 10,
};

describe('codec', () => {
  it('decodes a FlowUpdate with defaults for absent fields and encodes it back', () => {
    const f = decodeFlowUpdate({ flow: wireFlow });
    expect(f.key).toMatchObject({ destPort: 5432, sourceType: 'EndpointTypeUnspecified', reporter: 'Src' });
    expect(f.key.policies.enforcedPolicies[0]).toMatchObject({ ruleIndex: 2, trigger: null, tier: '' });
    expect(f.packetsIn).toBe(0);
    expect(decodeFlowUpdate({ flow: encodeFlow(f) })).toEqual(f);
  });

  it('names the bad field of a FlowUpdate', () => {
    const bad = (flow: unknown) => {
      try {
        decodeFlowUpdate({ flow } as Record<string, unknown>);
        return 'accepted';
      } catch (e) {
        return (e as Error).message;
      }
    };
    expect(bad(undefined)).toBe('flow: is required');
    expect(bad({ ...wireFlow, Key: { ...wireFlow.Key, action: 7 } })).toMatch(
      /^flow\.Key\.action: 7 is not one of/,
    );
    expect(bad({ ...wireFlow, end_time: wireFlow.start_time })).toMatch(
      /^flow\.end_time: .* not after start_time/,
    );
    expect(bad({ ...wireFlow, bytes_in: -1 })).toBe('flow.bytes_in: -1 is below 0');
    expect(
      bad({
        ...wireFlow,
        Key: { ...wireFlow.Key, policies: { pending_policies: [{}, { kind: 'Nope' }] } },
      }),
    ).toMatch(/^flow\.Key\.policies\.pending_policies\[1\]\.kind: "Nope"/);
  });

  it('decodes requests and names their bad fields', () => {
    expect(decodeListRequest({}).sortBy).toEqual([]);
    expect(decodeFilter({ dest_ports: [{ port: 80 }], actions: ['Deny'] })).toMatchObject({
      destPorts: [80],
      actions: ['Deny'],
    });
    expect(() => decodeFilter({ dest_ports: [{ port: 80 }, { port: 65536 }] })).toThrow(
      /^filter\.dest_ports\[1\]\.port: 65536 is not a port/,
    );
    expect(() => decodeListRequest({ sort_by: [{ sort_by: 9 }] })).toThrow(/^sort_by\[0\]\.sort_by: 9/);
    expect(() => decodeStreamRequest({ aggregation_interval: 30 }, 15)).toThrow(/^aggregation_interval: 30/);
  });
});
