/** The status file and the -r/-l probes, and the env duration parsing. */
import { describe, expect, it } from 'vitest';
import { durationMs } from './main.js';
import { checkStatus, renderStatus } from './status.js';

describe('status file', () => {
  it('is ready once every running controller reconciled; unavailable ones are listed but do not block', () => {
    const before = renderStatus([{ name: 'namespace' }], ['node']);
    expect(before).toEqual({
      Readiness: false,
      Conditions: {
        namespace: { Ready: false, Reason: 'not reconciled yet' },
        node: { Ready: false, Reason: 'not available in this version' },
      },
    });
    expect(checkStatus('-r', JSON.stringify(before))).toEqual({
      code: 1,
      message: 'not ready: namespace: not reconciled yet; node: not available in this version',
    });
    const after = renderStatus(
      [
        {
          name: 'namespace',
          lastReconciled: 1,
          lastReport: { created: 1, updated: 0, deleted: 0, failed: [] },
        },
      ],
      ['node'],
    );
    expect(after.Readiness).toBe(true);
    expect(checkStatus('-r', JSON.stringify(after))).toEqual({ code: 0, message: 'ready' });
  });

  it('probes fail without a status file or with a broken one; liveness needs only the file', () => {
    expect(checkStatus('-r', undefined).code).toBe(1);
    expect(checkStatus('-l', undefined).code).toBe(1);
    expect(checkStatus('-r', '{nope').message).toBe('status file is not JSON');
    expect(checkStatus('-l', JSON.stringify(renderStatus([{ name: 'policy' }], [])))).toEqual({
      code: 0,
      message: 'live',
    });
  });

  it('reads Go durations', () => {
    expect(durationMs('5m')).toBe(300_000);
    expect(durationMs('30s')).toBe(30_000);
    expect(durationMs('soon')).toBeUndefined();
    expect(durationMs('1m30s')).toBe(90_000);
    expect(durationMs('1.5s')).toBe(1500);
    expect(durationMs('0s')).toBe(0);
    expect(durationMs('0')).toBe(0);
    expect(durationMs('5')).toBeUndefined();
  });
});
