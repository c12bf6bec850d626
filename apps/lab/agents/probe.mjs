#!/usr/bin/env node
// Connection attempts from inside one pod's network namespace, all at once, each bounded in time.
//
//   node probe.mjs '{"protocol":"tcp","timeoutMs":1500,"targets":[{"id":"ns/b","ip":"198.19.0.5","port":80}]}'
//
// Prints one JSON array: {id, reachable, reply?, error?, ms} per target. TCP is reachable when the
// connection opens and the peer's reply arrives; UDP when a reply datagram arrives (the datagram is
// re-sent every 200 ms until then). Imports only node: modules.
import { createSocket } from 'node:dgram';
import { connect } from 'node:net';

const spec = JSON.parse(process.argv[2] ?? '{}');
const timeoutMs = spec.timeoutMs ?? 1500;

function tcp(t) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    let data = '';
    let settled = false;
    const sock = connect({ host: t.ip, port: t.port });
    const finish = (r) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      resolve({ id: t.id, ms: Math.round((performance.now() - t0) * 10) / 10, ...r });
    };
    const timer = setTimeout(() => finish({ reachable: false, error: 'timeout' }), timeoutMs);
    sock.setEncoding('utf8');
    sock.on('data', (d) => {
      data += d;
    });
    sock.on('end', () => finish({ reachable: true, reply: data.trim() }));
    sock.on('error', (e) => finish({ reachable: false, error: e.code ?? e.message }));
  });
}

function udp(t) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const sock = createSocket(t.ip.includes(':') ? 'udp6' : 'udp4');
    let settled = false;
    const finish = (r) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearInterval(resend);
      sock.close();
      resolve({ id: t.id, ms: Math.round((performance.now() - t0) * 10) / 10, ...r });
    };
    const timer = setTimeout(() => finish({ reachable: false, error: 'timeout' }), timeoutMs);
    const send = () => sock.send('probe\n', t.port, t.ip, () => {});
    const resend = setInterval(send, 200);
    sock.on('message', (msg) => finish({ reachable: true, reply: msg.toString('utf8').trim() }));
    sock.on('error', (e) => finish({ reachable: false, error: e.code ?? e.message }));
    send();
  });
}

const run = spec.protocol === 'udp' ? udp : tcp;
const results = await Promise.all((spec.targets ?? []).map(run));
process.stdout.write(`${JSON.stringify(results)}\n`);
