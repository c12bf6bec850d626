import { EventEmitter } from 'node:events';
import { loggerOf } from '@calico-ts/api/log';
import { describe, expect, it } from 'vitest';
import { onShutdownSignals } from './shutdown.js';

function harness(stop: () => Promise<void>) {
  const events: string[] = [];
  const signals = new EventEmitter();
  const exits: number[] = [];
  const shutdown = onShutdownSignals({
    log: loggerOf((level, msg, f) =>
      events.push(level === 'error' ? `error ${msg}: ${String(f?.err)}` : `${level} ${msg}`),
    ),
    stop: async () => {
      events.push('stop');
      await stop();
    },
    close: [
      async () => events.push('close nft'),
      async () => {
        events.push('close datastore');
        throw new Error('already closed');
      },
    ],
    exit: (code) => exits.push(code),
    signals: signals as unknown as Pick<NodeJS.Process, 'on'>,
  });
  return { events, signals, exits, shutdown };
}

describe('onShutdownSignals', () => {
  it('stops, then closes everything (a close failing does not matter), then exits 0, once', async () => {
    const h = harness(async () => {});
    h.signals.emit('SIGTERM');
    h.signals.emit('SIGINT');
    await h.shutdown('again');
    expect(h.events).toEqual(['info shutting down', 'stop', 'close nft', 'close datastore']);
    expect(h.exits).toEqual([0]);
  });
  it('exits 1 with a log line when stopping fails, closing nothing', async () => {
    const h = harness(async () => {
      throw new Error('stuck');
    });
    await h.shutdown('SIGTERM');
    expect(h.events).toEqual(['info shutting down', 'stop', 'error shutdown failed: stuck']);
    expect(h.exits).toEqual([1]);
  });
});
