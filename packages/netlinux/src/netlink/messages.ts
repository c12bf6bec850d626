/**
 * rtnetlink messages, encoded and decoded without I/O (linux/netlink.h, linux/rtnetlink.h,
 * linux/if_link.h, linux/veth.h): the few requests a pod's network set-up needs, byte for byte
 * what iproute2 sends for the same command. Host byte order is little-endian (x86-64, arm64).
 *
 * Each request asks for an acknowledgement (NLM_F_ACK); `parseAck` reads the kernel's answer to
 * one as 0 (done) or a positive errno.
 */
import { NetlinuxError } from '../errors.js';
import { parseCidr } from '../ip.js';
import { normalizeMac } from '../mac.js';
import type { IpFamily, VethSpec } from '../types.js';

// linux/netlink.h
const NLMSG_HDRLEN = 16;
const NLM_F_REQUEST = 0x1;
const NLM_F_ACK = 0x4;
const NLM_F_EXCL = 0x200;
const NLM_F_CREATE = 0x400;
export const NLMSG_ERROR = 2;
export const NLMSG_DONE = 3;
// linux/rtnetlink.h
export const RTM_NEWLINK = 16;
export const RTM_GETLINK = 18;
export const RTM_NEWADDR = 20;
export const RTM_NEWROUTE = 24;
const RT_TABLE_MAIN = 254;
const RTPROT_BOOT = 3;
const RTN_UNICAST = 1;
const RT_SCOPES: Record<string, number> = { global: 0, universe: 0, site: 200, link: 253, host: 254 };
const RTA_DST = 1;
const RTA_OIF = 4;
const RTA_GATEWAY = 5;
// linux/if_link.h, linux/if.h, linux/veth.h, linux/if_addr.h
const IFLA_ADDRESS = 1;
const IFLA_IFNAME = 3;
const IFLA_MTU = 4;
const IFLA_LINKINFO = 18;
const IFLA_NET_NS_FD = 28;
const IFLA_NUM_TX_QUEUES = 31;
const IFLA_NUM_RX_QUEUES = 32;
const IFLA_INFO_KIND = 1;
const IFLA_INFO_DATA = 2;
const VETH_INFO_PEER = 1;
const IFF_UP = 0x1;
const IFA_ADDRESS = 1;
const IFA_LOCAL = 2;
const IFA_F_NODAD = 0x02;
const AF_UNSPEC = 0;
const AF_INET = 2;
const AF_INET6 = 10;

/** One attribute: type and payload (already encoded), or nested attributes. */
type Attr = [type: number, payload: Uint8Array | Attr[]];

const align4 = (n: number) => (n + 3) & ~3;

function attrsLength(attrs: Attr[]): number {
  let n = 0;
  for (const [, p] of attrs) n += align4(4 + (p instanceof Uint8Array ? p.length : attrsLength(p)));
  return n;
}

function writeAttrs(view: DataView, bytes: Uint8Array, at: number, attrs: Attr[]): number {
  for (const [type, p] of attrs) {
    const len = 4 + (p instanceof Uint8Array ? p.length : attrsLength(p));
    view.setUint16(at, len, true);
    view.setUint16(at + 2, type, true);
    if (p instanceof Uint8Array) bytes.set(p, at + 4);
    else writeAttrs(view, bytes, at + 4, p);
    at += align4(len);
  }
  return at;
}

/** A whole message: header, the fixed family struct (`body`), then attributes. */
function message(type: number, flags: number, seq: number, body: Uint8Array, attrs: Attr[]): Uint8Array {
  const len = NLMSG_HDRLEN + align4(body.length) + attrsLength(attrs);
  const bytes = new Uint8Array(len);
  const view = new DataView(bytes.buffer);
  view.setUint32(0, len, true);
  view.setUint16(4, type, true);
  view.setUint16(6, flags | NLM_F_REQUEST | NLM_F_ACK, true);
  view.setUint32(8, seq, true);
  view.setUint32(12, 0, true); // the kernel fills in the port
  bytes.set(body, NLMSG_HDRLEN);
  writeAttrs(view, bytes, NLMSG_HDRLEN + align4(body.length), attrs);
  return bytes;
}

