import { describe, expect, it } from 'vitest';
import {
  affinityForHost,
  assignOrdinalInBlock,
  autoAssignInBlock,
  newBlock,
  WINDOWS_RESERVED_HANDLE,
} from '../block/allocation-block.js';
import { parseNetwork } from '../block/ip-math.js';
import { ReservedAddresses } from '../block/reservations.js';
import type { AllocationBlock, IpamHandle } from '../block/types.js';
import { buildCheckReport, type IpamSnapshot } from './check-report.js';

const none = ReservedAddresses.none;
const block = (cidr: string, host: string | null) =>
  newBlock(parseNetwork(cidr)!, { affinity: host ? affinityForHost(host) : null, sequenceNumber: 1n });
const assign = (b: AllocationBlock, n: number, handle: string | null, node = 'node-1') =>
  autoAssignInBlock(b, n, handle, { node }, none).block;
const handle = (block: Record<string, number>): IpamHandle => ({ block, deleted: false });

function snapshot(over: Partial<IpamSnapshot>): IpamSnapshot {
  return { blocks: [], handles: new Map(), affinities: [], nodes: new Set(['node-1', 'node-2']), ...over };
}

describe('buildCheckReport', () => {
  it('is clean for consistent records', () => {
    let b = assign(block('198.19.0.0/26', 'node-1'), 2, 'pod-a');
    b = assign(b, 1, 'pod-b');
    const r = buildCheckReport(
      snapshot({
        blocks: [b],
        handles: new Map([
          ['pod-a', handle({ '198.19.0.0/26': 2 })],
          ['pod-b', handle({ '198.19.0.0/26': 1 })],
        ]),
        affinities: [{ host: 'node-1', cidr: '198.19.0.0/26', state: 'confirmed' }],
      }),
    );
    expect(r.ok).toBe(true);
    expect(r.summary).toEqual({ blocks: 1, allocations: 3, handles: 2, affinities: 1 });
  });

  it('reports allocations whose handle record is missing, or that have no handle', () => {
    let b = assign(block('198.19.0.0/26', 'node-1'), 1, 'gone', 'node-1');
    b = assignOrdinalInBlock(b, 5, null, { node: 'node-1' });
    const r = buildCheckReport(snapshot({ blocks: [b] }));
    expect(r.ok).toBe(false);
    expect(r.leakedAddresses).toEqual([
      { ip: '198.19.0.0', block: '198.19.0.0/26', handleId: 'gone', attrs: { node: 'node-1' } },
      { ip: '198.19.0.5', block: '198.19.0.0/26', handleId: null, attrs: { node: 'node-1' } },
    ]);
  });

  it('does not count Windows reservations as leaks', () => {
    const b = autoAssignInBlock(
      block('198.19.0.0/26', 'node-1'),
      3,
      WINDOWS_RESERVED_HANDLE,
      null,
      none,
    ).block;
    expect(buildCheckReport(snapshot({ blocks: [b] })).ok).toBe(true);
  });

  it('reports handles that hold nothing and handles whose counts disagree with the blocks', () => {
    const b1 = assign(block('198.19.0.0/26', 'node-1'), 2, 'pod-a');
    const b2 = assign(block('198.19.0.64/26', 'node-2'), 1, 'pod-a', 'node-2');
    const r = buildCheckReport(
      snapshot({
        blocks: [b1, b2],
        handles: new Map([
          ['pod-a', handle({ '198.19.0.0/26': 3, '198.19.1.0/26': 1 })],
          ['empty', handle({ '198.19.0.0/26': 1 })],
        ]),
      }),
    );
    expect(r.handlesWithoutAllocations).toEqual([{ handleId: 'empty', recorded: { '198.19.0.0/26': 1 } }]);
    expect(r.handleCountMismatches).toEqual([
      { handleId: 'pod-a', block: '198.19.0.0/26', recorded: 3, actual: 2 },
      { handleId: 'pod-a', block: '198.19.0.64/26', recorded: 0, actual: 1 },
      { handleId: 'pod-a', block: '198.19.1.0/26', recorded: 1, actual: 0 },
    ]);
  });

  it('reports blocks and affinities of hosts that have no Node, and affinities that dangle', () => {
    const r = buildCheckReport(
      snapshot({
        blocks: [
          block('198.19.0.0/26', 'node-9'),
          block('198.19.0.64/26', 'node-2'),
          block('198.19.0.128/26', null),
        ],
        affinities: [
          { host: 'node-9', cidr: '198.19.0.0/26', state: 'confirmed' },
          { host: 'node-1', cidr: '198.19.0.64/26', state: 'confirmed' },
          { host: 'node-1', cidr: '198.19.1.0/26', state: 'confirmed' },
          { host: 'node-1', cidr: '198.19.2.0/26', state: 'pending' },
        ],
      }),
    );
    expect(r.blocksWithMissingNode).toEqual([{ block: '198.19.0.0/26', node: 'node-9' }]);
    expect(r.danglingAffinities).toEqual([
      { host: 'node-1', cidr: '198.19.0.64/26', reason: 'block-affine-elsewhere' },
      { host: 'node-1', cidr: '198.19.1.0/26', reason: 'block-missing' },
      { host: 'node-9', cidr: '198.19.0.0/26', reason: 'node-missing' },
    ]);
  });
});
