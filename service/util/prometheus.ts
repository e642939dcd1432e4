/**
 * Just enough of the Prometheus text exposition format (version 0.0.4) for
 * the service's /metrics: counters, gauges and histograms with labels. Gauges
 * may read their value when scraped, so nothing is kept twice.
 */

export type Labels = Record<string, string>;

interface Metric {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'histogram';
  lines(): Promise<string[]> | string[];
}

const escapeLabel = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
const escapeHelp = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');

function labelText(labels: Labels): string {
  const entries = Object.entries(labels);
  return entries.length === 0 ? '' : `{${entries.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',')}}`;
}

/** Prometheus spells infinities +Inf/-Inf; integers print without a fraction. */
function valueText(n: number): string {
  if (n === Infinity) return '+Inf';
  if (n === -Infinity) return '-Inf';
  return Number.isNaN(n) ? 'NaN' : String(n);
}

/** Series of one metric, keyed by their label text. */
class Series<T> {
  private readonly byKey = new Map<string, { labels: Labels; value: T }>();

  constructor(private readonly initial: () => T) {}

  at(labels: Labels): T {
    const key = labelText(labels);
    let entry = this.byKey.get(key);
    if (!entry) {
      entry = { labels, value: this.initial() };
      this.byKey.set(key, entry);
    }
    return entry.value;
  }

  entries(): { labels: Labels; value: T }[] {
    return [...this.byKey.values()];
  }
}

export class Counter implements Metric {
  readonly type = 'counter';
  private readonly series = new Series(() => ({ n: 0 }));

  constructor(
    readonly name: string,
    readonly help: string,
  ) {}

  inc(labels: Labels = {}, by = 1): void {
    this.series.at(labels).n += by;
  }

  lines(): string[] {
    return this.series.entries().map(({ labels, value }) => `${this.name}${labelText(labels)} ${valueText(value.n)}`);
  }
}

/** A gauge read at scrape time: `read` returns one value, or one per label set. */
export class Gauge implements Metric {
  readonly type = 'gauge';

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly read: () => number | { labels: Labels; value: number }[] | Promise<number | { labels: Labels; value: number }[]>,
  ) {}

  async lines(): Promise<string[]> {
    const value = await this.read();
    const samples = typeof value === 'number' ? [{ labels: {}, value }] : value;
    return samples.map((s) => `${this.name}${labelText(s.labels)} ${valueText(s.value)}`);
  }
}

export class Histogram implements Metric {
  readonly type = 'histogram';
  private readonly series: Series<{ counts: number[]; sum: number; count: number }>;

  constructor(
    readonly name: string,
    readonly help: string,
    /** Upper bounds, ascending; +Inf is implied. */
    private readonly buckets: number[],
  ) {
    this.series = new Series(() => ({ counts: new Array<number>(buckets.length).fill(0), sum: 0, count: 0 }));
  }

  observe(labels: Labels, value: number): void {
    const s = this.series.at(labels);
    // Counts per bucket are kept cumulative when printed, not here: one increment per observation.
    const i = this.buckets.findIndex((upper) => value <= upper);
    if (i >= 0) s.counts[i]++;
    s.sum += value;
    s.count++;
  }

  lines(): string[] {
    const out: string[] = [];
    for (const { labels, value } of this.series.entries()) {
      let cumulative = 0;
      this.buckets.forEach((upper, i) => {
        cumulative += value.counts[i];
        out.push(`${this.name}_bucket${labelText({ ...labels, le: valueText(upper) })} ${cumulative}`);
      });
      out.push(`${this.name}_bucket${labelText({ ...labels, le: '+Inf' })} ${value.count}`);
      out.push(`${this.name}_sum${labelText(labels)} ${valueText(value.sum)}`);
      out.push(`${this.name}_count${labelText(labels)} ${value.count}`);
    }
    return out;
  }
}

export class Registry {
  private readonly metrics: Metric[] = [];

  add<M extends Metric>(metric: M): M {
    this.metrics.push(metric);
    return metric;
  }

  /** The whole exposition, `# HELP` and `# TYPE` before each metric's samples. */
  async render(): Promise<string> {
    const blocks = await Promise.all(
      this.metrics.map(async (m) => [`# HELP ${m.name} ${escapeHelp(m.help)}`, `# TYPE ${m.name} ${m.type}`, ...(await m.lines())].join('\n')),
    );
    return `${blocks.join('\n')}\n`;
  }
}

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
