import { describe, expect, it } from 'vitest';
import { workloadEndpointPortSchema } from './endpoints.js';
import {
  formatGoDuration,
  goASNumberValue,
  goDurationValue,
  goFieldInfo,
  goPortValue,
  goTimeValue,
  goUint8OrStringValue,
  parseGoDuration,
} from './go-encoding.js';
import { globalNetworkPolicySpecSchema } from './policy.js';
import { entityRuleSchema, portSchema, protocolSchema, ruleSchema } from './rule.js';

describe('metav1.Duration', () => {
  it.each([
    ['90s', '1m30s'],
    ['1h', '1h0m0s'],
    ['5m', '5m0s'],
    ['0', '0s'],
    ['0s', '0s'],
    ['1.5h', '1h30m0s'],
    ['300ms', '300ms'],
    ['1500ms', '1.5s'],
    ['2h45m30.5s', '2h45m30.5s'],
    ['1us', '1µs'],
    ['1.5µs', '1.5µs'],
    ['10ns', '10ns'],
    ['100000s', '27h46m40s'],
    ['-3s', '-3s'],
    ['.5s', '500ms'],
    ['1.s', '1s'],
  ])('stores %s as %s, as Go prints it', (given, stored) => {
    expect(goDurationValue(given)).toBe(stored);
  });

  it('refuses what time.ParseDuration refuses, leaving the text as it is', () => {
    for (const bad of ['', '5', 's', '.s', '1d', '1mh', '1ms5', '--1s', '9223372036854775808ns']) {
      expect(parseGoDuration(bad), bad).toBeUndefined();
      expect(goDurationValue(bad)).toBe(bad);
    }
  });

  it('formats the extremes of a Go duration', () => {
    expect(formatGoDuration((1n << 63n) - 1n)).toBe('2562047h47m16.854775807s');
    expect(formatGoDuration(1n)).toBe('1ns');
  });
});

describe('upstream value forms', () => {
  it('numorstring.Port: a single port is a number, a range stays "min:max", a name stays a name', () => {
    expect(goPortValue('80')).toBe(80);
    expect(goPortValue('0080')).toBe(80);
    expect(goPortValue('80:80')).toBe(80);
    expect(goPortValue('010:020')).toBe('10:20');
    expect(goPortValue('http')).toBe('http');
    expect(goPortValue(443)).toBe(443);
  });

  it('Uint8OrString: digits that fit a byte are a number', () => {
    expect(goUint8OrStringValue('6')).toBe(6);
    expect(goUint8OrStringValue('TCP')).toBe('TCP');
    expect(goUint8OrStringValue('256')).toBe('256');
    expect(goUint8OrStringValue(17)).toBe(17);
  });

  it('ASNumber: always a number, dotted high.low included', () => {
    expect(goASNumberValue('64512')).toBe(64512);
    expect(goASNumberValue('1.10')).toBe(65546);
    expect(goASNumberValue('65535.65535')).toBe(4294967295);
    expect(goASNumberValue(65000)).toBe(65000);
  });

  it('metav1.Time: UTC, whole seconds', () => {
    expect(goTimeValue('2026-01-02T03:04:05Z')).toBe('2026-01-02T03:04:05Z');
    expect(goTimeValue('2026-01-02T04:04:05.999+01:00')).toBe('2026-01-02T03:04:05Z');
    expect(goTimeValue('not a time')).toBe('not a time');
  });
});

describe('Go field facts beside the schemas', () => {
  const shape = (s: unknown) => (s as { shape: Record<string, unknown> }).shape;

  it('default to the zod type and read through optional wrappers', () => {
    expect(goFieldInfo(shape(ruleSchema).protocol)).toEqual({ value: 'uint8OrString' });
    expect(goFieldInfo(shape(entityRuleSchema).ports)).toEqual({});
    expect(goFieldInfo(portSchema)).toEqual({ value: 'port' });
    expect(goFieldInfo(shape(ruleSchema).source)).toEqual({ omit: 'zero' });
    expect(goFieldInfo(shape(globalNetworkPolicySpecSchema).doNotTrack)).toEqual({ omit: 'empty' });
  });

  it('never change a schema shared by other fields', () => {
    expect(goFieldInfo(shape(workloadEndpointPortSchema).protocol)).toEqual({
      omit: 'never',
      value: 'uint8OrString',
    });
    expect(goFieldInfo(protocolSchema)).toEqual({ value: 'uint8OrString' });
  });
});
