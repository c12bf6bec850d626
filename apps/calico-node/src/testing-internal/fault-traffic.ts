/**
 * Traffic and observation for Felix's fault tests, on top of {@link FelixLab}:
 *
 * ```
 *  client pod ── steady flows (UDP datagrams, TCP connects, iperf3) ──► server pod
 *  intruder pod ─ the same flows, which policy denies ──────────────────► server pod
 *                                                                        │ sniffer: an nft table of
 *                                                                        │ its own in the server pod's
 *                                                                        │ namespace, prerouting at
 *                                                                        │ -500, counting per source
 *  node netns: `nft monitor` records every change made to the ruleset while it runs
 * ```
 *
 * The sniffer sits in the receiving pod's namespace, not in the node's: it sees every packet that
 * crossed the node, whatever the node's rules did, and nothing Felix programs can hide it. Each flow
 * counts what it sent and what came back, so a test can say "sent 1,500, 1,500 arrived" and "sent
 * 1,500, 0 arrived". Everything here is started through the lab and removed with it.
 */
import type { ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { collectLines, type FelixLab, firstLine, type Pod } from './felix-lab.js';

/**
 * A steady flow. UDP: one socket (one source port) sends a datagram every interval and counts the
 * echoes. TCP: a new connection every interval, counted as ok when it connects within the timeout.
 * Prints `stat <sent> <ok> <fail>` every 200 ms; SIGTERM stops the sending and prints the final
 * count once what is in flight has been answered or timed out.
 */
const FLOW_SRC = `
const [proto, host, portS, everyS, timeoutS] = process.argv.slice(1);
const port = Number(portS), every = Number(everyS), timeout = Number(timeoutS);
let sent = 0, ok = 0, fail = 0, sender;
const report = () => process.stdout.write('stat ' + sent + ' ' + ok + ' ' + fail + '\\n');
if (proto === 'udp') {
  const u = require('node:dgram').createSocket('udp4');
  u.on('error', () => {});
  u.on('message', () => { ok++; });
  u.bind(0, () => { sender = setInterval(() => u.send('x', port, host, (e) => { if (e) fail++; else sent++; }), every); });
} else {
  const net = require('node:net');
  sender = setInterval(() => {
    sent++;
    let done = false;
    const s = net.connect(port, host);
    const end = (good) => { if (done) return; done = true; clearTimeout(t); if (good) ok++; else fail++; s.destroy(); };
    const t = setTimeout(() => end(false), timeout);
    s.on('connect', () => end(true));
    s.on('error', () => end(false));
  }, every);
}
setInterval(report, 200);
// SIGTERM: send nothing more, let the last answers (or timeouts) come in, then the final count.
process.on('SIGTERM', () => { clearInterval(sender); setTimeout(() => { report(); process.exit(0); }, timeout + 100); });
process.stdout.write('started\\n');
`;

/** What a flow counted: sent, answered (UDP echo or TCP connect) and failed. */
export interface FlowStats {
  readonly sent: number;
  readonly ok: number;
  readonly fail: number;
}

/** A running {@link startFlow}. */
export interface Flow {
  /** The latest counts the flow printed. */
  stats(): FlowStats;
  /** Ends the flow and resolves with its final counts. */
  stop(): Promise<FlowStats>;
}

/** Starts a steady flow from `from` to `host:port` (see FLOW_SRC), one packet or connect per `everyMs`. */
export async function startFlow(
  lab: FelixLab,
  from: Pod,
  opts: { proto: 'udp' | 'tcp'; host: string; port: number; everyMs: number; timeoutMs?: number },
): Promise<Flow> {
  const child = lab.spawnIn(from.netns, process.execPath, [
    '-e',
    FLOW_SRC,
    opts.proto,
    opts.host,
    String(opts.port),
    String(opts.everyMs),
    String(opts.timeoutMs ?? 1000),
  ]);
  const lines: string[] = [];
  const started = firstLine(child, 'started');
  collectLines(child, lines);
  await started;
  const latest = (): FlowStats => {
    const last = lines.filter((l) => l.startsWith('stat ')).at(-1);
    if (!last) return { sent: 0, ok: 0, fail: 0 };
    const [sent, ok, fail] = last.slice(5).split(' ').map(Number);
    return { sent: sent!, ok: ok!, fail: fail! };
  };
  return {
    stats: latest,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      return latest();
    },
  };
}

/** One counter of a {@link Sniffer}: a name and the nft match it counts (`ip saddr 198.19.0.5`). */
export interface SnifferCounter {
  readonly name: string;
  readonly match: string;
}

/**
 * Packet counters in a namespace, in an `inet` table of their own hooked at prerouting priority
 * -500: each counts every packet arriving in that namespace that its match selects, before
 * anything else there sees it.
 */
export class Sniffer {
  readonly table: string;

