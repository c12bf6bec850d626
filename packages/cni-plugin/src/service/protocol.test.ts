import { describe, expect, it } from 'vitest';
import { DEFAULT_SERVICE_SOCKET, serviceSocketFor } from './protocol.js';
import { parseRequest } from './server.js';

describe('serviceSocketFor', () => {
  it('is the default without the key, the given path with it, and nothing for "" or a config it cannot read', () => {
    expect(serviceSocketFor('{"cniVersion":"1.0.0"}')).toBe(DEFAULT_SERVICE_SOCKET);
    expect(serviceSocketFor('{"service_socket":"/run/x.sock"}')).toBe('/run/x.sock');
    expect(serviceSocketFor('{"service_socket":""}')).toBeUndefined();
    expect(serviceSocketFor('{"service_socket":7}')).toBeUndefined();
    expect(serviceSocketFor('not json')).toBeUndefined();
    expect(serviceSocketFor('[1]')).toBeUndefined();
    expect(serviceSocketFor('null')).toBeUndefined();
  });
});

describe('parseRequest', () => {
  const good = {
    v: 1,
    program: 'calico',
    env: { CNI_COMMAND: 'ADD' },
    stdin: '{}',
    netns: '4:4026531840',
    pid: 42,
    self: '/opt/cni/bin/calico',
  };

  it('accepts a well-formed request', () => {
    expect(parseRequest(JSON.stringify(good))).toEqual(good);
  });

  it.each([
    ['not json', 'the request is not JSON'],
    ['null', 'the request is not an object'],
    [JSON.stringify({ ...good, v: 2 }), 'protocol version 2 is not 1'],
    [JSON.stringify({ ...good, program: 'bridge' }), 'program must be calico or calico-ipam'],
    [JSON.stringify({ ...good, stdin: 1 }), 'stdin must be a string'],
    [JSON.stringify({ ...good, netns: null }), 'netns must be a string'],
    [JSON.stringify({ ...good, self: 3 }), 'self must be a string'],
    [JSON.stringify({ ...good, env: [] }), 'env must be an object'],
    [JSON.stringify({ ...good, env: { CNI_COMMAND: 1 } }), 'env.CNI_COMMAND must be a string'],
  ])('declines %s: %s', (text, why) => {
    expect(parseRequest(text)).toBe(why);
  });
});
