import { describe, expect, it } from 'vitest';
import { checkIfName, checkNetns, isValidIfName } from './names.js';

describe('interface names', () => {
  it('accepts what the kernel accepts', () => {
    for (const ok of ['eth0', 'cali12345678901', 'vxlan.calico', 'eth0.100', 'a'])
      expect(isValidIfName(ok)).toBe(true);
  });

  it('refuses the rest', () => {
    for (const bad of ['', '.', '..', 'a/b', 'a:b', 'a b', 'cali123456789012', 'x"y', 'a\nb']) {
      expect(isValidIfName(bad)).toBe(false);
      expect(() => checkIfName(bad)).toThrow(/invalid interface name/);
    }
  });
});

describe('namespace names and paths', () => {
  it('accepts names and absolute paths', () => {
    expect(checkNetns('pod-1')).toBe('pod-1');
    expect(checkNetns('/proc/123/ns/net')).toBe('/proc/123/ns/net');
    expect(checkNetns('/var/run/netns/cni-1234')).toBe('/var/run/netns/cni-1234');
  });

  it('refuses relative paths, dot names and parent segments', () => {
    for (const bad of ['', '.', '..', './x', 'a/b', '/run/netns/../x', 'a b']) {
      expect(() => checkNetns(bad)).toThrow(/invalid network namespace/);
    }
  });
});
