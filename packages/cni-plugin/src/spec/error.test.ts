import { describe, expect, it } from 'vitest';
import { CNI_PLUGIN_ERROR_CODES, CniPluginError } from '../errors.js';
import { CNI_ERROR_NUMBERS, formatJson, toCniErrorObject } from './error.js';

describe('the error table', () => {
  it('maps every code, and the spec’s well-known ones to their numbers', () => {
    expect(Object.keys(CNI_ERROR_NUMBERS).sort()).toEqual([...CNI_PLUGIN_ERROR_CODES].sort());
    expect(CNI_ERROR_NUMBERS['incompatible-version']).toBe(1);
    expect(CNI_ERROR_NUMBERS['unsupported-field']).toBe(2);
    expect(CNI_ERROR_NUMBERS['unknown-container']).toBe(3);
    expect(CNI_ERROR_NUMBERS['invalid-env']).toBe(4);
    expect(CNI_ERROR_NUMBERS['io-failure']).toBe(5);
    expect(CNI_ERROR_NUMBERS['decode-failed']).toBe(6);
    expect(CNI_ERROR_NUMBERS['invalid-config']).toBe(7);
    expect(CNI_ERROR_NUMBERS['try-again']).toBe(11);
    expect(CNI_ERROR_NUMBERS['plugin-not-available']).toBe(50);
    expect(CNI_ERROR_NUMBERS['limited-connectivity']).toBe(51);
  });

  it('numbers 1-99 are only the well-known ones', () => {
    const used = Object.values(CNI_ERROR_NUMBERS).filter(
      (n): n is number => typeof n === 'number' && n < 100,
    );
    for (const n of used) expect([1, 2, 3, 4, 5, 6, 7, 8, 11, 50, 51]).toContain(n);
  });
});

describe('toCniErrorObject', () => {
  it('keeps code, message and details', () => {
    expect(
      toCniErrorObject(new CniPluginError('invalid-config', 'name: missing', { details: 'x' }), '0.3.1'),
    ).toEqual({
      cniVersion: '0.3.1',
      code: 7,
      msg: 'name: missing',
      details: 'x',
    });
  });

  it('passes a delegate’s code through, 999 when it had none', () => {
    expect(
      toCniErrorObject(new CniPluginError('delegate-failed', 'calico-ipam: boom', { delegateCode: 11 })).code,
    ).toBe(11);
    expect(toCniErrorObject(new CniPluginError('delegate-failed', 'calico-ipam: boom')).code).toBe(999);
  });

  it('turns anything else into an internal error with its message only', () => {
    const o = toCniErrorObject(new TypeError('x is undefined'));
    expect(o).toEqual({ cniVersion: '1.1.0', code: 999, msg: 'x is undefined' });
    expect(JSON.stringify(o)).not.toContain('at ');
  });

  it('prints indented JSON with a trailing newline', () => {
    expect(formatJson({ a: 1 })).toBe('{\n    "a": 1\n}\n');
  });
});
