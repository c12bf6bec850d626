import { describe, expect, it } from 'vitest';
import type { CniPluginError } from '../errors.js';
import {
  compareVersions,
  negotiateVersion,
  requireCommandInVersion,
  resultShape,
  SUPPORTED_VERSIONS,
  versionAllowsCommand,
} from './versions.js';

function codeOf(f: () => unknown): string {
  try {
    f();
    return 'ok';
  } catch (e) {
    return (e as CniPluginError).code;
  }
}

describe('versions', () => {
  it('supports 0.1.0 to 1.1.0', () => {
    expect(SUPPORTED_VERSIONS).toEqual(['0.1.0', '0.2.0', '0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0']);
  });

  it('compares numerically', () => {
    expect(compareVersions('0.10.0', '0.4.0')).toBe(1);
    expect(compareVersions('1.0.0', '1.0.0')).toBe(0);
    expect(compareVersions('0.3.1', '0.4.0')).toBe(-1);
    expect(compareVersions('x', '0.4.0')).toBeUndefined();
  });

  it('negotiates: cniVersion first, else the highest supported of cniVersions, else the default', () => {
    expect(negotiateVersion('0.3.1')).toBe('0.3.1');
    expect(negotiateVersion(undefined)).toBe('0.2.0');
    expect(negotiateVersion('')).toBe('0.2.0');
    expect(negotiateVersion(undefined, ['1.0.0', '1.1.0', '2.0.0'])).toBe('1.1.0');
    expect(negotiateVersion('9.9.9', ['0.4.0', '1.0.0'])).toBe('1.0.0');
    expect(codeOf(() => negotiateVersion('2.0.0'))).toBe('incompatible-version');
    expect(codeOf(() => negotiateVersion('0.5.0', ['3.0.0']))).toBe('incompatible-version');
    expect(codeOf(() => negotiateVersion(1))).toBe('invalid-config');
    expect(codeOf(() => negotiateVersion(undefined, '1.0.0'))).toBe('invalid-config');
  });

  it('names what was asked and what is supported', () => {
    try {
      negotiateVersion('0.5.0');
    } catch (e) {
      expect((e as CniPluginError).message).toBe('incompatible CNI versions: config is "0.5.0"');
      expect((e as CniPluginError).details).toContain(
        '"0.1.0","0.2.0","0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"',
      );
    }
  });

  it('commands by version: CHECK from 0.4.0, GC and STATUS from 1.1.0', () => {
    const table = SUPPORTED_VERSIONS.map((v) => [
      v,
      versionAllowsCommand(v, 'CHECK'),
      versionAllowsCommand(v, 'GC'),
      versionAllowsCommand(v, 'STATUS'),
    ]);
    expect(table).toEqual([
      ['0.1.0', false, false, false],
      ['0.2.0', false, false, false],
      ['0.3.0', false, false, false],
      ['0.3.1', false, false, false],
      ['0.4.0', true, false, false],
      ['1.0.0', true, false, false],
      ['1.1.0', true, true, true],
    ]);
    expect(codeOf(() => requireCommandInVersion('0.3.1', 'CHECK'))).toBe('incompatible-version');
    expect(codeOf(() => requireCommandInVersion('0.1.0', 'ADD'))).toBe('ok');
  });

  it('result shapes', () => {
    expect(SUPPORTED_VERSIONS.map(resultShape)).toEqual([
      'legacy',
      'legacy',
      'v03',
      'v03',
      'v03',
      'v1',
      'v1',
    ]);
  });
});
