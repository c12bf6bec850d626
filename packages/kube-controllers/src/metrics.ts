/**
 * Metrics in Prometheus' text exposition format (version 0.0.4), the way upstream kube-controllers
 * serves them on `prometheusMetricsPort` (9094). A small registry of counters and gauges with
 * labels; `render()` is pure (the registry's values in, text out). The HTTP side is
 * `metrics-server.ts`.
 *
 *   controllers ──inc/set──► MetricsRegistry ──render()──► "# HELP …\n# TYPE …\nname{l="v"} 1\n"
 *
 * Gauges that are recomputed from scratch each scan (the IPAM ones) are replaced whole with
 * `replace()`, so a series whose pool or node is gone disappears, as upstream unregisters them.
 */

export type MetricType = 'counter' | 'gauge';
export type Labels = Readonly<Record<string, string>>;

interface Series {
  readonly labels: Labels;
  value: number;
}

function labelKey(labels: Labels): string {
  return JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)));
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export class Metric {
  readonly #series = new Map<string, Series>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: MetricType,
    readonly labelNames: readonly string[],
  ) {
    if (!NAME.test(name)) throw new Error(`invalid metric name ${JSON.stringify(name)}`);
    for (const l of labelNames)
      if (!LABEL.test(l)) throw new Error(`invalid label name ${JSON.stringify(l)} on ${name}`);
  }

  #check(labels: Labels): void {
    const names = Object.keys(labels);
    if (names.length !== this.labelNames.length || !this.labelNames.every((n) => n in labels)) {
      throw new Error(
        `${this.name} takes labels ${this.labelNames.join(', ') || '(none)'}, got ${names.join(', ')}`,
      );
    }
  }

  inc(labels: Labels = {}, by = 1): void {
    if (this.type === 'counter' && by < 0) throw new Error(`counter ${this.name} cannot go down`);
    this.#check(labels);
    const k = labelKey(labels);
    const s = this.#series.get(k);
    if (s) s.value += by;
    else this.#series.set(k, { labels: { ...labels }, value: by });
  }

  set(labels: Labels, value: number): void {
    if (this.type !== 'gauge') throw new Error(`${this.name} is a counter; it cannot be set`);
    this.#check(labels);
    this.#series.set(labelKey(labels), { labels: { ...labels }, value });
  }

  /** Replace every series (a gauge recomputed from scratch). */
  replace(rows: Iterable<readonly [Labels, number]>): void {
    this.#series.clear();
    for (const [labels, value] of rows) this.set(labels, value);
  }

  get(labels: Labels = {}): number | undefined {
    return this.#series.get(labelKey(labels))?.value;
  }

  series(): readonly Series[] {
    return [...this.#series.values()];
  }
}

function escapeLabelValue(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Number.POSITIVE_INFINITY) return '+Inf';
  if (v === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(v);
}

export class MetricsRegistry {
  readonly #metrics = new Map<string, Metric>();
  readonly #collectors: (() => void)[] = [];

  #add(name: string, help: string, type: MetricType, labelNames: readonly string[]): Metric {
    const existing = this.#metrics.get(name);
    if (existing) {
      if (existing.type !== type || existing.labelNames.join() !== labelNames.join())
        throw new Error(`metric ${name} registered twice with different shapes`);
      return existing;
    }
    const m = new Metric(name, help, type, labelNames);
    this.#metrics.set(name, m);
    return m;
  }

  counter(name: string, help: string, labelNames: readonly string[] = []): Metric {
    return this.#add(name, help, 'counter', labelNames);
  }

  gauge(name: string, help: string, labelNames: readonly string[] = []): Metric {
    return this.#add(name, help, 'gauge', labelNames);
  }

  /** Called before every render, to refresh gauges read from elsewhere (process metrics). */
  onCollect(f: () => void): void {
    this.#collectors.push(f);
  }

  get(name: string): Metric | undefined {
    return this.#metrics.get(name);
  }

  render(): string {
    for (const c of this.#collectors) c();
    let out = '';
    for (const m of [...this.#metrics.values()].sort((a, b) => (a.name < b.name ? -1 : 1))) {
      out += `# HELP ${m.name} ${m.help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}\n# TYPE ${m.name} ${m.type}\n`;
      const rows = m.series().map((s) => {
        const ls = Object.entries(s.labels)
          .sort(([a], [b]) => (a < b ? -1 : 1))
          .map(([k, v]) => `${k}="${escapeLabelValue(v)}"`)
          .join(',');
        return `${m.name}${ls ? `{${ls}}` : ''} ${formatValue(s.value)}\n`;
      });
      out += rows.sort().join('');
    }
    return out;
  }
}

/** The metrics every controller reports, by controller name. */
export function controllerMetrics(reg: MetricsRegistry) {
  return {
    reconciles: reg.counter(
      'kube_controllers_reconciles_total',
      'Reconcile passes a controller has completed.',
      ['controller'],
    ),
    errors: reg.counter(
      'kube_controllers_reconcile_errors_total',
      'Resources a controller could not write in a pass (each is retried).',
      ['controller'],
    ),
    writes: reg.counter(
      'kube_controllers_writes_total',
      'Resources a controller created, updated or deleted in the Calico datastore.',
      ['controller', 'operation'],
    ),
    skipped: reg.counter(
      'kube_controllers_unconvertible_objects_total',
      'Kubernetes objects a controller skipped because they could not be converted.',
      ['controller'],
    ),
    lastReconcile: reg.gauge(
      'kube_controllers_last_reconcile_timestamp_seconds',
      'When a controller last completed a reconcile pass (seconds since the epoch).',
      ['controller'],
    ),
  };
}
export type ControllerMetrics = ReturnType<typeof controllerMetrics>;
