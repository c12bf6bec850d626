/**
 * What start-up reads from the host's network: its interfaces with their IPv4 and IPv6 addresses
 * (`ip -json addr` through netlinux) and the source address the kernel picks towards a destination
 * (a connected UDP socket; nothing is sent).
 */
import { createSocket } from 'node:dgram';
import type { Netlinux } from '@calico-ts/netlinux';
import type { HostInterface } from './autodetect.js';

export async function listHostInterfaces(net: Pick<Netlinux, 'listAddrs'>): Promise<HostInterface[]> {
  const byIndex = new Map<number, { name: string; index: number; cidrs: string[] }>();
  const addrs = [...(await net.listAddrs({ family: 4 })), ...(await net.listAddrs({ family: 6 }))];
  for (const a of addrs) {
    let i = byIndex.get(a.index);
    if (!i) {
      i = { name: a.dev, index: a.index, cidrs: [] };
      byIndex.set(a.index, i);
    }
    i.cidrs.push(`${a.address}/${a.prefixLen}`);
  }
  return [...byIndex.values()];
}

/** The local address a UDP socket connected to `destination`:80 gets; undefined if unroutable. */
export function reachSource(destination: string, timeoutMs = 2000): Promise<string | undefined> {
  return new Promise((resolve) => {
    const sock = createSocket(destination.includes(':') ? 'udp6' : 'udp4');
    const done = (v: string | undefined) => {
      clearTimeout(timer);
      try {
        sock.close();
      } catch {
        // already closed
      }
      resolve(v);
    };
    const timer = setTimeout(() => done(undefined), timeoutMs);
    sock.once('error', () => done(undefined));
    sock.connect(80, destination, () => {
      try {
        done(sock.address().address);
      } catch {
        done(undefined);
      }
    });
  });
}
