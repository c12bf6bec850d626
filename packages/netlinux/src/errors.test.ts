import { describe, expect, it } from 'vitest';
import { classifyErrno, classifyStderr, isNetlinuxError, NetlinuxError } from './errors.js';

// Texts as iproute2 6.1, nsenter and coreutils print them under LC_ALL=C.
const CASES: [string, string][] = [
  ['Cannot find device "nosuch"', 'not-found'],
  ['Device "nosuch" does not exist.', 'not-found'],
  ['RTNETLINK answers: No such process', 'not-found'],
  ['RTNETLINK answers: No such file or directory', 'not-found'],
  ['Error: ipv4: Address not found.', 'not-found'],
  ['Error: ipv6: address not found.', 'not-found'],
  ['Cannot open network namespace "nosuch": No such file or directory', 'not-found'],
  ['Cannot remove namespace file "/run/netns/nosuch": No such file or directory', 'not-found'],
  ['nsenter: cannot open /proc/999999/ns/net: No such file or directory', 'not-found'],
  ['RTNETLINK answers: Network is unreachable', 'not-found'],
  ['tee: /proc/sys/net/ipv4/conf/nosuch/forwarding: No such file or directory', 'not-found'],
  ['RTNETLINK answers: File exists', 'exists'],
  ['Cannot create namespace file "/run/netns/x": File exists', 'exists'],
  ['Error: ipv4: Address already assigned.', 'exists'],
  ['RTNETLINK answers: Operation not permitted', 'permission'],
  ['tee: /proc/sys/net/core/somaxconn: Permission denied', 'permission'],
  ['RTNETLINK answers: Device or resource busy', 'busy'],
  ['Error: any valid prefix is expected rather than "garbage".', 'invalid'],
  ['Error: either "to" is duplicate, or "x" is a garbage.', 'invalid'],
  ['Error: Attribute failed policy validation.', 'invalid'],
  ['Error: Unknown device type.', 'invalid'],
  ['Error: Nexthop has invalid gateway.', 'invalid'],
  ['tee: /proc/sys/net/ipv4/conf/lo/forwarding: Invalid argument', 'invalid'],
  ["nsenter: reassociate to namespace 'ns/net' failed: Invalid argument", 'invalid'],
  ['nsenter: failed to execute ip: No such file or directory', 'failed'],
  ['RTNETLINK answers: Network is down', 'failed'],
  ['', 'failed'],
];

describe('classifyStderr', () => {
  it.each(CASES)('%j → %s', (stderr, code) => {
    expect(classifyStderr(stderr)).toBe(code);
  });

  it('classifies a batch failure by the error line, not the "Command failed" trailer', () => {
    expect(classifyStderr('RTNETLINK answers: File exists\nCommand failed -:2\n')).toBe('exists');
    expect(classifyStderr('Cannot find device "x"\nCommand failed -:1\n')).toBe('not-found');
  });
});

describe('classifyErrno', () => {
  it('maps file errors of /proc/sys', () => {
    expect(classifyErrno('ENOENT')).toBe('not-found');
    expect(classifyErrno('EACCES')).toBe('permission');
    expect(classifyErrno('EINVAL')).toBe('invalid');
    expect(classifyErrno('EIO')).toBe('failed');
    expect(classifyErrno(undefined)).toBe('failed');
  });
});

describe('NetlinuxError', () => {
  it('carries code, stderr detail, command and namespace', () => {
    const e = new NetlinuxError('exists', 'ip link add x: RTNETLINK answers: File exists', {
      detail: 'RTNETLINK answers: File exists\n',
      command: ['ip', 'link', 'add', 'x'],
      netns: 'pod',
    });
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe('NetlinuxError');
    expect(e.detail).toBe('RTNETLINK answers: File exists\n');
    expect(e.command).toEqual(['ip', 'link', 'add', 'x']);
    expect(isNetlinuxError(e, 'exists')).toBe(true);
    expect(isNetlinuxError(e, 'not-found')).toBe(false);
    expect(isNetlinuxError(new Error('x'))).toBe(false);
  });
});
