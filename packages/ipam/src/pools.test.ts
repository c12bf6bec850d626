import type { IPPool, IPPoolSpec } from '@calico-ts/api';
import { formatCidr, parseIP } from '@calico-ts/api/net';
import { describe, expect, it } from 'vitest';

import { type PoolRequest, poolForIp, selectPools, usablePools } from './pools.js';

const pool = (name: string, spec: Partial<IPPoolSpec> & { cidr: string }): IPPool => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'IPPool',
  metadata: { name },
  spec,
});

const all = usablePools([
  pool('z-default', { cidr: '198.19.0.0/16' }),
  pool('a-rack1', { cidr: '198.18.128.0/20', nodeSelector: 'rack == "1"' }),
  pool('off', { cidr: '198.18.64.0/20', disabled: true }),
  pool('manual', { cidr: '198.18.32.0/20', assignmentMode: 'Manual' }),
  pool('tunnel-only', { cidr: '198.18.16.0/24', allowedUses: ['Tunnel'] }),
  pool('prod-ns', { cidr: '198.18.48.0/20', namespaceSelector: 'env == "prod"' }),
  pool('v6', { cidr: 'fd00:1::/64' }),
]);

const req = (over: Partial<PoolRequest> = {}): PoolRequest => ({
  family: 4,
  nodeLabels: {},
  use: 'Workload',
  ...over,
});
const names = (ps: { name: string }[]) => ps.map((p) => p.name);

describe('usablePools', () => {
  it('applies pool defaults and sorts by name', () => {
    expect(names(all)).toEqual(['a-rack1', 'manual', 'off', 'prod-ns', 'tunnel-only', 'v6', 'z-default']);
    const v6 = all.find((p) => p.name === 'v6')!;
    expect(v6.blockSize).toBe(122);
    expect(formatCidr(v6.cidr)).toBe('fd00:1::/64');
    expect(all.find((p) => p.name === 'z-default')!.blockSize).toBe(26);
  });
});

describe('selectPools', () => {
  it('picks enabled Automatic Workload pools whose selectors match', () => {
    expect(names(selectPools(all, req()))).toEqual(['z-default']);
    expect(names(selectPools(all, req({ nodeLabels: { rack: '1' } })))).toEqual(['a-rack1', 'z-default']);
    expect(names(selectPools(all, req({ namespaceLabels: { env: 'prod' } })))).toEqual([
      'prod-ns',
      'z-default',
    ]);
    expect(names(selectPools(all, req({ family: 6 })))).toEqual(['v6']);
  });

  it('honours requested pools by name or CIDR, ignoring selectors and assignment mode', () => {
    expect(names(selectPools(all, req({ requested: ['a-rack1'] })))).toEqual(['a-rack1']);
    expect(names(selectPools(all, req({ requested: ['198.18.32.0/20'] })))).toEqual(['manual']);
  });

  it('refuses requested pools that are missing, disabled or of the other family, naming them', () => {
    expect(() => selectPools(all, req({ requested: ['nope'] }))).toThrow(
      expect.objectContaining({ code: 'no-pools', message: 'requested IP pool "nope" does not exist' }),
    );
    expect(() => selectPools(all, req({ requested: ['off'] }))).toThrow(/"off" is disabled/);
    expect(() => selectPools(all, req({ requested: ['v6'] }))).toThrow(/"v6" is not an IPv4 pool/);
  });

  it('filters by allowed use', () => {
    expect(() => selectPools(all, req({ requested: ['tunnel-only'] }))).toThrow(
      expect.objectContaining({ code: 'no-pools', message: expect.stringContaining('allows use Workload') }),
    );
    expect(names(selectPools(all, req({ use: 'Tunnel' })))).toEqual(['tunnel-only', 'z-default']);
  });

  it('explains when nothing qualifies', () => {
    const only = usablePools([pool('r', { cidr: '198.19.0.0/16', nodeSelector: 'rack == "2"' })]);
    expect(() => selectPools(only, req())).toThrow(
      /no enabled IPv4 IP pool selects this node and namespace \(checked r \(198\.19\.0\.0\/16\)\)/,
    );
    expect(() => selectPools(usablePools([]), req({ family: 6 }))).toThrow('no enabled IPv6 IP pool exists');
  });
});

describe('poolForIp', () => {
  it('finds the pool holding an address, disabled ones included', () => {
    expect(poolForIp(all, parseIP('198.18.64.9')!)?.name).toBe('off');
    expect(poolForIp(all, parseIP('fd00:1::9')!)?.name).toBe('v6');
    expect(poolForIp(all, parseIP('10.0.0.1')!)).toBeUndefined();
  });
});
