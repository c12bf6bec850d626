/**
 * `node status`: is Calico's agent running on this host, and the state of its BGP sessions as
 * BIRD reports them. Needs root (BIRD's sockets are root's). Never checks versions.
 */
import { basename } from 'node:path';
import { CtlError } from '../errors.js';
import { parseBirdProtocols, renderPeerTable } from '../node/bird-status.js';
import type { NodeHost } from '../node/node-host.js';
import { checkSystem } from '../node/system-checks.js';
import type { SystemHost } from '../node/system-host.js';
import type { CommandContext } from './context.js';

function argvHas(argv: readonly string[], name: string): boolean {
  return argv.slice(0, 2).some((a) => basename(a) === name);
}

export async function nodeStatusCommand(host: NodeHost, ctx: CommandContext): Promise<number> {
  if (!host.isRoot())
    throw new CtlError('unsupported', 'Need super user privileges: Operation not permitted');
  const procs = await host.processes();
  const felix = procs.some(
    (p) => argvHas(p, 'calico-felix') || (argvHas(p, 'calico-node') && p.includes('-felix')),
  );
  if (!felix) throw new CtlError('failed', 'Calico process is not running.');
  ctx.io.stdout('Calico process is running.\n');
  const bird4 = procs.some((p) => basename(p[0] ?? '') === 'bird');
  const bird6 = procs.some((p) => basename(p[0] ?? '') === 'bird6');
  if (bird4 || bird6) {
    for (const [ipv, running, name] of [
      ['4', bird4, 'bird'],
      ['6', bird6, 'bird6'],
    ] as const) {
      if (!running) {
        ctx.io.stdout(`\nINFO: BIRDv${ipv} process: '${name}' is not running.\n`);
        continue;
      }
      ctx.io.stdout(`\nIPv${ipv} BGP status\n`);
      let reply: string;
      try {
        reply = await host.showProtocols(ipv);
      } catch (e) {
        ctx.io.stdout(
          `Error querying BIRD: unable to connect to BIRDv${ipv} socket: ${(e as Error).message}`,
        );
        continue;
      }
      let peers: ReturnType<typeof parseBirdProtocols>;
      try {
        peers = parseBirdProtocols(reply, ipv);
      } catch (e) {
        throw new CtlError('failed', `Error executing command: ${(e as Error).message}`);
      }
      ctx.io.stdout(peers.length === 0 ? `No IPv${ipv} peers found.\n` : renderPeerTable(peers));
    }
  } else {
    ctx.io.stdout('\nNone of the BGP backend processes (BIRD or GoBGP) are running.\n');
  }
  ctx.io.stdout('\n');
  return 0;
}

/**
 * `node checksystem`: whether this host can run a calico-ts node (kernel version, the kernel
 * features of the nftables dataplane, the programs it runs). Needs root; never checks versions.
 */
export async function nodeChecksystemCommand(
  args: { kernelConfig?: string },
  host: SystemHost,
  ctx: CommandContext,
): Promise<number> {
  if (!host.isRoot())
    throw new CtlError('unsupported', 'Need super user privileges: Operation not permitted');
  const r = checkSystem(await host.facts(args.kernelConfig));
  ctx.io.stdout(r.text);
  if (!r.ok) {
    throw new CtlError(
      'failed',
      "System doesn't meet one or more minimum systems requirements to run Calico",
    );
  }
  return 0;
}
