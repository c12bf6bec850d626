import { describe, expect, it } from 'vitest';
import {
  addressBytes,
  getLinkMessage,
  linkUpMessage,
  NLMSG_ERROR,
  newAddrMessage,
  newRouteMessage,
  newVethMessage,
  parseReplies,
  RTM_NEWLINK,
} from './messages.js';

const view = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset, b.byteLength);

/** Top-level attributes after a header and a fixed struct of `bodyLen` bytes: type → payload. */
function attrs(msg: Uint8Array, bodyLen: number): Map<number, Uint8Array> {
  const v = view(msg);
  const out = new Map<number, Uint8Array>();
  for (let at = 16 + bodyLen; at < msg.length; ) {
    const len = v.getUint16(at, true);
    out.set(v.getUint16(at + 2, true), msg.subarray(at + 4, at + len));
    at += (len + 3) & ~3;
  }
  return out;
}

describe('rtnetlink messages', () => {
  it('link up: RTM_NEWLINK asking for an ack, IFF_UP in flags and change, the name NUL-terminated', () => {
    const m = linkUpMessage(7, 'eth0');
    const v = view(m);
    expect(v.getUint32(0, true)).toBe(m.length);
    expect(m.length % 4).toBe(0);
    expect(v.getUint16(4, true)).toBe(RTM_NEWLINK);
    expect(v.getUint16(6, true)).toBe(0x1 | 0x4);
    expect(v.getUint32(8, true)).toBe(7);
    expect(v.getUint32(16 + 8, true)).toBe(1);
    expect(v.getUint32(16 + 12, true)).toBe(1);
    expect([...attrs(m, 16).get(3)!]).toEqual([...Buffer.from('eth0\0')]);
  });

  it('veth: create-exclusive, the host end named with its MAC, the peer nested with its netns fd', () => {
    const m = newVethMessage(
      1,
      { name: 'cali1', peerName: 'eth0', mac: 'ee:ee:ee:ee:ee:ee', peerMac: '0a:00:00:00:00:01', mtu: 1440 },
      9,
    );
    expect(view(m).getUint16(6, true)).toBe(0x1 | 0x4 | 0x200 | 0x400);
    const a = attrs(m, 16);
    expect(Buffer.from(a.get(3)!).toString()).toBe('cali1\0');
    expect([...a.get(1)!]).toEqual([0xee, 0xee, 0xee, 0xee, 0xee, 0xee]);
    expect(view(a.get(4)!).getUint32(0, true)).toBe(1440);
    const linkinfo = Buffer.from(a.get(18)!);
    expect(linkinfo.includes(Buffer.from('veth\0'))).toBe(true);
    expect(linkinfo.includes(Buffer.from('eth0\0'))).toBe(true);
    expect(linkinfo.includes(Buffer.from([10, 0, 0, 0, 0, 1]))).toBe(true);
    // IFLA_NET_NS_FD (28) = 9 inside the peer.
    const nsAttr = Buffer.from([8, 0, 28, 0, 9, 0, 0, 0]);
    expect(linkinfo.includes(nsAttr)).toBe(true);
  });

  it('addresses: family, prefix length, nodad for IPv6, local and address attributes', () => {
    const v4 = newAddrMessage(2, 5, '198.18.0.9/32', false);
    expect([...v4.subarray(16, 20)]).toEqual([2, 32, 0, 0]);
    expect(view(v4).getUint32(20, true)).toBe(5);
    expect([...attrs(v4, 8).get(2)!]).toEqual([198, 18, 0, 9]);
    const v6 = newAddrMessage(3, 5, 'fd00::9/128', true);
    expect([...v6.subarray(16, 20)]).toEqual([10, 128, 0x02, 0]);
  });

  it('routes: the default route has no destination attribute; scope link is 253', () => {
    const d = newRouteMessage(4, { dst: '0.0.0.0/0', gateway: '169.254.1.1', oif: 3 });
    const a = attrs(d, 12);
    expect(a.has(1)).toBe(false);
    expect([...a.get(5)!]).toEqual([169, 254, 1, 1]);
    expect(view(a.get(4)!).getUint32(0, true)).toBe(3);
    expect([...d.subarray(16, 24)]).toEqual([2, 0, 0, 0, 254, 3, 0, 1]);
    const l = newRouteMessage(5, { dst: '169.254.1.1/32', oif: 3, scope: 'link' });
    expect(l[16 + 6]).toBe(253);
    expect([...attrs(l, 12).get(1)!]).toEqual([169, 254, 1, 1]);
    expect(() => newRouteMessage(6, { dst: '0.0.0.0/0', gateway: 'fe80::1', oif: 3 })).toThrow(/not IPv4/);
  });

  it('IPv6 addresses in every written form', () => {
    expect([...addressBytes('fe80::ecee:eeff:feee:eeee', 6)]).toEqual([
      0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0xec, 0xee, 0xee, 0xff, 0xfe, 0xee, 0xee, 0xee,
    ]);
    expect([...addressBytes('::', 6)]).toEqual(new Array(16).fill(0));
    expect([...addressBytes('2001:db8:0:0:0:0:0:1', 6)].slice(-2)).toEqual([0, 1]);
  });

  it('refuses an interface name the kernel would', () => {
    expect(() => getLinkMessage(1, 'a-name-that-is-too-long')).toThrow(/not an interface name/);
    expect(() => getLinkMessage(1, 'a/b')).toThrow(/not an interface name/);
  });

  it('reads acknowledgements, errors and link answers from one datagram', () => {
    const ack = new Uint8Array(36);
    const v = view(ack);
    v.setUint32(0, 36, true);
    v.setUint16(4, NLMSG_ERROR, true);
    v.setUint32(8, 11, true);
    v.setInt32(16, -17, true);
    const link = new Uint8Array(32);
    const l = view(link);
    l.setUint32(0, 32, true);
    l.setUint16(4, RTM_NEWLINK, true);
    l.setUint32(8, 12, true);
    l.setInt32(20, 42, true);
    const both = new Uint8Array([...link, ...ack]);
    expect(parseReplies(both)).toEqual([
      { type: RTM_NEWLINK, seq: 12, ifindex: 42 },
      { type: NLMSG_ERROR, seq: 11, errno: 17 },
    ]);
    expect(parseReplies(both.subarray(0, 20))).toEqual([]);
  });
});