  constructor(
    readonly netns: string,
    name: string,
    readonly counters: readonly SnifferCounter[],
  ) {
    this.table = name.replace(/[^a-zA-Z0-9_]/g, '_');
    const lines = [`table inet ${this.table} {`];
    for (const c of counters) lines.push(`  counter ${c.name} { }`);
    lines.push('  chain pre {', '    type filter hook prerouting priority -500; policy accept;');
    for (const c of counters) lines.push(`    ${c.match} counter name ${c.name}`);
    lines.push('  }', '}');
    execFileSync('nsenter', [`--net=/run/netns/${netns}`, 'nft', '-f', '-'], {
      input: `${lines.join('\n')}\n`,
    });
  }

  /** Packets counted so far, by counter name. */
  packets(): Record<string, number> {
    const out = execFileSync(
      'nsenter',
      [`--net=/run/netns/${this.netns}`, 'nft', '-j', 'list', 'counters', 'table', 'inet', this.table],
      { encoding: 'utf8' },
    );
    const items = (JSON.parse(out) as { nftables: { counter?: { name: string; packets: number } }[] })
      .nftables;
    const counts: Record<string, number> = {};
    for (const i of items) if (i.counter) counts[i.counter.name] = i.counter.packets;
    return counts;
  }

  /** Deletes the table (the namespace going also removes it). */
  remove(): void {
    try {
      execFileSync(
        'nsenter',
        [`--net=/run/netns/${this.netns}`, 'nft', 'delete', 'table', 'inet', this.table],
        {
          stdio: 'ignore',
        },
      );
    } catch {
      // already gone with its namespace
    }
  }
}

/** `nft monitor` in the lab's node namespace, line-buffered: every ruleset change, as it happens. */
export async function monitorRuleset(lab: FelixLab): Promise<{ lines: string[]; child: ChildProcess }> {
  const child = lab.spawnIn(lab.node, 'stdbuf', ['-oL', 'nft', 'monitor', 'ruleset']);
  const lines: string[] = [];
  collectLines(child, lines);
  // nft opens its netlink socket at once; give it a moment, then prove it listens with a change of
  // our own (a table made and deleted) before anything relies on its silence.
  const probe = `felixfault_probe_${process.pid}`;
  const end = Date.now() + 10_000;
  while (!lines.some((l) => l.includes(probe))) {
    if (Date.now() > end) throw new Error(`nft monitor printed nothing for a change: ${lines.join('\n')}`);
    lab.nft(['add', 'table', 'ip', probe]);
    lab.nft(['delete', 'table', 'ip', probe]);
    await new Promise((r) => setTimeout(r, 200));
  }
  await new Promise((r) => setTimeout(r, 200));
  lines.length = 0;
  return { lines, child };
}

/** One second of an iperf3 run: bytes moved and the sender's retransmits. */
export interface IperfInterval {
  readonly start: number;
  readonly bytes: number;
  readonly retransmits: number;
}

/** What an iperf3 client run reports (from its `-J` output). */
export interface IperfResult {
  readonly exitCode: number | null;
  readonly error?: string;
  readonly intervals: IperfInterval[];
  readonly sentBytes: number;
  readonly receivedBytes: number;
  readonly retransmits: number;
}

/**
 * An iperf3 TCP test from `from` to an `iperf3 -s -1` started in `to`, `seconds` long, at most
 * `mbps` (so it leaves CPU for the rest), with 1 s intervals.
 */
export async function iperf3(
  lab: FelixLab,
  from: Pod,
  to: Pod,
  opts: { port: number; seconds: number; mbps: number },
): Promise<{ done: Promise<IperfResult> }> {
  const server = lab.spawnIn(to.netns, 'iperf3', ['-s', '-1', '-p', String(opts.port), '--forceflush']);
  await firstLine(server, 'Server listening');
  const client = lab.spawnIn(from.netns, 'iperf3', [
    '-c',
    to.ip,
    '-p',
    String(opts.port),
    '-t',
    String(opts.seconds),
    '-b',
    `${opts.mbps}M`,
    '-i',
    '1',
    '-J',
  ]);
  let out = '';
  client.stdout?.on('data', (b: Buffer) => {
    out += b.toString('utf8');
  });
  const done = new Promise<IperfResult>((resolve) => {
    client.once('exit', (code) => {
      let j: {
        error?: string;
        intervals?: { sum: { start: number; bytes: number; retransmits?: number } }[];
        end?: { sum_sent?: { bytes: number; retransmits?: number }; sum_received?: { bytes: number } };
      } = {};
      try {
        j = JSON.parse(out);
      } catch {
        j = { error: `unreadable iperf3 output: ${out.slice(0, 400)}` };
      }
      resolve({
        exitCode: code,
        ...(j.error ? { error: j.error } : {}),
        intervals: (j.intervals ?? []).map((i) => ({
          start: i.sum.start,
          bytes: i.sum.bytes,
          retransmits: i.sum.retransmits ?? 0,
        })),
        sentBytes: j.end?.sum_sent?.bytes ?? 0,
        receivedBytes: j.end?.sum_received?.bytes ?? 0,
        retransmits: j.end?.sum_sent?.retransmits ?? 0,
      });
    });
  });
  return { done };
}
