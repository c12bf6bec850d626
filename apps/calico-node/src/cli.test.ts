import { describe, expect, it } from 'vitest';
import { parseArgs, parseGoDuration } from './cli.js';
import { isNodeError } from './errors.js';

describe('calico-node flags', () => {
  it('runs everything with no flags, start-up only with -startup', () => {
    expect(parseArgs([])).toEqual({ kind: 'run' });
    expect(parseArgs(['-startup'])).toEqual({ kind: 'startup' });
    expect(parseArgs(['--startup'])).toEqual({ kind: 'startup' });
  });
  it('collects probes and the threshold in Go flag forms', () => {
    expect(parseArgs(['-felix-ready', '-bird-ready'])).toEqual({
      kind: 'probe',
      probes: ['felix-ready', 'bird-ready'],
      thresholdMs: 30_000,
    });
    expect(parseArgs(['--bird-live', '-threshold-time=1m30s'])).toEqual({
      kind: 'probe',
      probes: ['bird-live'],
      thresholdMs: 90_000,
    });
    expect(parseArgs(['-felix-live', '-threshold-time', '500ms'])).toMatchObject({ thresholdMs: 500 });
  });
  it('runs Felix alone with -felix, with its config file', () => {
    expect(parseArgs(['-felix'])).toEqual({ kind: 'felix' });
    expect(parseArgs(['-felix', '-config-file', '/tmp/f.cfg'])).toEqual({
      kind: 'felix',
      configFile: '/tmp/f.cfg',
    });
    expect(parseArgs(['--felix', '--config-file=/tmp/f.cfg'])).toEqual({
      kind: 'felix',
      configFile: '/tmp/f.cfg',
    });
    expect(() => parseArgs(['-felix', '-startup'])).toThrow(/-felix cannot be combined with -startup/);
    expect(() => parseArgs(['-felix', '-felix-ready'])).toThrow(/health checks/);
    expect(() => parseArgs(['-config-file', 'x'])).toThrow(/-config-file is for -felix/);
  });
  it('knows -v and -h', () => {
    expect(parseArgs(['-v'])).toEqual({ kind: 'version' });
    expect(parseArgs(['-help'])).toEqual({ kind: 'help' });
  });
  it('refuses unknown flags as Go does', () => {
    try {
      parseArgs(['-confd']);
      throw new Error('expected a usage error');
    } catch (e) {
      expect(isNodeError(e, 'usage')).toBe(true);
      expect((e as Error).message).toBe('flag provided but not defined: -confd');
    }
  });
  it('parses Go durations', () => {
    expect(parseGoDuration('30s')).toBe(30_000);
    expect(parseGoDuration('1.5h')).toBe(5_400_000);
    expect(() => parseGoDuration('30')).toThrow(/invalid duration "30"/);
    expect(() => parseGoDuration('')).toThrow(/invalid duration/);
  });
});