/** struct ifinfomsg: family, type, index, flags, change. */
function ifinfomsg(index = 0, flags = 0, change = 0): Uint8Array {
  const b = new Uint8Array(16);
  const v = new DataView(b.buffer);
  v.setUint8(0, AF_UNSPEC);
  v.setInt32(4, index, true);
  v.setUint32(8, flags, true);
  v.setUint32(12, change, true);
  return b;
}

const u32 = (n: number) => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n, true);
  return b;
};
const cstring = (s: string) => {
  const b = new Uint8Array(s.length + 1);
  for (let i = 0; i < s.length; i++) b[i] = s.charCodeAt(i);
  return b;
};
const mac = (m: string) => Uint8Array.from(normalizeMac(m).split(':'), (x) => Number.parseInt(x, 16));

/** The address's bytes in network order. */
export function addressBytes(address: string, family: IpFamily): Uint8Array {
  if (family === 4) return Uint8Array.from(address.split('.'), Number);
  const [head, tail] = address.includes('::') ? address.split('::') : [address, undefined];
  const hs = head ? head.split(':') : [];
  const ts = tail ? tail.split(':') : [];
  const groups = [...hs, ...new Array<string>(8 - hs.length - ts.length).fill('0'), ...ts];
  const out = new Uint8Array(16);
  groups.forEach((g, i) => {
    const n = Number.parseInt(g, 16);
    out[2 * i] = n >> 8;
    out[2 * i + 1] = n & 0xff;
  });
  return out;
}

const IFNAME = /^[^\s/]{1,15}$/;
function ifname(name: string): Uint8Array {
  if (!IFNAME.test(name))
    throw new NetlinuxError('invalid', `not an interface name: ${JSON.stringify(name)}`);
  return cstring(name);
}

/**
 * `ip link add NAME [address M] [mtu N] type veth peer name PEER [address M] [mtu N] [netns FD]`:
 * the peer is created directly in the namespace `peerNetnsFd` refers to.
 */
export function newVethMessage(seq: number, spec: VethSpec, peerNetnsFd: number | undefined): Uint8Array {
  const common = (name: string, m: string | undefined): Attr[] => [
    [IFLA_IFNAME, ifname(name)],
    ...(m !== undefined ? ([[IFLA_ADDRESS, mac(m)]] as Attr[]) : []),
    ...(spec.mtu !== undefined ? ([[IFLA_MTU, u32(spec.mtu)]] as Attr[]) : []),
    ...(spec.numQueues !== undefined
      ? ([
          [IFLA_NUM_TX_QUEUES, u32(spec.numQueues)],
          [IFLA_NUM_RX_QUEUES, u32(spec.numQueues)],
        ] as Attr[])
      : []),
  ];
  const peerAttrs = common(spec.peerName, spec.peerMac);
  if (peerNetnsFd !== undefined) peerAttrs.push([IFLA_NET_NS_FD, u32(peerNetnsFd)]);
  // VETH_INFO_PEER carries a struct ifinfomsg and then the peer's attributes.
  const peerLen = 16 + attrsLength(peerAttrs);
  const peer = new Uint8Array(peerLen);
  peer.set(ifinfomsg(), 0);
  writeAttrs(new DataView(peer.buffer), peer, 16, peerAttrs);
  return message(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, seq, ifinfomsg(), [
    ...common(spec.name, spec.mac),
    [
      IFLA_LINKINFO,
      [
        [IFLA_INFO_KIND, cstring('veth')],
        [IFLA_INFO_DATA, [[VETH_INFO_PEER, peer]]],
      ],
    ],
  ]);
}

/** `ip link set dev NAME up`. */
export function linkUpMessage(seq: number, name: string): Uint8Array {
  return message(RTM_NEWLINK, 0, seq, ifinfomsg(0, IFF_UP, IFF_UP), [[IFLA_IFNAME, ifname(name)]]);
}

