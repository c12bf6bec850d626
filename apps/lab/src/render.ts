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
  /** The address family of the attempt (`toIP`'s). */
  readonly family: 4 | 6;
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
  /** The address families tried, each pod pair once per family. */
  readonly families: readonly (4 | 6)[];
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
  family: 4 | 6 = 4,
): ConnectivityReport {
  const cells: ConnectivityCell[] = [];
  for (const src of pods) {
    const got = results.get(src.id);
    for (const dst of pods) {
      if (dst.id === src.id) continue;
      if (got === undefined || got instanceof Error) {
        cells.push({
          family,
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
        family,
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
  return summarise(
    protocol,
    port,
    [family],
    pods.map((p) => p.id),
    cells,
  );
}

function summarise(
  protocol: 'tcp' | 'udp',
  port: number,
  families: readonly (4 | 6)[],
  pods: readonly string[],
  cells: readonly ConnectivityCell[],
): ConnectivityReport {
  const reachable = cells.filter((c) => c.reachable).length;
  return {
    protocol,
    port,
    families,
    pods,
    cells,
    reachable,
    unreachable: cells.length - reachable,
    allReachable: cells.length > 0 && reachable === cells.length,
  };
}

/** One report of several families' reports (same protocol and port): cells and counts of all. */
export function mergeConnectivityReports(reports: readonly ConnectivityReport[]): ConnectivityReport {
  const first = reports[0];
  if (first === undefined) throw new Error('mergeConnectivityReports needs at least one report');
  const pods = [...new Set(reports.flatMap((r) => r.pods))];
  return summarise(
    first.protocol,
    first.port,
    reports.flatMap((r) => r.families),
    pods,
    reports.flatMap((r) => r.cells),
  );
}

/**
 * Rows = sources, columns = destinations; `ok`, `--` (unreachable) or `·` (itself). One matrix per
 * family; the family is named in the header unless the report is IPv4 only.
 */
export function connectivityMatrix(report: ConnectivityReport): string {
  const families = report.families;
  const label = (f: 4 | 6) => (families.length === 1 && f === 4 ? '' : ` IPv${f}`);
  const matrices = families.map((f) => {
    const header = [`FROM \\ TO (${report.protocol}/${report.port}${label(f)})`, ...report.pods];
    const rows = report.pods.map((from) => [
      from,
      ...report.pods.map((to) => {
        if (to === from) return '·';
        const c = report.cells.find((x) => x.family === f && x.from === from && x.to === to);
        return c?.reachable ? 'ok' : '--';
      }),
    ]);
    return table(header, rows);
  });
  const summary =
    report.cells.length === 0
      ? 'no pairs to test: create at least two pods'
      : `${report.reachable}/${report.cells.length} reachable`;
  const failures = report.cells
    .filter((c) => !c.reachable)
    .map((c) => `  ${c.from} -> ${c.to} (${c.toIP}): ${c.error ?? 'unreachable'}`);
  return [...matrices, summary, ...failures].join('\n');
}
