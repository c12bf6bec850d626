import { describe, expect, it } from 'vitest';
import { type Logger, loggerOf, NOOP_LOGGER, withFields } from './log.js';

function recorder() {
  const lines: { level: string; msg: string; fields?: Readonly<Record<string, unknown>> }[] = [];
  const log = loggerOf((level, msg, fields) => lines.push({ level, msg, ...(fields ? { fields } : {}) }));
  return { lines, log };
}

describe('Logger', () => {
  it('takes a message alone, or fields then a message, at each level', () => {
    const { lines, log } = recorder();
    log.info('BIRD started');
    log.warn({ node: 'n2' }, 'node has no tunnel address yet');
    log.error({ code: 7 });
    log.debug('detail');
    expect(lines).toEqual([
      { level: 'info', msg: 'BIRD started' },
      { level: 'warn', msg: 'node has no tunnel address yet', fields: { node: 'n2' } },
      { level: 'error', msg: '', fields: { code: 7 } },
      { level: 'debug', msg: 'detail' },
    ]);
  });

  it('withFields adds its fields to every line; a call’s own fields win', () => {
    const { lines, log } = recorder();
    const child = withFields(log, { ContainerID: 'c1', HandleID: 'h' });
    child.info('assigned');
    child.warn({ HandleID: 'h2', IP: '198.19.0.5' }, 'reassigned');
    expect(lines).toEqual([
      { level: 'info', msg: 'assigned', fields: { ContainerID: 'c1', HandleID: 'h' } },
      { level: 'warn', msg: 'reassigned', fields: { ContainerID: 'c1', HandleID: 'h2', IP: '198.19.0.5' } },
    ]);
  });

  it('accepts a pino-shaped logger as it is, and NOOP_LOGGER writes nothing', () => {
    // pino's LogFn overloads: (obj, msg?, ...args) and (msg, ...args).
    interface PinoLike {
      info(obj: object, msg?: string, ...args: unknown[]): void;
      info(msg: string, ...args: unknown[]): void;
    }
    const seen: unknown[][] = [];
    const pinoInfo: PinoLike['info'] = (...args: unknown[]) => void seen.push(args);
    const log: Logger = { ...NOOP_LOGGER, info: pinoInfo };
    withFields(log, { component: 'bird' }).info('up');
    expect(seen).toEqual([[{ component: 'bird' }, 'up']]);
    expect(() => NOOP_LOGGER.error({ a: 1 }, 'x')).not.toThrow();
  });
});
