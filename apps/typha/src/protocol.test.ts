import { describe, expect, it } from 'vitest';
import { typhaConfigFromEnv } from './config.js';
import { peerMismatch, uriSansOf } from './peer-identity.js';
import {
  decodeClientMessage,
  decodeServerMessage,
  encodeMessage,
  LineSplitter,
  ProtocolError,
} from './protocol.js';

describe('protocol', () => {
  it('carries bigint values (IPAM sequence numbers) exactly, one message per line', () => {
    const item = {
      key: '/calico/ipam/v2/assignment/ipv4/block/10.0.0.0-26',
      value: { sequenceNumber: 1732000000123456789n, n: [1, 2] },
    };
    const line = encodeMessage({ t: 'set', s: 'ipam-blocks', k: item.key, v: item });
    expect(line.endsWith('\n')).toBe(true);
    expect(line.slice(0, -1)).not.toContain('\n');
    expect(decodeServerMessage(line.slice(0, -1))).toEqual({
      t: 'set',
      s: 'ipam-blocks',
      k: item.key,
      v: item,
    });
  });

  it('refuses what is not a message of the protocol', () => {
    expect(() => decodeServerMessage('{"t":"nonsense"}')).toThrow(ProtocolError);
    expect(() => decodeServerMessage('{"t":"set","k":"x"}')).toThrow(/bad set/);
    expect(() => decodeServerMessage('not json')).toThrow(/not JSON/);
    expect(() => decodeClientMessage('{"t":"hello","node":"n","syncer":"tunnel"}')).toThrow(
      /unknown syncer type/,
    );
    expect(() => decodeClientMessage('{"t":"hello","syncer":"felix"}')).toThrow(/without a node/);
    expect(
      decodeClientMessage('{"t":"hello","version":1,"node":"n","client":"felix","syncer":"bgp"}'),
    ).toEqual({
      t: 'hello',
      version: 1,
      node: 'n',
      client: 'felix',
      syncer: 'bgp',
    });
  });

  it('splits a stream into lines across chunk boundaries, and bounds a line', () => {
    const s = new LineSplitter(10);
    expect(s.push('{"a"')).toEqual([]);
    expect(s.push(':1}\n{"b":2}\n{"c"')).toEqual(['{"a":1}', '{"b":2}']);
    expect(s.push(':3}\n')).toEqual(['{"c":3}']);
    expect(() => s.push('x'.repeat(11))).toThrow(/too long/);
  });
});

describe('peer identity', () => {
  const cert = {
    subject: { CN: 'typha-client' },
    subjectaltname: 'DNS:x, URI:spiffe://cluster/felix, IP Address:127.0.0.1',
  };
  it('accepts a certificate with the CN or the URI SAN, refuses one with neither', () => {
    expect(uriSansOf(cert.subjectaltname)).toEqual(['spiffe://cluster/felix']);
    expect(peerMismatch(cert, {})).toBeUndefined();
    expect(peerMismatch(cert, { cn: 'typha-client' })).toBeUndefined();
    expect(peerMismatch(cert, { cn: 'other', uriSan: 'spiffe://cluster/felix' })).toBeUndefined();
    expect(peerMismatch(cert, { cn: 'other' })).toMatch(/neither CN other/);
    expect(peerMismatch(cert, { uriSan: 'spiffe://cluster/other' })).toMatch(
      /URI SAN spiffe:\/\/cluster\/other/,
    );
    expect(peerMismatch(undefined, { cn: 'x' })).toBe('no certificate');
  });
});

describe('Typha configuration', () => {
  it('has upstream defaults', () => {
    const c = typhaConfigFromEnv({});
    expect(c).toMatchObject({
      datastoreType: 'etcdv3',
      healthPort: 9098,
      healthEnabled: false,
      serverPort: 0,
      pingIntervalMs: 10_000,
      pongTimeoutMs: 60_000,
      maxConnections: 10_000,
      prometheusMetricsEnabled: false,
      prometheusMetricsHost: '',
      prometheusMetricsPort: 9093,
    });
  });

  it('reads the Prometheus metrics variables, naming a bad one', () => {
    expect(
      typhaConfigFromEnv({
        TYPHA_PROMETHEUSMETRICSENABLED: 'true',
        TYPHA_PROMETHEUSMETRICSHOST: '127.0.0.1',
        TYPHA_PROMETHEUSMETRICSPORT: '9191',
      }),
    ).toMatchObject({
      prometheusMetricsEnabled: true,
      prometheusMetricsHost: '127.0.0.1',
      prometheusMetricsPort: 9191,
    });
    expect(() => typhaConfigFromEnv({ TYPHA_PROMETHEUSMETRICSPORT: '70000' })).toThrow(
      /TYPHA_PROMETHEUSMETRICSPORT/,
    );
    expect(() => typhaConfigFromEnv({ TYPHA_PROMETHEUSMETRICSENABLED: 'maybe' })).toThrow(
      /TYPHA_PROMETHEUSMETRICSENABLED/,
    );
  });

  it('reads TYPHA_ variables and wants all of the TLS ones or none', () => {
    const tls = {
      TYPHA_CAFILE: '/ca',
      TYPHA_SERVERCERTFILE: '/c',
      TYPHA_SERVERKEYFILE: '/k',
      TYPHA_CLIENTCN: 'felix',
    };
    expect(
      typhaConfigFromEnv({ ...tls, TYPHA_SERVERPORT: '5473', TYPHA_DATASTORETYPE: 'kubernetes' }),
    ).toMatchObject({
      serverPort: 5473,
      datastoreType: 'kubernetes',
      clientCN: 'felix',
    });
    expect(() => typhaConfigFromEnv({ TYPHA_CAFILE: '/ca' })).toThrow(/all must be/);
    expect(() => typhaConfigFromEnv({ ...tls, TYPHA_CLIENTCN: '' })).toThrow(/all must be/);
    expect(() => typhaConfigFromEnv({ TYPHA_SERVERPORT: 'x' })).toThrow(/TYPHA_SERVERPORT/);
  });
});
