import { describe, expect, it } from 'vitest';
import { decrementHandle, handleTotal, incrementHandle } from './handle.js';

describe('handle bookkeeping', () => {
  it('creates, increments per block and totals', () => {
    let h = incrementHandle(undefined, '198.19.0.0/26', 1);
    expect(h).toEqual({ block: { '198.19.0.0/26': 1 }, deleted: false });
    h = incrementHandle(h, '198.19.0.0/26', 2);
    h = incrementHandle(h, 'fd00::/122', 1);
    expect(h.block).toEqual({ '198.19.0.0/26': 3, 'fd00::/122': 1 });
    expect(handleTotal(h)).toBe(4);
  });

  it('decrements, drops a block at zero and the whole handle when empty', () => {
    const h = { block: { '198.19.0.0/26': 2, 'fd00::/122': 1 }, deleted: false };
    const a = decrementHandle(h, '198.19.0.0/26', 1);
    expect(a).toEqual({ handle: { block: { '198.19.0.0/26': 1, 'fd00::/122': 1 }, deleted: false } });
    const b = decrementHandle(a.handle!, '198.19.0.0/26', 1);
    expect(b.handle).toEqual({ block: { 'fd00::/122': 1 }, deleted: false });
    expect(decrementHandle(b.handle!, 'fd00::/122', 1)).toEqual({ handle: null });
    expect(h.block['198.19.0.0/26']).toBe(2);
  });

  it('reports a shortfall instead of going negative', () => {
    const r = decrementHandle({ block: { '198.19.0.0/26': 1 }, deleted: false }, '198.19.0.0/26', 3);
    expect(r).toEqual({ handle: null, shortfall: { had: 1, wanted: 3 } });
    const s = decrementHandle({ block: { 'fd00::/122': 1 }, deleted: false }, '198.19.0.0/26', 1);
    expect(s).toEqual({
      handle: { block: { 'fd00::/122': 1 }, deleted: false },
      shortfall: { had: 0, wanted: 1 },
    });
  });
});
