/**
 * The probe flags against stand-ins on this host: an HTTP server playing Felix's health endpoint on
 * a free loopback port, and a unix socket playing BIRD's control socket with replies recorded from
 * BIRD 2.0.12.
 */
import { mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer, type Server as NetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProbes } from './probes.js';

const HELLO = '0001 BIRD 2.0.12 ready.\n';
const STATUS = `1000-BIRD 2.0.12
1011-Router ID is 198.18.0.11
 Hostname is n1
 Current server time is 2026-11-23 09:07:42.746
 Last reboot on 2026-11-23 09:07:34.637
 Last reconfiguration on 2026-11-23 09:07:34.637
0013 Daemon is up and running
`;
const protocols = (peer2: string) => `2002-Name       Proto      Table      State  Since         Info
1002-static1    Static     master4    up     09:07:34.637  
 kernel1    Kernel     master4    up     09:07:34.637  
 Mesh_198_18_0_12 BGP        ---        up     09:07:36.607  Established   
 Mesh_198_18_0_13 BGP        ---        ${peer2}
0000 
`;

describe('calico-node probe flags', () => {
  let dir: string;
  let http: Server;
  let bird: NetServer;
  let felixStatus = 204;
  let peer2 = 'up     09:07:36.607  Established   ';
  const env = () => ({
    FELIX_HEALTHHOST: '127.0.0.1',
    FELIX_HEALTHPORT: String((http.address() as AddressInfo).port),
    CALICO_VAR_RUN_DIR: dir,
    CALICO_VAR_LIB_DIR: dir,
  });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'calico-node-probes-'));
    await writeFile(join(dir, 'nodename'), 'n1');
    http = createHttpServer((req, res) => {
      res.writeHead(req.url === '/liveness' ? 204 : felixStatus).end();
    });
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    bird = createServer((sock) => {
      sock.write(HELLO);
      sock.on('data', (d) => {
        const cmd = d.toString().trim();
        sock.write(cmd === 'show status' ? STATUS : protocols(peer2));
      });
    });
    await new Promise<void>((r) => bird.listen(join(dir, 'bird.ctl'), r));
  });
  afterAll(async () => {
    await new Promise((r) => http.close(r));
    await new Promise((r) => bird.close(r));
    await rm(dir, { recursive: true, force: true });
  });

  it('pass silently when Felix and BIRD are healthy', async () => {
    expect(
      await runProbes(['felix-ready', 'felix-live', 'bird-ready', 'bird-live'], {
        env: env(),
        thresholdMs: 30_000,
      }),
    ).toBe(undefined);
  });

  it("report Felix's status code as upstream words it", async () => {
    felixStatus = 503;
    expect(await runProbes(['felix-ready'], { env: env(), thresholdMs: 30_000 })).toBe(
      'calico/node is not ready: felix is not ready: readiness probe reporting 503',
    );
    felixStatus = 204;
  });

  it('-bird-ready needs every peer while the node is young, one later', async () => {
    peer2 = 'start  09:07:36.607  Active        Socket: Connection refused';
    expect(await runProbes(['bird-ready'], { env: env(), thresholdMs: 30_000 })).toBe(
      'calico/node is not ready: BIRD is not ready: BGP not established with 198.18.0.13',
    );
    const old = new Date(Date.now() - 60_000);
    await utimes(join(dir, 'nodename'), old, old);
    expect(await runProbes(['bird-ready'], { env: env(), thresholdMs: 30_000 })).toBeUndefined();
    peer2 = 'up     09:07:36.607  Established   ';
  });

  it('fail when there is no BIRD or no nodename file', async () => {
    const noBird = { ...env(), CALICO_VAR_RUN_DIR: join(dir, 'missing') };
    expect(await runProbes(['bird6-live'], { env: env(), thresholdMs: 1 })).toMatch(
      /^calico\/node is not ready: bird6 is not live: .*bird6\.ctl/,
    );
    expect(await runProbes(['bird-live'], { env: noBird, thresholdMs: 1 })).toMatch(/bird is not live/);
    expect(
      await runProbes(['bird-ready'], {
        env: { ...env(), CALICO_VAR_LIB_DIR: join(dir, 'missing') },
        thresholdMs: 1,
      }),
    ).toMatch(/^calico\/node is not ready: BIRD is not ready: Failed to stat\(\) nodename file/);
  });
});
