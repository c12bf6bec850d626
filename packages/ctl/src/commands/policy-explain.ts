/**
 * `policy explain`: would this connection be allowed, and why? Answered from the datastore alone.
 *
 *   --from/--to (NS/POD | --from-ip | --from-hep) ──► addresses (explain/endpoints.ts)
 *   datastore lists (explain/world.ts) ──► PolicyWorld ──► PolicyEvaluator.evaluate(flow)
 *   trace ──► text (explain/render.ts) | -o yaml | -o json
 *
 * The evaluation is `@calico-ts/api/policy-eval`, the evaluator the randomised dataplane test
 * compares with Felix's nftables on real traffic.
 */
import { type Flow, PolicyEvaluator } from '@calico-ts/api/policy-eval';
import type { Datastore } from '@calico-ts/datastore';
import { CtlError } from '../errors.js';
import { type EndSpec, resolveEnd } from '../explain/endpoints.js';
import { renderExplanation } from '../explain/render.js';
import { readPolicyWorld } from '../explain/world.js';
import type { CommandContext } from './context.js';

export interface PolicyExplainArgs {
  from?: string;
  to?: string;
  fromIp?: string;
  toIp?: string;
  fromHep?: string;
  toHep?: string;
  port?: string;
  sourcePort?: string;
  protocol?: string;
  output?: string;
}

/** Where a flow's source port is not given: the first port of Linux's ephemeral range. */
export const DEFAULT_SOURCE_PORT = 32768;

function portArg(flag: string, text: string | undefined): number {
  if (text === undefined || text === '') throw new CtlError('usage', `${flag} is required`);
  if (!/^[0-9]+$/.test(text) || Number(text) < 1 || Number(text) > 65535) {
    throw new CtlError('usage', `${flag} must be a port number from 1 to 65535, not '${text}'`);
  }
  return Number(text);
}

function endSpec(side: 'from' | 'to', pod?: string, ip?: string, hep?: string): EndSpec {
  const given = [pod !== undefined, ip !== undefined, hep !== undefined].filter(Boolean).length;
  if (given !== 1) {
    throw new CtlError(
      'usage',
      `give exactly one of --${side} NAMESPACE/POD, --${side}-ip IP, --${side}-hep HOSTENDPOINT`,
    );
  }
  if (pod !== undefined) {
    const m = /^([^/]+)\/([^/]+)$/.exec(pod);
    if (!m) throw new CtlError('usage', `--${side} must be NAMESPACE/POD, not '${pod}'`);
    return { kind: 'pod', side, namespace: m[1]!, pod: m[2]! };
  }
  if (ip !== undefined) return { kind: 'ip', side, ip };
  return { kind: 'hep', side, name: hep! };
}

function outputArg(text: string | undefined): 'text' | 'yaml' | 'json' {
  const o = text ?? 'text';
  if (o === 'text' || o === 'yaml' || o === 'json') return o;
  throw new CtlError('usage', `unrecognized output format '${o}': use text, yaml or json`);
}

export async function policyExplainCommand(
  args: PolicyExplainArgs,
  ds: Datastore,
  ctx: CommandContext,
): Promise<number> {
  const protocol = (args.protocol ?? 'tcp').toLowerCase();
  if (protocol !== 'tcp' && protocol !== 'udp') {
    throw new CtlError('usage', `--protocol must be tcp or udp, not '${args.protocol}'`);
  }
  const dstPort = portArg('--port', args.port);
  const srcPort =
    args.sourcePort === undefined ? DEFAULT_SOURCE_PORT : portArg('--source-port', args.sourcePort);
  const output = outputArg(args.output);
  const from = endSpec('from', args.from, args.fromIp, args.fromHep);
  const to = endSpec('to', args.to, args.toIp, args.toHep);

  const world = await readPolicyWorld(ds);
  const src = resolveEnd(from, world);
  const dst = resolveEnd(to, world);
  if (src.ip === dst.ip) {
    throw new CtlError('usage', `the source and the destination are the same address ${src.ip}`);
  }
  const flow: Flow = { srcIP: src.ip, dstIP: dst.ip, protocol, srcPort, dstPort };
  let verdict: ReturnType<PolicyEvaluator['evaluate']>;
  try {
    verdict = new PolicyEvaluator(world).evaluate(flow);
  } catch (e) {
    throw new CtlError(
      'failed',
      `cannot explain ${protocol} ${src.ip} → ${dst.ip}:${dstPort}: ${(e as Error).message}`,
      {
        cause: e,
      },
    );
  }
  const result = { flow, from: src.described, to: dst.described, ...verdict };
  if (output === 'json') {
    const { goJsonIndent } = await import('../output/printers.js');
    ctx.io.stdout(`${goJsonIndent(result)}\n`);
  } else if (output === 'yaml') {
    const { toYaml } = await import('../output/printers.js');
    ctx.io.stdout(toYaml(result));
  } else {
    ctx.io.stdout(renderExplanation(result));
  }
  return 0;
}
