/**
 * What `calicoctl node diags` collects on a host, and how the bundle is laid out (pure): the
 * commands whose output support needs (addresses, links, routes and rules of both families,
 * neighbours, the nftables ruleset with handles, iptables and ipsets where present, sockets, the
 * network sysctls, conntrack statistics), each into `diagnostics/<file>`, and the Calico logs
 * under `logs/`. Nothing is read from /etc/calico or the environment: a calicoctl.cfg or an env
 * may carry etcd keys or tokens, and the bundle is meant to be handed to others.
 */

export interface DiagCommand {
  /** The file under `diagnostics/` that gets its output. */
  readonly file: string;
  /** What the progress line says is being dumped. */
  readonly title: string;
  readonly argv: readonly string[];
}

export const DIAG_COMMANDS: readonly DiagCommand[] = [
  { file: 'date', title: 'date', argv: ['date', '-u', '+%Y-%m-%dT%H:%M:%SZ'] },
  { file: 'hostname', title: 'hostname', argv: ['hostname'] },
  { file: 'ipv4_addr', title: 'interface addresses (IPv4)', argv: ['ip', '-4', 'addr', 'show'] },
  { file: 'ipv6_addr', title: 'interface addresses (IPv6)', argv: ['ip', '-6', 'addr', 'show'] },
  { file: 'links', title: 'links', argv: ['ip', '-d', '-s', 'link', 'show'] },
  { file: 'ipv4_route', title: 'routes (IPv4)', argv: ['ip', '-4', 'route', 'show', 'table', 'all'] },
  { file: 'ipv6_route', title: 'routes (IPv6)', argv: ['ip', '-6', 'route', 'show', 'table', 'all'] },
  { file: 'ipv4_rule', title: 'routing rules (IPv4)', argv: ['ip', '-4', 'rule', 'show'] },
  { file: 'ipv6_rule', title: 'routing rules (IPv6)', argv: ['ip', '-6', 'rule', 'show'] },
  { file: 'neighbours', title: 'neighbours', argv: ['ip', 'neigh', 'show'] },
  { file: 'nftables', title: 'nftables', argv: ['nft', '-a', 'list', 'ruleset'] },
  { file: 'iptables-save', title: 'iptables (IPv4)', argv: ['iptables-save', '-c'] },
  { file: 'ip6tables-save', title: 'iptables (IPv6)', argv: ['ip6tables-save', '-c'] },
  { file: 'ipset', title: 'ipsets', argv: ['ipset', 'list'] },
  { file: 'sockets', title: 'sockets', argv: ['ss', '-a', '-n', '-p'] },
  { file: 'sysctl_net', title: 'network sysctls', argv: ['sysctl', '-a', '--pattern', '^net\\.'] },
  { file: 'conntrack_stats', title: 'conntrack statistics', argv: ['conntrack', '-S'] },
];

export interface CommandOutcome {
  /** Exit status; null when the program could not be started or was killed. */
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Why it did not run (not found, timed out), when it did not. */
  readonly error?: string;
}

/** The file content for a command's outcome: its output, and a trailer when it did not succeed. */
export function outcomeText(c: DiagCommand, o: CommandOutcome): string {
  if (o.error !== undefined) return `not collected: ${c.argv.join(' ')}: ${o.error}\n`;
  if (o.code === 0) return o.stdout;
  return `${o.stdout}\n--- ${c.argv.join(' ')} exited ${o.code ?? 'on a signal'}: ${o.stderr.trim()}\n`;
}

/** `diags-YYYYMMDD_HHMMSS.tar.gz` for `now` (UTC). */
export function bundleName(now: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `diags-${now.getUTCFullYear()}${p(now.getUTCMonth() + 1)}${p(now.getUTCDate())}_${p(now.getUTCHours())}${p(now.getUTCMinutes())}${p(now.getUTCSeconds())}.tar.gz`;
}
