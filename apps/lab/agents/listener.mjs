#!/usr/bin/env node
// A pod's workload in the lab: answers on TCP and UDP with the pod's name, so a connection test
// knows it reached the pod it aimed at. Imports only node: modules (starts in ~50 ms).
//
//   node listener.mjs --name NS/POD --ports 80[,8080] [--ipv6]
//
// --ipv6: also listens on :: (IPv6 only, beside the IPv4 sockets), for a pod with an IPv6 address.
// TCP: each connection gets "<NS/POD>\n", then the socket is closed. UDP: each datagram is
// answered with "<NS/POD>\n" to its sender. Prints "ready" once every socket listens; exits 0 on
// SIGTERM/SIGINT.
import { createSocket } from 'node:dgram';
import { createServer } from 'node:net';

function arg(name) {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const name = arg('--name') ?? 'pod';
const ports = (arg('--ports') ?? '80')
  .split(',')
  .filter((p) => p !== '')
  .map(Number);
const reply = `${name}\n`;
const closers = [];

const ipv6 = process.argv.includes('--ipv6');

function listenTcp(port, host) {
  return new Promise((resolve, reject) => {
    const server = createServer((sock) => {
      sock.on('error', () => {});
      sock.end(reply);
    });
    server.once('error', reject);
    server.listen({ port, host, ipv6Only: host === '::' }, () => resolve());
    closers.push(() => server.close());
  });
}

function listenUdp(port, host) {
  return new Promise((resolve, reject) => {
    const sock = createSocket(host === '::' ? { type: 'udp6', ipv6Only: true } : 'udp4');
    sock.on('message', (_msg, from) => sock.send(reply, from.port, from.address));
    sock.once('error', reject);
    sock.bind(port, host, () => resolve());
    closers.push(() => sock.close());
  });
}

try {
  for (const p of ports) {
    await listenTcp(p, '0.0.0.0');
    await listenUdp(p, '0.0.0.0');
    if (ipv6) {
      await listenTcp(p, '::');
      await listenUdp(p, '::');
    }
  }
} catch (e) {
  process.stderr.write(`listener ${name}: ${e.message}\n`);
  process.exit(1);
}
process.stdout.write(`ready ${name} tcp+udp ${ports.join(',')}\n`);
for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    for (const c of closers) c();
    process.exit(0);
  });
}
