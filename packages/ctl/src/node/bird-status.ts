/**
 * `calicoctl node status` calculation (pure): BIRD's `show protocols` reply in, the peer table out
 * (`calicoctl/calicoctl/commands/node/status.go`).
 *
 * BIRD's control protocol: `0001 … ready.`, then `2002-name proto table state since info` (the
 * headings), `1002-<first row>`, further rows starting with a space, and `0000` at the end. Only
 * BGP rows named `Global_<ip>`, `Node_<ip>` or `Mesh_<ip>` are Calico's peers; the address has
 * its `.` (or `:`) written as `_`. BIRD 2 capitalises the headings and may print the time of
 * "since" as its own column; both are accepted.
 */

export interface BgpPeer {
  peerIP: string;
  peerType: string;
  state: string;
  since: string;
  info: string;
}

const PEER_NAME = /^(Global|Node|Mesh)_(.+)$/;
const PEER_TYPES: Record<string, string> = {
  Global: 'global',
  Mesh: 'node-to-node mesh',
  Node: 'node specific',
};
const HEADINGS = ['name', 'proto', 'table', 'state', 'since', 'info'];

function peerAddress(encoded: string, ipv: '4' | '6'): string {
  const port = /_port_(\d+)$/.exec(encoded);
  const bare = port ? encoded.slice(0, port.index) : encoded;
  const ip = bare.replaceAll('_', ipv === '6' ? ':' : '.');
  if (!port) return ip;
  return ipv === '6' ? `[${ip}]:${port[1]}` : `${ip}:${port[1]}`;
}

function parseRow(line: string, ipv: '4' | '6'): BgpPeer | undefined {
  const cols = line.trim().split(/\s+/);
  if (cols.length < 6 || cols[1] !== 'BGP') return undefined;
  const m = PEER_NAME.exec(cols[0]!);
  if (!m) return undefined;
  let since = cols[4]!;
  let rest = cols.slice(5);
  // BIRD 2 with a date-and-time format prints "since" as two words.
  if (/^\d{4}-\d\d-\d\d$/.test(since) && rest.length > 1 && /^\d\d:\d\d/.test(rest[0]!)) {
    since = `${since} ${rest[0]}`;
    rest = rest.slice(1);
  }
  return {
    peerIP: peerAddress(m[2]!, ipv),
    peerType: PEER_TYPES[m[1]!]!,
    state: cols[3]!,
    since,
    info: rest.join(' '),
  };
}

/** Calico's BGP peers in a `show protocols` reply. Throws on a reply it cannot read. */
export function parseBirdProtocols(reply: string, ipv: '4' | '6'): BgpPeer[] {
  const peers: BgpPeer[] = [];
  for (const line of reply.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('0000')) break;
    if (line.startsWith('0001')) continue;
    if (line.startsWith('2002')) {
      const headings = line.slice(5).trim().toLowerCase().split(/\s+/);
      if (headings.join(' ') !== HEADINGS.join(' ')) throw new Error('unknown BIRD table output format');
    } else if (line.startsWith('1002')) {
      const p = parseRow(line.slice(5), ipv);
      if (p) peers.push(p);
    } else if (line.startsWith(' ')) {
      const p = parseRow(line.slice(1), ipv);
      if (p) peers.push(p);
    } else {
      throw new Error('unexpected output line from BIRD');
    }
  }
  return peers;
}

function center(s: string, width: number): string {
  const gap = width - [...s].length;
  const left = Math.floor(gap / 2);
  return ' '.repeat(left) + s + ' '.repeat(gap - left);
}

/** The peer table as upstream's tablewriter draws it: boxed, headings upper-case and centred. */
export function renderPeerTable(peers: readonly BgpPeer[]): string {
  const headings = ['PEER ADDRESS', 'PEER TYPE', 'STATE', 'SINCE', 'INFO'];
  const rows = peers.map((p) => [p.peerIP, p.peerType, p.state, p.since, p.info]);
  const widths = headings.map((h, i) => Math.max([...h].length, ...rows.map((r) => [...r[i]!].length)));
  const rule = `+${widths.map((w) => '-'.repeat(w + 2)).join('+')}+\n`;
  const line = (cells: string[], pad: (s: string, w: number) => string) =>
    `|${cells.map((c, i) => ` ${pad(c, widths[i]!)} `).join('|')}|\n`;
  return (
    rule +
    line(headings, center) +
    rule +
    rows.map((r) => line(r, (s, w) => s + ' '.repeat(w - [...s].length))).join('') +
    rule
  );
}
