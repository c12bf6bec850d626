/**
 * BIRD's control-socket protocol, as text: splitting a byte stream into replies, and reading the
 * replies of the commands this package uses. Pure; `bird-control-client.ts` does the socket.
 *
 * The protocol (BIRD `doc/reply_codes`, seen on BIRD 2.0.12):
 * - On connect BIRD sends `0001 BIRD <version> ready.`
 * - Each reply line starts with a 4-digit code. `dddd-text` means more lines follow; `dddd text`
 *   (code, space) ends the reply. A line starting with a space continues the previous code.
 * - 0xxx: success/status, 1xxx: table data, 2xxx: table heading, 8xxx: run-time error,
 *   9xxx: syntax error in the command.
 */
import { BirdBridgeError } from '../errors.js';

export interface ReplyLine {
  code: number;
  /** The text after the code and its separator (continuation lines without their leading space). */
  text: string;
}

export interface BirdReply {
  lines: ReplyLine[];
  /** Code of the last line: what the reply amounts to (0 = OK, 8xxx/9xxx = error). */
  code: number;
  /** Text of the last line. */
  message: string;
}

const LINE_RE = /^(\d{4})([ -])(.*)$/;

/**
 * Splits a stream of text into replies. Feed chunks as they arrive; each complete reply is
 * returned once. A line that is neither numbered nor a continuation is a protocol error.
 */
export class ReplySplitter {
  private buf = '';
  private lines: ReplyLine[] = [];
  private lastCode: number | undefined;

  /** True while a reply has started but not ended (or a partial line is buffered). */
  get pending(): boolean {
    return this.lines.length > 0 || this.buf.length > 0;
  }

  push(chunk: string): BirdReply[] {
    this.buf += chunk;
    const out: BirdReply[] = [];
    for (;;) {
      const nl = this.buf.indexOf('\n');
      if (nl < 0) break;
      const raw = this.buf.slice(0, nl);
      this.buf = this.buf.slice(nl + 1);
      if (raw.startsWith(' ')) {
        if (this.lastCode === undefined) {
          throw new BirdBridgeError(
            'control-protocol',
            `continuation line before any reply code: ${JSON.stringify(raw)}`,
          );
        }
        this.lines.push({ code: this.lastCode, text: raw.slice(1) });
        continue;
      }
      const m = LINE_RE.exec(raw);
      if (!m) throw new BirdBridgeError('control-protocol', `not a BIRD reply line: ${JSON.stringify(raw)}`);
      const code = Number(m[1]);
      this.lines.push({ code, text: m[3]! });
      this.lastCode = code;
      if (m[2] === ' ') {
        out.push({ lines: this.lines, code, message: m[3]!.trim() });
        this.lines = [];
        this.lastCode = undefined;
      }
    }
    return out;
  }
}

/** All replies in a complete text (the recorded form); throws if the text ends mid-reply. */
export function parseReplies(text: string): BirdReply[] {
  const s = new ReplySplitter();
  const replies = s.push(text.endsWith('\n') ? text : `${text}\n`);
  if (s.pending) {
    throw new BirdBridgeError('control-protocol', 'reply text ends before its final line');
  }
  return replies;
}

export function isErrorReply(r: BirdReply): boolean {
  return r.code >= 8000;
}

// ---- show protocols --------------------------------------------------------------------------

export interface ProtocolRow {
  name: string;
  /** `BGP`, `Kernel`, `Device`, `Direct`, `Static`, … */
  proto: string;
  /** `master4`, or `---` for protocols without a table. */
  table: string;
  /** `up`, `down`, `start`, `stop`, `flush`. */
  state: string;
  /** As BIRD prints it (its `timeformat protocol`), e.g. `09:07:36.607` or `2026-11-22`. */
  since: string;
  /** Protocol-specific, e.g. `Established`, `Active        Socket: Network is unreachable`. */
  info: string;
}

const DATE_RE = /^\d{4}-\d{2}-\d{2}$/;
const TIME_RE = /^\d{2}:\d{2}:\d{2}(\.\d+)?$/;

/** Rows of `show protocols` (codes 1002; the 2002 heading is checked and skipped). */
export function parseProtocols(reply: BirdReply): ProtocolRow[] {
  if (isErrorReply(reply)) throw new BirdBridgeError('command-failed', reply.message);
  const rows: ProtocolRow[] = [];
  for (const l of reply.lines) {
    if (l.code !== 1002) continue;
    const m = /^(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)(?:\s+(\S+))?(.*)$/.exec(l.text);
    if (!m)
      throw new BirdBridgeError('control-protocol', `unexpected protocol row: ${JSON.stringify(l.text)}`);
    let since = m[5]!;
    let rest = `${m[6] ?? ''}${m[7] ?? ''}`;
    if (DATE_RE.test(since) && m[6] !== undefined && TIME_RE.test(m[6])) {
      since = `${since} ${m[6]}`;
      rest = m[7] ?? '';
    } else if (m[6] !== undefined) {
      rest = `${m[6]}${m[7] ?? ''}`;
    }
    rows.push({ name: m[1]!, proto: m[2]!, table: m[3]!, state: m[4]!, since, info: rest.trim() });
  }
  return rows;
}

