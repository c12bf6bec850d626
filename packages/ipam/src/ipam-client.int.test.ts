/**
 * IpamClient against a real etcd: many clients (one per request, as CNI invocations are) racing on
 * the same records, checked through the real `etcdctl`.
 */

import { EtcdKVStore } from '@calico-ts/datastore/etcd3';
import { parseJsonExact } from '@calico-ts/datastore/internal';
import { type EtcdServer, etcdAvailable, startEtcd } from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AssignedIP } from './client/types.js';
import { type IpamFixture, ipamFixture } from './testing-internal/ipam-fixture.js';

const HOSTS = ['node-1', 'node-2', 'node-3'];
const UPSTREAM_BLOCK_FIELDS = [
  'cidr',
  'affinity',
  'affinity_claim_time',
  'allocations',
  'unallocated',
  'attributes',
  'sequenceNumber',
  'sequenceNumberForAllocation',
  'deleted',
];

/** `etcdctl get --prefix` output as key → raw value text. */
function parseEtcdctlGet(stdout: string): Map<string, string> {
  const lines = stdout.split('\n');
  const out = new Map<string, string>();
  for (let i = 0; i + 1 < lines.length; i += 2) {
    if (lines[i] === '') break;
    out.set(lines[i]!, lines[i + 1]!);
  }
  return out;
}

