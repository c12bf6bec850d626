/**
 * The all-interfaces host endpoint (`interfaceName: "*"`, as kube-controllers' automatic host
 * endpoints have) with real traffic: a "host" network namespace whose veth is covered by no named
 * host endpoint, programmed by NftablesDataplane from the rendered ruleset, and a "client"
 * namespace on the other end with two source addresses. A policy selecting the "*" endpoint denies
 * one source; pings and TCP connections show what reaches the host, and a failsafe port stays
 * open. Needs root, ip, nft, ping and node.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gnp, hep, profile } from '../calc/testing-internal/resources.js';
import type { CalcResource } from '../calc/types.js';
import { DEFAULT_RULES_CONFIG } from '../rules/config.js';
import { HostClientPair, hostEndpointTestPrerequisite } from './testing-internal/host-client-pair.js';

const why = hostEndpointTestPrerequisite('all-interfaces-host-endpoint.int.test');
const pair = new HostClientPair('fxah', 'eth0');
const { hostNs, clientNs, host: HOST } = pair;
const ALLOWED = pair.addr(2);
const DENIED = pair.addr(3);
/** A service port on the host; the namespace is new, so any port is free in it. */
const SERVICE_PORT = randomInt(20_000, 60_000);
/** In the default FailsafeInboundHostPorts. */
const FAILSAFE_PORT = 22;

const allowAll = profile('projectcalico-default-allow', {
  ingress: [{ action: 'Allow' }],
  egress: [{ action: 'Allow' }],
});
/** What kube-controllers creates for node1: all interfaces, node labels, the allow-all profile. */
const autoHep = hep('node1-auto-hep', {
  labels: { 'projectcalico.org/created-by': 'calico-kube-controllers' },
  ips: [HOST],
  iface: '*',
  profiles: ['projectcalico-default-allow'],
});
const denySource = gnp('deny-source', {
  selector: "projectcalico.org/created-by == 'calico-kube-controllers'",
  // A tier with a policy drops what none of its policies allow: allow everything else.
  ingress: [{ action: 'Deny', source: { nets: [`${DENIED}/32`] } }, { action: 'Allow' }],
});

const ping = (src: string) => pair.ping(src);

/** Connects from `src` to HOST:`port`; true when the server's greeting arrives. */
function tcp(src: string, port: number): boolean {
  const script = `
    const s = require('node:net').connect({ host: ${JSON.stringify(HOST)}, port: ${port},
      localAddress: ${JSON.stringify(src)} });
    s.setTimeout(1500, () => process.exit(2));
    s.on('data', (d) => process.exit(String(d) === 'hello' ? 0 : 3));
    s.on('error', () => process.exit(1));`;
  const r = spawnSync('ip', ['netns', 'exec', clientNs, process.execPath, '-e', script], { timeout: 5000 });
  return r.status === 0;
}

describe.skipIf(why !== undefined)('all-interfaces host endpoint in real namespaces', () => {
  let server: ChildProcess | undefined;
  const program = (resources: CalcResource[], config = DEFAULT_RULES_CONFIG) =>
    pair.program(resources, config);

  function stopServer(): void {
    if (server?.pid !== undefined && server.exitCode === null) server.kill('SIGKILL');
  }

  beforeAll(async () => {
    await pair.setUp([ALLOWED, DENIED]);
    try {
      // A greeting server on the service and failsafe ports in the host namespace.
      const script = `
        const net = require('node:net');
        let up = 0;
        for (const port of [${SERVICE_PORT}, ${FAILSAFE_PORT}]) {
          net.createServer((c) => c.end('hello')).listen(port, '0.0.0.0', () => {
            if (++up === 2) console.log('listening');
          });
        }`;
      server = spawn('ip', ['netns', 'exec', hostNs, process.execPath, '-e', script], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('server did not start')), 10_000);
        server!.stdout!.on('data', (d) => {
          if (String(d).includes('listening')) {
            clearTimeout(timer);
            resolve();
          }
        });
        server!.on('exit', (code) => reject(new Error(`server exited with ${code}`)));
      });
    } catch (e) {
      stopServer();
      await pair.tearDown();
      throw e;
    }
  }, 30_000);

  afterAll(async () => {
    stopServer();
    await pair.tearDown();
  });

  it('without policy, the allow-all profile of the "*" endpoint lets every source in', async () => {
    await program([allowAll, autoHep]);
    expect(ping(ALLOWED)).toBe(true);
    expect(ping(DENIED)).toBe(true);
    expect(tcp(DENIED, SERVICE_PORT)).toBe(true);
  });

  it('a policy on the "*" endpoint denies one source (ping and TCP) while the other passes', async () => {
    await program([allowAll, autoHep, denySource]);
    expect(ping(DENIED)).toBe(false);
    expect(tcp(DENIED, SERVICE_PORT)).toBe(false);
    expect(ping(ALLOWED)).toBe(true);
    expect(tcp(ALLOWED, SERVICE_PORT)).toBe(true);
  });

  it('the failsafe port stays reachable from the denied source', async () => {
    await program([allowAll, autoHep, denySource]);
    expect(tcp(DENIED, SERVICE_PORT)).toBe(false);
    expect(tcp(DENIED, FAILSAFE_PORT)).toBe(true);
    // It is the failsafe that opens it: without failsafe ports the policy drops it too.
    await program([allowAll, autoHep, denySource], {
      ...DEFAULT_RULES_CONFIG,
      failsafeInboundHostPorts: [],
      failsafeOutboundHostPorts: [],
    });
    expect(tcp(DENIED, FAILSAFE_PORT)).toBe(false);
    expect(tcp(ALLOWED, FAILSAFE_PORT)).toBe(true);
  });

  it('another node\'s "*" endpoint does not apply here', async () => {
    const elsewhere = { ...autoHep, spec: { ...autoHep.spec, node: 'node2' } };
    await program([allowAll, elsewhere, denySource]);
    expect(ping(DENIED)).toBe(true);
    expect(tcp(DENIED, SERVICE_PORT)).toBe(true);
  });
});
