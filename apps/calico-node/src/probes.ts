/**
 * `calico-node -felix-ready | -felix-live | -bird-ready | -bird-live | -bird6-ready | -bird6-live`:
 * upstream's health checks for Kubernetes probes. Each check runs at once; the first failure is
 * printed in upstream's words and the exit status is 1; all good is silent with status 0.
 *
 *   felix:  GET http://<FELIX_HEALTHHOST|localhost>:<FELIX_HEALTHPORT|9099>/readiness|/liveness
 *   bird:   BIRD's control socket <run dir>/bird.ctl (bird6.ctl): `show status` (live),
 *           `show protocols` + the age of <lib dir>/nodename (ready, see birdReadiness)
 */
import { stat } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { BirdControlClient } from '@calico-ts/bird-bridge';
import { bgpPeersOf, birdReadiness } from './bgp-health.js';
import type { Env } from './env.js';
import { DEFAULT_VAR_LIB_DIR, DEFAULT_VAR_RUN_DIR } from './env.js';
import { errorMessage } from './errors.js';

export type ProbeName =
  | 'felix-ready'
  | 'felix-live'
  | 'bird-ready'
  | 'bird-live'
  | 'bird6-ready'
  | 'bird6-live';
export const PROBE_NAMES: readonly ProbeName[] = [
  'felix-ready',
  'felix-live',
  'bird-ready',
  'bird-live',
  'bird6-ready',
  'bird6-live',
];

export interface ProbeContext {
  readonly env: Env;
  readonly thresholdMs: number;
  readonly now?: () => number;
  readonly timeoutMs?: number;
}

function httpStatus(url: string, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'GET', timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from ${url} within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

async function checkFelix(ctx: ProbeContext, kind: 'readiness' | 'liveness'): Promise<void> {
  const host = ctx.env.FELIX_HEALTHHOST || 'localhost';
  const port = ctx.env.FELIX_HEALTHPORT || '9099';
  const status = await httpStatus(`http://${host}:${port}/${kind}`, ctx.timeoutMs ?? 5000);
  if (status < 200 || status >= 400) throw new Error(`${kind} probe reporting ${status}`);
}

function birdClient(ctx: ProbeContext, six: boolean): BirdControlClient {
  const runDir = ctx.env.CALICO_VAR_RUN_DIR || DEFAULT_VAR_RUN_DIR;
  return new BirdControlClient(join(runDir, six ? 'bird6.ctl' : 'bird.ctl'), {
    timeoutMs: ctx.timeoutMs ?? 5000,
  });
}

async function checkBirdLive(ctx: ProbeContext, six: boolean): Promise<void> {
  // birdcl prints `BIRD <version>` first; the parsed reply holds the version without the word.
  const status = await birdClient(ctx, six).showStatus();
  if (status.version === '') throw new Error(`bad response from bird: ${status.message}`);
}

async function checkBirdReady(ctx: ProbeContext, six: boolean): Promise<void> {
  const libDir = ctx.env.CALICO_VAR_LIB_DIR || DEFAULT_VAR_LIB_DIR;
  const nodenameFile = join(libDir, 'nodename');
  let mtimeMs: number;
  try {
    mtimeMs = (await stat(nodenameFile)).mtimeMs;
  } catch (e) {
    throw new Error(`Failed to stat() nodename file: ${errorMessage(e)}`);
  }
  const client = birdClient(ctx, six);
  const peers = bgpPeersOf(await client.showProtocols());
  const status = await client.showStatus();
  const gr = /graceful restart/i.test(status.message);
  const age = (ctx.now ?? Date.now)() - mtimeMs;
  const v = birdReadiness(peers, age, ctx.thresholdMs, gr);
  if (!v.ok) throw new Error(v.reason);
}

const CHECKS: Record<ProbeName, { run: (ctx: ProbeContext) => Promise<void>; prefix: string }> = {
  'felix-live': {
    run: (c) => checkFelix(c, 'liveness'),
    prefix: 'calico/node is not ready: Felix is not live',
  },
  'felix-ready': {
    run: (c) => checkFelix(c, 'readiness'),
    prefix: 'calico/node is not ready: felix is not ready',
  },
  'bird-live': { run: (c) => checkBirdLive(c, false), prefix: 'calico/node is not ready: bird is not live' },
  'bird6-live': { run: (c) => checkBirdLive(c, true), prefix: 'calico/node is not ready: bird6 is not live' },
  'bird-ready': {
    run: (c) => checkBirdReady(c, false),
    prefix: 'calico/node is not ready: BIRD is not ready',
  },
  'bird6-ready': {
    run: (c) => checkBirdReady(c, true),
    prefix: 'calico/node is not ready: BIRD6 is not ready',
  },
};

/** Runs the checks; resolves to the first failure's message, or undefined when all pass. */
export async function runProbes(names: readonly ProbeName[], ctx: ProbeContext): Promise<string | undefined> {
  const results = await Promise.all(
    names.map(async (n) => {
      try {
        await CHECKS[n].run(ctx);
        return undefined;
      } catch (e) {
        return `${CHECKS[n].prefix}: ${errorMessage(e)}`;
      }
    }),
  );
  return results.find((r) => r !== undefined);
}