// ---- show route --------------------------------------------------------------------------

export interface RouteRow {
  table: string;
  network: string;
  /** `unicast`, `blackhole`, `unreachable`, `prohibit`. */
  type: string;
  protocol: string;
  since: string;
  /** `from <addr>` in the bracket: the BGP neighbour the route was learned from. */
  from?: string;
  /** The route BIRD selected as best for this network (`*`). */
  primary: boolean;
  preference: number;
  /** IGP metric after the slash, when BIRD shows one. */
  metric?: number;
  /** `[i]`, `[AS64600i]`: BGP origin and AS path summary. */
  origin?: string;
  gateway?: string;
  interface?: string;
  /** `attribute: value` lines of `show route all`. */
  attributes: Record<string, string>;
}

const ROUTE_RE =
  /^(\S+)?\s+(\S+)\s+\[(\S+) ([^\]]*?)(?: from (\S+))?\](?: (\*))? \((\d+)(?:\/(\d+|-|\?))?\)(?: \[(.*)\])?\s*$/;

/** Routes of `show route [all]` (codes 1007 and 1008/1012 for attribute lines). */
export function parseRoutes(reply: BirdReply): RouteRow[] {
  if (isErrorReply(reply)) throw new BirdBridgeError('command-failed', reply.message);
  const rows: RouteRow[] = [];
  let table = '';
  let network = '';
  let current: RouteRow | undefined;
  for (const l of reply.lines) {
    if (l.code === 0) continue;
    const t = /^Table (\S+):$/.exec(l.text);
    if (t) {
      table = t[1]!;
      continue;
    }
    if (l.text.startsWith('\t')) {
      const a = l.text.slice(1);
      if (!current) continue;
      const via = /^via (\S+) on (\S+)/.exec(a);
      const dev = /^dev (\S+)/.exec(a);
      const kv = /^([^:]+): ?(.*)$/.exec(a);
      if (via) {
        current.gateway = via[1];
        current.interface = via[2];
      } else if (dev) current.interface = dev[1];
      else if (kv) current.attributes[kv[1]!] = kv[2]!;
      continue;
    }
    const m = ROUTE_RE.exec(l.text);
    if (!m) throw new BirdBridgeError('control-protocol', `unexpected route line: ${JSON.stringify(l.text)}`);
    if (m[1]) network = m[1];
    current = {
      table,
      network,
      type: m[2]!,
      protocol: m[3]!,
      since: m[4]!,
      ...(m[5] ? { from: m[5] } : {}),
      primary: m[6] === '*',
      preference: Number(m[7]),
      ...(m[8] !== undefined && /^\d+$/.test(m[8]) ? { metric: Number(m[8]) } : {}),
      ...(m[9] !== undefined ? { origin: m[9] } : {}),
      attributes: {},
    };
    rows.push(current);
  }
  return rows;
}

// ---- show status -------------------------------------------------------------------------

export interface BirdStatus {
  version: string;
  routerId?: string;
  hostname?: string;
  serverTime?: string;
  lastReboot?: string;
  lastReconfiguration?: string;
  /** Final line, e.g. `Daemon is up and running`, `Reconfiguration in progress`. */
  message: string;
  /** Its code: 13 up and running, 14 reconfiguration in progress, 18 graceful restart… */
  code: number;
}

export function parseStatus(reply: BirdReply): BirdStatus {
  if (isErrorReply(reply)) throw new BirdBridgeError('command-failed', reply.message);
  const s: BirdStatus = { version: '', message: reply.message, code: reply.code };
  for (const l of reply.lines) {
    if (l.code === 1000) s.version = l.text.replace(/^BIRD\s+/, '');
    const pick = (re: RegExp) => re.exec(l.text)?.[1];
    s.routerId ??= pick(/^Router ID is (\S+)/);
    s.hostname ??= pick(/^Hostname is (\S+)/);
    s.serverTime ??= pick(/^Current server time is (.+)$/);
    s.lastReboot ??= pick(/^Last reboot on (.+)$/);
    s.lastReconfiguration ??= pick(/^Last reconfiguration on (.+)$/);
  }
  return s;
}

// ---- configure ---------------------------------------------------------------------------

export interface ConfigureResult {
  /** 3 reconfigured, 4 in progress, 18 confirmed, 19 nothing to do, 20 configuration OK (check). */
  code: number;
  message: string;
}

/** Reply of `configure`; an 8xxx reply (e.g. a parse error with file:line:col) throws. */
export function parseConfigure(reply: BirdReply): ConfigureResult {
  if (isErrorReply(reply)) throw new BirdBridgeError('command-failed', reply.message);
  return { code: reply.code, message: reply.message };
}

/** A BIRD string literal for a command argument (BIRD strings have no escapes). */
export function birdString(s: string): string {
  if (/["\n]/.test(s)) throw new BirdBridgeError('invalid-input', `cannot pass ${JSON.stringify(s)} to BIRD`);
  return `"${s}"`;
}
