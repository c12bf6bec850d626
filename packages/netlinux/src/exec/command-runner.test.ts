import { describe, expect, it } from 'vitest';
import { commandLine, netnsName, netnsPath } from './command-runner.js';

describe('commandLine', () => {
  it('runs in the caller namespace without one', () => {
    expect(commandLine('ip', ['link', 'show'])).toEqual(['ip', 'link', 'show']);
  });

  it('lets ip and bridge switch namespace by name', () => {
    expect(commandLine('ip', ['link', 'show'], 'pod')).toEqual(['ip', '-n', 'pod', 'link', 'show']);
    expect(commandLine('bridge', ['fdb', 'show'], 'pod')).toEqual(['bridge', '-n', 'pod', 'fdb', 'show']);
  });

  it('treats paths under /run/netns and /var/run/netns as names', () => {
    expect(commandLine('ip', ['link'], '/var/run/netns/cni-1')).toEqual(['ip', '-n', 'cni-1', 'link']);
    expect(commandLine('ip', ['link'], '/run/netns/cni-1')).toEqual(['ip', '-n', 'cni-1', 'link']);
  });

  it('uses nsenter for other paths and for other programs', () => {
    expect(commandLine('ip', ['link'], '/proc/42/ns/net')).toEqual([
      'nsenter',
      '--net=/proc/42/ns/net',
      'ip',
      'link',
    ]);
    expect(commandLine('cat', ['/proc/sys/net/ipv4/ip_forward'], 'pod')).toEqual([
      'nsenter',
      '--net=/run/netns/pod',
      'cat',
      '/proc/sys/net/ipv4/ip_forward',
    ]);
  });

  it('resolves names and paths', () => {
    expect(netnsPath('pod')).toBe('/run/netns/pod');
    expect(netnsPath('/proc/1/ns/net')).toBe('/proc/1/ns/net');
    expect(netnsName('/proc/1/ns/net')).toBeUndefined();
    expect(netnsName('/run/netns/a/b')).toBeUndefined();
  });
});
