/** The shared Syncer over the memory store: list, watch, resync, in-sync once, decoded KV sources. */
import type { GlobalNetworkSet } from '@calico-ts/api';
import { describe, expect, it } from 'vitest';
import { blockKey, decodeBlock, encodeBlock } from './ipam-records.js';
import { MemoryKVStore } from './kv/memory-kv-store.js';
import { KVDatastore } from './kv-datastore.js';
import { kvSource, resourceSource, Syncer, type SyncerUpdate } from './syncer.js';

const gns = (name: string, nets: string[]): GlobalNetworkSet => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'GlobalNetworkSet',
  metadata: { name },
  spec: { nets },
});

function block(cidr: string, host: string) {
  return {
    cidr,
    affinity: `host:${host}`,
    allocations: Array(64).fill(null),
    unallocated: Array.from({ length: 64 }, (_, i) => i),
    attributes: [],
    sequenceNumber: 0n,
    sequenceNumberForAllocation: null,
    deleted: false,
  };
}

async function until(what: string, f: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('Syncer', () => {
  it('lists every source, reports in-sync once, then follows each watch in order', async () => {
    const kv = new MemoryKVStore();
    const ds = new KVDatastore(kv, { backend: 'memory' });
    await ds.create(gns('a', ['198.18.1.0/24']));
    await kv.create(blockKey('198.19.0.0/26'), encodeBlock(block('198.19.0.0/26', 'n1')));
    const updates: string[] = [];
    let inSync = 0;
    const syncer = new Syncer({
      sources: [
        resourceSource(ds, 'GlobalNetworkSet'),
        kvSource('ipam-blocks', kv, '/calico/ipam/v2/assignment/', decodeBlock),
      ],
      onUpdate: (u: SyncerUpdate) => {
        const item = u.item as { metadata?: { name: string }; key?: string };
        updates.push(`${u.kind} ${u.source} ${item.metadata?.name ?? item.key}`);
      },
      onInSync: () => {
        inSync++;
        updates.push('in-sync');
      },
    });
    syncer.start();
    await until('in-sync', () => inSync === 1);
    await ds.create(gns('b', []));
    await ds.delete('GlobalNetworkSet', 'a');
    await kv.delete(blockKey('198.19.0.0/26'));
    await until('events', () => updates.length >= 6);
    await syncer.stop();
    expect(
      updates
        .filter((u) => u !== 'in-sync')
        .slice(0, 2)
        .sort(),
    ).toEqual([
      'set GlobalNetworkSet a',
      'set ipam-blocks /calico/ipam/v2/assignment/ipv4/block/198.19.0.0-26',
    ]);
    expect(updates.slice(3)).toEqual(
      expect.arrayContaining([
        'set GlobalNetworkSet b',
        'delete GlobalNetworkSet a',
        'delete ipam-blocks /calico/ipam/v2/assignment/ipv4/block/198.19.0.0-26',
      ]),
    );
    expect(inSync).toBe(1);
  });

  it('after a compaction, replaces what it held: deletes what is gone, sets what is there', async () => {
    const kv = new MemoryKVStore({ historyLimit: 1 });
    const ds = new KVDatastore(kv, { backend: 'memory' });
    await ds.create(gns('keep', []));
    await ds.create(gns('gone', []));
    const held = new Map<string, unknown>();
    let watching = false;
    const source = resourceSource(ds, 'GlobalNetworkSet');
    // A source whose first watch starts from a revision that is compacted by then.
    const stale = {
      ...source,
      list: async () => {
        const l = await source.list();
        if (watching) return l;
        watching = true;
        await ds.delete('GlobalNetworkSet', 'gone');
        await ds.create(gns('new', []));
        await kv.compact(await kv.revision());
        return l;
      },
    };
    const syncer = new Syncer({
      sources: [stale],
      onUpdate: (u) => {
        const name = (u.item as { metadata: { name: string } }).metadata.name;
        if (u.kind === 'set') held.set(name, u.item);
        else held.delete(name);
      },
      onInSync: () => {},
    });
    syncer.start();
    await until('resync', () => held.has('new') && !held.has('gone'));
    await syncer.stop();
    expect([...held.keys()].sort()).toEqual(['keep', 'new']);
  });

  it('is in sync at once with no sources, and refuses two sources of one name', () => {
    let inSync = false;
    new Syncer({ sources: [], onUpdate: () => {}, onInSync: () => (inSync = true) }).start();
    expect(inSync).toBe(true);
    const ds = new KVDatastore(new MemoryKVStore(), { backend: 'memory' });
    expect(
      () =>
        new Syncer({
          sources: [resourceSource(ds, 'IPPool'), resourceSource(ds, 'IPPool')],
          onUpdate: () => {},
          onInSync: () => {},
        }),
    ).toThrow(/two sources named IPPool/);
  });
});