/** `ip link show dev NAME` (the reply carries its index). */
export function getLinkMessage(seq: number, name: string): Uint8Array {
  return message(RTM_GETLINK, 0, seq, ifinfomsg(), [[IFLA_IFNAME, ifname(name)]]);
}

/** `ip addr add CIDR dev <index> [nodad]` (scope global). */
export function newAddrMessage(seq: number, index: number, cidr: string, noDad: boolean): Uint8Array {
  const { address, prefixLen, family } = parseCidr(cidr);
  const body = new Uint8Array(8);
  const v = new DataView(body.buffer);
  v.setUint8(0, family === 4 ? AF_INET : AF_INET6);
  v.setUint8(1, prefixLen);
  v.setUint8(2, family === 6 && noDad ? IFA_F_NODAD : 0);
  v.setUint8(3, 0);
  v.setUint32(4, index, true);
  const a = addressBytes(address, family);
  return message(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, seq, body, [
    [IFA_LOCAL, a],
    [IFA_ADDRESS, a],
  ]);
}

export interface NetlinkRoute {
  /** A prefix (`0.0.0.0/0` for the default route). */
  dst: string;
  gateway?: string;
  /** Output interface index. */
  oif: number;
  /** `link`, `host` or global (default). */
  scope?: string;
}

/** `ip route add DST [via GW] dev <oif> [scope S]` in the main table, protocol boot. */
export function newRouteMessage(seq: number, r: NetlinkRoute): Uint8Array {
  const { address, prefixLen, family } = parseCidr(r.dst);
  const scope = RT_SCOPES[r.scope ?? 'global'];
  if (scope === undefined) throw new NetlinuxError('invalid', `route scope ${JSON.stringify(r.scope)}`);
  const body = new Uint8Array(12);
  const v = new DataView(body.buffer);
  v.setUint8(0, family === 4 ? AF_INET : AF_INET6);
  v.setUint8(1, prefixLen);
  v.setUint8(4, RT_TABLE_MAIN);
  v.setUint8(5, RTPROT_BOOT);
  v.setUint8(6, scope);
  v.setUint8(7, RTN_UNICAST);
  const attrs: Attr[] = [];
  if (prefixLen > 0) attrs.push([RTA_DST, addressBytes(address, family)]);
  if (r.gateway !== undefined) {
    const g = parseCidr(r.gateway);
    if (g.family !== family) throw new NetlinuxError('invalid', `gateway ${r.gateway} is not IPv${family}`);
    attrs.push([RTA_GATEWAY, addressBytes(g.address, family)]);
  }
  attrs.push([RTA_OIF, u32(r.oif)]);
  return message(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, seq, body, attrs);
}

export interface NetlinkReply {
  type: number;
  seq: number;
  /** NLMSG_ERROR: 0 for an acknowledgement, else the errno (positive). */
  errno?: number;
  /** RTM_NEWLINK (a GETLINK answer): the interface index. */
  ifindex?: number;
}

/** The messages in one datagram from the kernel. */
export function parseReplies(buf: Uint8Array): NetlinkReply[] {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const out: NetlinkReply[] = [];
  let at = 0;
  while (at + NLMSG_HDRLEN <= buf.length) {
    const len = view.getUint32(at, true);
    if (len < NLMSG_HDRLEN || at + len > buf.length) break;
    const type = view.getUint16(at + 4, true);
    const seq = view.getUint32(at + 8, true);
    const r: NetlinkReply = { type, seq };
    if (type === NLMSG_ERROR && len >= NLMSG_HDRLEN + 4) r.errno = -view.getInt32(at + NLMSG_HDRLEN, true);
    if (type === RTM_NEWLINK && len >= NLMSG_HDRLEN + 16)
      r.ifindex = view.getInt32(at + NLMSG_HDRLEN + 4, true);
    out.push(r);
    at += align4(len);
  }
  return out;
}
