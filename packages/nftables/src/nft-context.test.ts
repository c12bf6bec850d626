import { describe, expect, it } from 'vitest';
import { isNftablesError } from './errors.js';
import { netnsPath } from './nft-context.js';

describe('netnsPath', () => {
  it('finds a named namespace under /run/netns and takes a path as it is', () => {
    expect(netnsPath('cali-node1')).toBe('/run/netns/cali-node1');
    expect(netnsPath('/proc/4242/ns/net')).toBe('/proc/4242/ns/net');
  });

  it.each(['', '.', '..', '../etc', 'a/b', 'x\0y'])('refuses %j as a name', (name) => {
    let err: unknown;
    try {
      netnsPath(name);
    } catch (e) {
      err = e;
    }
    expect(isNftablesError(err, 'invalid')).toBe(true);
  });
});
