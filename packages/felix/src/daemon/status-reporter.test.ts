/** The status reporter's keys and values, and a stop that lets a report being written finish. */
import { describe, expect, it } from 'vitest';
import type { Logger } from '../logging.js';
import { StatusReporter, type StatusStore } from './status-reporter.js';

const PREFIX = '/calico/felix/v2/no-region/host/node-a';

function recordingLog(): { log: Logger; warnings: string[] } {
  const warnings: string[] = [];
  const none = () => {};
  const log = {
    trace: none,
    debug: none,
    info: none,
    warn: (_o: object, msg: string) => warnings.push(msg),
    error: none,
  } as unknown as Logger;
  return { log, warnings };
}

describe('StatusReporter', () => {
  it('writes status with a lease and last_reported_status without, first_update true only the first time', async () => {
    const writes: [string, string, number | undefined][] = [];
    const store: StatusStore = {
      put: async (k, v) => writes.push([k, v, undefined]),
      putWithTTL: async (k, v, ttl) => writes.push([k, v, ttl]),
    };
    let now = 10_000;
    const r = new StatusReporter({
      store,
      prefix: PREFIX,
      intervalSecs: 0,
      ttlSecs: 90,
      startedAt: 4_000,
      now: () => now,
    });
    await r.report();
    now = 12_000;
    await r.report();
    expect(writes.map(([k, , ttl]) => [k, ttl])).toEqual([
      [`${PREFIX}/status`, 90],
      [`${PREFIX}/last_reported_status`, undefined],
      [`${PREFIX}/status`, 90],
      [`${PREFIX}/last_reported_status`, undefined],
    ]);
    expect(JSON.parse(writes[0]![1])).toMatchObject({ uptime: 6, first_update: true });
    expect(JSON.parse(writes[2]![1])).toMatchObject({ uptime: 8, first_update: false });
  });

  it('stop() resolves only after the report being written has finished, so closing the store after it is safe', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let closed = false;
    const done: string[] = [];
    const store: StatusStore = {
      put: async (k) => {
        await gate;
        if (closed) throw new Error('the client is closed');
        done.push(k);
      },
    };
    const { log, warnings } = recordingLog();
    const r = new StatusReporter({ store, prefix: PREFIX, intervalSecs: 60, ttlSecs: 0, startedAt: 0, log });
    r.start(); // the first report starts at once and waits on the gate
    let stopped = false;
    const stopping = r.stop().then(() => {
      stopped = true;
    });
    await new Promise((res) => setTimeout(res, 10));
    expect(stopped).toBe(false);
    release();
    await stopping;
    closed = true;
    expect(done).toEqual([`${PREFIX}/status`, `${PREFIX}/last_reported_status`]);
    expect(warnings).toEqual([]);
  });
});
