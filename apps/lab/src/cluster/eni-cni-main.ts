/**
 * The `lab-eni` CNI plugin's program (I/O; what it does is eni-cni.ts): reads the CNI environment
 * and the network configuration on stdin, runs `ip` and the host-local IPAM plugin, prints the
 * result or a CNI error. containerd execs it from the node's /opt/cni/bin (other-cni.ts writes the
 * wrapper there).
 *
 *   ADD   host-local ADD ─► veth eni…/eth0 (eth0 straight into the pod's namespace) ─► pod side ─►
 *         host side; a failure undoes what was done, last step first
 *   DEL   host-local DEL, the host side deleted (each idempotent)
 *   CHECK the host side exists
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  addResult,
  addressOf,
  CniError,
  type EniArgs,
  hostInterfaceName,
  hostSideCommands,
  parseEnv,
  podSideCommands,
  SUPPORTED_VERSIONS,
} from './eni-cni.js';

interface NetConf {
  cniVersion?: string;
  name?: string;
  type?: string;
  mtu?: number;
  ipam?: { type?: string };
}

function run(argv: string[], input?: string): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(argv[0]!, argv.slice(1), { input, encoding: 'utf8', timeout: 30_000 });
  return { status: r.status ?? 1, stdout: r.stdout ?? '', stderr: r.stderr ?? String(r.error ?? '') };
}

/** `ip`, in the pod's namespace when `netns` (a path: `ip -n` takes only names under /run/netns). */
const ipArgv = (netns?: string) => (netns ? ['nsenter', `--net=${netns}`, 'ip'] : ['ip']);

function ip(args: string[], what: string, netns?: string): string {
  const r = run([...ipArgv(netns), ...args]);
  if (r.status !== 0) throw new CniError(11, `${what}: ip ${args.join(' ')}: ${r.stderr.trim()}`);
  return r.stdout;
}

function ipBatch(lines: string[], what: string, netns?: string): void {
  const r = run([...ipArgv(netns), '-batch', '-'], `${lines.join('\n')}\n`);
  if (r.status !== 0) throw new CniError(11, `${what}: ${r.stderr.trim()}`);
}

function macOf(dev: string, netns?: string): string {
  const out = ip(['-j', 'link', 'show', dev], `reading ${dev}`, netns);
  const mac = (JSON.parse(out) as { address?: string }[])[0]?.address;
  if (!mac) throw new CniError(11, `${dev} has no MAC address`);
  return mac;
}

/** The IPAM plugin, exec'd from CNI_PATH with this plugin's environment and configuration. */
function ipam(conf: NetConf, raw: string, command: 'ADD' | 'DEL'): unknown {
  const type = conf.ipam?.type;
  if (!type) throw new CniError(7, 'the network configuration has no ipam.type');
  const dir = (process.env.CNI_PATH ?? '').split(':').find((d) => existsSync(join(d, type)));
  if (!dir)
    throw new CniError(7, `the IPAM plugin ${type} is not in CNI_PATH (${process.env.CNI_PATH ?? ''})`);
  const r = spawnSync(join(dir, type), [], {
    input: raw,
    encoding: 'utf8',
    env: { ...process.env, CNI_COMMAND: command },
    timeout: 30_000,
  });
  if (r.status !== 0) {
    const err = (() => {
      try {
        return JSON.parse(r.stdout) as { msg?: string };
      } catch {
        return { msg: r.stdout || r.stderr };
      }
    })();
    throw new CniError(11, `${type} ${command} failed: ${err.msg ?? ''}`.trim());
  }
  return command === 'ADD' ? JSON.parse(r.stdout) : undefined;
}

function add(a: EniArgs, conf: NetConf, raw: string): Record<string, unknown> {
  const host = hostInterfaceName(a.namespace, a.pod);
  const undo: (() => void)[] = [];
  try {
    const addr = addressOf(ipam(conf, raw, 'ADD'));
    undo.push(() => void ipam(conf, raw, 'DEL'));
    // A link of that name left by an earlier sandbox of the same pod goes first.
    run(['ip', 'link', 'del', host]);
    const mtu = conf.mtu ? ['mtu', String(conf.mtu)] : [];
    ip(
      ['link', 'add', host, ...mtu, 'type', 'veth', 'peer', 'name', a.ifName, ...mtu, 'netns', a.netns],
      'making the veth pair',
    );
    undo.push(() => void run(['ip', 'link', 'del', host]));
    const hostMac = macOf(host);
    ipBatch(podSideCommands({ ifName: a.ifName, ip: addr, hostMac }), 'wiring the pod side', a.netns);
    ipBatch(hostSideCommands({ host, ip: addr }), 'wiring the host side');
    return addResult({
      cniVersion: conf.cniVersion ?? '1.0.0',
      host,
      hostMac,
      ifName: a.ifName,
      podMac: macOf(a.ifName, a.netns),
      netns: a.netns,
      ip: addr,
    });
  } catch (e) {
    for (const u of undo.reverse()) {
      try {
        u();
      } catch {
        // best effort: the error that matters is the first one
      }
    }
    throw e;
  }
}

function del(a: EniArgs, conf: NetConf, raw: string): void {
  ipam(conf, raw, 'DEL');
  const host = hostInterfaceName(a.namespace, a.pod);
  const r = run(['ip', 'link', 'del', host]);
  if (r.status !== 0 && !/Cannot find device|does not exist/.test(r.stderr))
    throw new CniError(11, `deleting ${host}: ${r.stderr.trim()}`);
}

function main(): void {
  let cniVersion = '1.0.0';
  try {
    const a = parseEnv(process.env);
    if (a.command === 'VERSION') {
      process.stdout.write(JSON.stringify({ cniVersion, supportedVersions: SUPPORTED_VERSIONS }));
      return;
    }
    const raw = readFileSync(0, 'utf8');
    const conf = JSON.parse(raw) as NetConf;
    cniVersion = conf.cniVersion ?? cniVersion;
    if (a.command === 'ADD') process.stdout.write(JSON.stringify(add(a, conf, raw)));
    else if (a.command === 'DEL') del(a, conf, raw);
    else if (a.command === 'CHECK') {
      if (run(['ip', 'link', 'show', hostInterfaceName(a.namespace, a.pod)]).status !== 0)
        throw new CniError(11, `${hostInterfaceName(a.namespace, a.pod)} does not exist`);
    } else throw new CniError(4, `unknown CNI_COMMAND ${JSON.stringify(a.command)}`);
  } catch (e) {
    const code = e instanceof CniError ? e.code : 999;
    process.stdout.write(JSON.stringify({ cniVersion, code, msg: (e as Error).message }));
    process.exitCode = 1;
  }
}

main();