describe.skipIf(!etcdAvailable())('IpamClient on a real etcd', () => {
  let etcd: EtcdServer;
  const stores: EtcdKVStore[] = [];
  let admin: IpamFixture;

  /** A client with its own etcd connection, as a separate CNI invocation would have. */
  function separateClient(): IpamFixture {
    const kv = new EtcdKVStore({ endpoints: etcd.endpoints });
    stores.push(kv);
    return ipamFixture(kv, 'etcdv3');
  }

  async function etcdctlGet(prefix: string): Promise<Map<string, string>> {
    const r = await etcd.etcdctl(['get', '--prefix', prefix]);
    expect(r.code, r.stderr).toBe(0);
    return parseEtcdctlGet(r.stdout);
  }

  beforeAll(async () => {
    etcd = await startEtcd();
    admin = separateClient();
    for (const h of HOSTS) await admin.node(h);
    await admin.pool('default-ipv4-ippool', { cidr: '198.19.0.0/16' });
  });

  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close().catch(() => undefined)));
    await etcd?.stop();
  });

  const requests = [
    ...Array.from({ length: 30 }, (_, i) => ({ host: 'node-1', handle: `k8s-pod-network.one-host-${i}` })),
    ...Array.from({ length: 30 }, (_, i) => ({ host: HOSTS[i % 3]!, handle: `k8s-pod-network.spread-${i}` })),
  ];
  const results = new Map<string, AssignedIP>();

  it('gives 60 concurrent requests from separate clients 60 distinct addresses from their hosts’ blocks', async () => {
    const got = await Promise.all(
      requests.map(async (r) => {
        const res = await separateClient().client.autoAssign({
          num4: 1,
          num6: 0,
          handleId: r.handle,
          hostname: r.host,
          attrs: {
            node: r.host,
            namespace: 'default',
            pod: r.handle,
            timestamp: '2026-01-02 03:04:05 +0000 UTC',
          },
        });
        return { ...r, ip: res.ipv4[0]! };
      }),
    );
    for (const g of got) results.set(g.handle, g.ip);
    const addresses = got.map((g) => g.ip.address);
    expect(new Set(addresses).size).toBe(60);
    expect(got.every((g) => g.ip.prefixLength === 26 && g.ip.cidr === `${g.ip.address}/26`)).toBe(true);

    // One block per host was enough, and every address came from its own host's block.
    const affinities = await etcdctlGet('/calico/ipam/v2/host/');
    for (const h of HOSTS) {
      const mine = [...affinities.keys()].filter((k) =>
        k.startsWith(`/calico/ipam/v2/host/${h}/ipv4/block/`),
      );
      expect(mine, h).toHaveLength(1);
      expect(affinities.get(mine[0]!)).toBe('{"state":"confirmed","deleted":false}');
    }
    const blocks = await etcdctlGet('/calico/ipam/v2/assignment/');
    expect(blocks.size).toBe(3);
    const affinityOf = new Map<string, string>();
    for (const [key, text] of blocks) {
      expect(key).toMatch(/^\/calico\/ipam\/v2\/assignment\/ipv4\/block\/198\.19\.\d+\.\d+-26$/);
      // Upstream's JSON: field order, exact 64-bit integers, no stray fields.
      expect(text).toMatch(/"sequenceNumber":\d{19},/);
      const b = parseJsonExact(text) as Record<string, unknown>;
      expect(Object.keys(b)).toEqual(UPSTREAM_BLOCK_FIELDS);
      expect(b.cidr).toBe(key.slice(key.lastIndexOf('/') + 1).replace('-', '/'));
      expect(b.allocations as unknown[]).toHaveLength(64);
      expect(b.deleted).toBe(false);
      affinityOf.set(b.cidr as string, b.affinity as string);
      const used = (b.allocations as (number | null)[]).filter((a) => a !== null).length;
      expect((b.unallocated as number[]).length).toBe(64 - used);
      for (const attr of b.attributes as { handle_id: string; secondary: Record<string, string> }[]) {
        expect(Object.keys(attr)).toEqual(['handle_id', 'secondary']);
        expect(Object.keys(attr.secondary)).toEqual(['namespace', 'node', 'pod', 'timestamp']);
        expect(`host:${attr.secondary.node}`).toBe(b.affinity);
      }
    }
    for (const g of got) expect(affinityOf.get(g.ip.block)).toBe(`host:${g.host}`);

    const handles = await etcdctlGet('/calico/ipam/v2/handle/');
    expect(handles.size).toBe(60);
    const one = results.get('k8s-pod-network.one-host-0')!;
    expect(handles.get('/calico/ipam/v2/handle/k8s-pod-network.one-host-0')).toBe(
      `{"block":{"${one.block}":1},"deleted":false}`,
    );

    const report = await admin.client.check();
    expect(report.ok).toBe(true);
    expect(report.summary).toEqual({ blocks: 3, allocations: 60, handles: 60, affinities: 3 });
  }, 120_000);

  it('releasing every handle concurrently, twice, leaves no allocation and no handle', async () => {
    expect(results.size).toBe(60);
    const released = await Promise.all(
      requests.map((r) => separateClient().client.releaseByHandle(r.handle)),
    );
    expect(released.map((r) => r.released)).toEqual(requests.map((r) => [results.get(r.handle)!.address]));
    const again = await Promise.all(requests.map((r) => separateClient().client.releaseByHandle(r.handle)));
    expect(again.every((r) => r.released.length === 0)).toBe(true);

    expect((await etcdctlGet('/calico/ipam/v2/handle/')).size).toBe(0);
    const blocks = await etcdctlGet('/calico/ipam/v2/assignment/');
    expect(blocks.size).toBe(3);
    for (const text of blocks.values()) {
      const b = parseJsonExact(text) as Record<string, unknown>;
      expect((b.allocations as unknown[]).every((a) => a === null)).toBe(true);
      expect(b.attributes).toEqual([]);
      expect(b.sequenceNumberForAllocation).toEqual({});
      expect([...(b.unallocated as number[])].sort((x, y) => x - y)).toEqual(
        Array.from({ length: 64 }, (_, i) => i),
      );
    }
    expect((await admin.client.check()).ok).toBe(true);

    // Giving up the hosts' affinities removes the empty blocks too: nothing of IPAM is left.
    for (const h of HOSTS) await admin.client.releaseHostAffinities(h);
    expect((await etcdctlGet('/calico/ipam/')).size).toBe(0);
  }, 120_000);
});
