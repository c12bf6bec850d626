import { describe, expect, it } from 'vitest';
import { parseIP } from '../net/cidr.js';
import { convertName, convertNameNoDots, ipToName, normalizeName, workloadEndpointName } from './names.js';

describe('v1 → v3 name normalisation', () => {
  it.each([
    ['abc---def', 'abc---def', 'abc---def'],
    ['Abcdef', 'abcdef', 'abcdef'],
    ['abc/def', 'abc.def', 'abc-def'],
    ['abc$!$def', 'abc-def', 'abc-def'],
    ['abc...def', 'abc.def', 'abc-def'],
    ['abc-.-def', 'abc.def', 'abc-def'],
    ['-.abc.def', 'abc.def', 'abc-def'],
    ['abc.def.-', 'abc.def', 'abc-def'],
    ['$ABC/DeF-123.-456!', 'abc.def-123.456', 'abc-def-123-456'],
  ])('%s → %s (no dots: %s)', (input, withDots, noDots) => {
    expect(normalizeName(input)).toBe(withDots);
    expect(convertNameNoDots(input).replace(/-[0-9a-f]{8}$/, '')).toBe(noDots);
  });

  it('qualifies a changed name with the first 8 hex digits of SHA-1 of the original', () => {
    expect(convertName('abc-def')).toBe('abc-def');
    expect(convertName('MaKe.-.MaKe')).toBe('make.make-1b6971c8');
    expect(convertNameNoDots('MaKe.-.MaKe')).toBe('make-make-1b6971c8');
    // Inputs that normalise alike still get distinct names.
    expect(convertName('Abc')).not.toBe(convertName('ABC'));
  });

  it.each([
    ['192.168.0.1', '192-168-0-1'],
    ['Aa:bb::', '00aa-00bb-0000-0000-0000-0000-0000-0000'],
    ['0Aa:bb::50', '00aa-00bb-0000-0000-0000-0000-0000-0050'],
  ])('IP %s names as %s', (ip, name) => {
    expect(ipToName(parseIP(ip)!)).toBe(name);
  });

  it('builds WorkloadEndpoint names with escaped dashes and reports the missing segment', () => {
    expect(
      workloadEndpointName({ node: 'ip-10-0-0-1', orchestrator: 'k8s', pod: 'web-1', endpoint: 'eth0' }),
    ).toEqual({
      name: 'ip--10--0--0--1-k8s-web--1-eth0',
    });
    expect(workloadEndpointName({ node: 'n', orchestrator: 'libnetwork', endpoint: 'ep' })).toEqual({
      name: 'n-libnetwork-libnetwork-ep',
    });
    expect(workloadEndpointName({ node: 'n', orchestrator: 'cni', endpoint: 'eth0' })).toEqual({
      field: 'containerID',
      reason: 'must be set',
    });
    expect(workloadEndpointName({ node: 'n', orchestrator: 'k8s', pod: 'p-', endpoint: 'eth0' })).toEqual({
      field: 'pod',
      reason: "must not end with '-'",
    });
  });
});
