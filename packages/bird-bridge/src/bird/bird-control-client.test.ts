/**
 * The client against a fake BIRD: a unix socket in a temp dir that answers with recorded replies.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { isBirdBridgeError } from '../errors.js';
import { BirdControlClient } from './bird-control-client.js';
import * as rec from './testdata/recorded-replies.js';

let dir: string;
let server: Server | undefined;
const received: string[] = [];

function fakeBird(answers: Record<string, string>, opts: { greeting?: string; dribble?: boolean } = {}) {
  const path = join(dir, 'bird.ctl');
  server = createServer((sock) => {
    sock.write(opts.greeting ?? rec.hello);
    let buf = '';
    sock.on('data', (d) => {
      buf += d.toString();
      let nl = buf.indexOf('\n');
      while (nl >= 0) {
        const cmd = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        received.push(cmd);
        const a = answers[cmd];
        if (a === undefined) sock.write('9001 syntax error\n');
        else if (opts.dribble) for (const ch of a) sock.write(ch);
        else if (a !== 'HANG') sock.write(a);
        nl = buf.indexOf('\n');
      }
    });
  });
  return new Promise<string>((resolve) => server!.listen(path, () => resolve(path)));
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'bird-ctl-test-'));
  received.length = 0;
});
afterEach(async () => {
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
  rmSync(dir, { recursive: true, force: true });
});

describe('BirdControlClient', () => {
  test('show protocols, one byte at a time', async () => {
    const c = new BirdControlClient(
      await fakeBird({ 'show protocols': rec.protocolsEstablished }, { dribble: true }),
    );
    const rows = await c.showProtocols();
    expect(rows.find((r) => r.proto === 'BGP')).toMatchObject({
      name: 'Mesh_198_18_0_2',
      info: 'Established',
    });
    expect(received).toEqual(['show protocols']);
  });
  test('routes, status, configure', async () => {
    const c = new BirdControlClient(
      await fakeBird({
        'show route': rec.routes,
        'show status': rec.status,
        configure: rec.configureOk,
        'configure "/etc/bird/bad.cfg"': rec.configureSyntaxError,
      }),
    );
    expect((await c.showRoutes()).map((r) => r.network)).toEqual([
      '198.19.0.0/26',
      '198.18.0.0/24',
      '198.19.0.64/26',
    ]);
    expect((await c.showStatus()).routerId).toBe('198.18.0.1');
    expect(await c.configure()).toEqual({ code: 3, message: 'Reconfigured' });
    await expect(c.configure('/etc/bird/bad.cfg')).rejects.toSatisfy(
      (e) => isBirdBridgeError(e, 'command-failed') && /43:11 syntax error/.test((e as Error).message),
    );
  });
  test('no socket: control-connect', async () => {
    const c = new BirdControlClient(join(dir, 'missing.ctl'));
    await expect(c.showStatus()).rejects.toSatisfy((e) => isBirdBridgeError(e, 'control-connect'));
    expect(await c.ping()).toBe(false);
  });
  test('a silent BIRD: control-timeout', async () => {
    const c = new BirdControlClient(await fakeBird({ 'show status': 'HANG' }), { timeoutMs: 200 });
    await expect(c.showStatus()).rejects.toSatisfy((e) => isBirdBridgeError(e, 'control-timeout'));
  });
  test('something else on the socket: control-protocol', async () => {
    const c = new BirdControlClient(await fakeBird({}, { greeting: 'SSH-2.0-OpenSSH\n' }));
    await expect(c.showStatus()).rejects.toSatisfy((e) => isBirdBridgeError(e, 'control-protocol'));
  });
});
