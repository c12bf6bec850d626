/**
 * Text the lab prints, pure: aligned tables, the connectivity matrix and its JSON report.
 */

/** Columns padded to the widest cell; two spaces between columns; no trailing spaces. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

export interface ProbeResult {
  readonly id: string;
  readonly reachable: boolean;
  readonly reply?: string;
  readonly error?: string;
  readonly ms: number;
}

export interface ConnectivityCell {
  readonly from: string;
  readonly to: string;
  readonly toIP: string;
  readonly reachable: boolean;
  /** The destination answered with its own name (not merely some listener). */
  readonly answeredBy?: string;
  readonly error?: string;
  readonly ms: number;
}

export interface ConnectivityReport {
  readonly protocol: 'tcp' | 'udp';
  readonly port: number;
  readonly pods: readonly string[];
  readonly cells: readonly ConnectivityCell[];
  readonly reachable: number;
  readonly unreachable: number;
  readonly allReachable: boolean;
}

export interface PodTarget {
  readonly id: string;
  readonly ip: string;
}

/**
 * The report from each source's probe results. A cell is reachable only when the destination
 * itself answered (its reply is its name); a wrong responder counts as unreachable.
 */
export function connectivityReport(
  protocol: 'tcp' | 'udp',
  port: number,
  pods: readonly PodTarget[],
  results: ReadonlyMap<string, readonly ProbeResult[] | Error>,
): ConnectivityReport {
  const cells: ConnectivityCell[] = [];
  for (const src of pods) {
    const got = results.get(src.id);
    for (const dst of pods) {
      if (dst.id === src.id) continue;
      if (got === undefined || got instanceof Error) {
        cells.push({
          from: src.id,
          to: dst.id,
          toIP: dst.ip,
          reachable: false,
          error: got instanceof Error ? got.message : 'not probed',
          ms: 0,
        });
        continue;
      }
      const r = got.find((x) => x.id === dst.id);
      const ok = r?.reachable === true && r.reply === dst.id;
      cells.push({
        from: src.id,
        to: dst.id,
        toIP: dst.ip,
        reachable: ok,
        ...(r?.reply ? { answeredBy: r.reply } : {}),
        ...(r && !ok ? { error: r.error ?? (r.reply ? `answered by ${r.reply}` : 'no answer') } : {}),
        ms: r?.ms ?? 0,
      });
    }
  }
  const reachable = cells.filter((c) => c.reachable).length;
  return {
    protocol,
    port,
    pods: pods.map((p) => p.id),
    cells,
    reachable,
    unreachable: cells.length - reachable,
    allReachable: cells.length > 0 && reachable === cells.length,
  };
}

/** Rows = sources, columns = destinations; `ok`, `--` (unreachable) or `·` (itself). */
export function connectivityMatrix(report: ConnectivityReport): string {
  const header = [`FROM \\ TO (${report.protocol}/${report.port})`, ...report.pods];
  const rows = report.pods.map((from) => [
    from,
    ...report.pods.map((to) => {
      if (to === from) return '·';
      const c = report.cells.find((x) => x.from === from && x.to === to);
      return c?.reachable ? 'ok' : '--';
    }),
  ]);
  const summary =
    report.cells.length === 0
      ? 'no pairs to test: create at least two pods'
      : `${report.reachable}/${report.cells.length} reachable`;
  const failures = report.cells
    .filter((c) => !c.reachable)
    .map((c) => `  ${c.from} -> ${c.to} (${c.toIP}): ${c.error ?? 'unreachable'}`);
  return [table(header, rows), summary, ...failures].join('\n');
}
