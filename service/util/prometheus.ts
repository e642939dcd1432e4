/**
 * The Prometheus exposition of /metrics, through prom-client. Two things prom-client leaves to
 * its user are settled here:
 * - gauges that read their value when scraped (so nothing is kept twice): {@link scrapedGauge};
 * - the standard process and Node.js metrics (CPU, resident memory, heap, event-loop lag, GC,
 *   handles...) that Grafana dashboards expect. prom-client's collectors start a GC observer
 *   and an event-loop monitor that have no stop, so they are started once per process in a
 *   registry of their own and appended to every service's exposition: a service made and closed
 *   again (tests, Node-RED redeploys) never starts another set.
 */
import { collectDefaultMetrics, Gauge, Registry as PromRegistry } from 'prom-client';

export { Counter, Histogram } from 'prom-client';

export type Labels = Record<string, string>;
type Sample = { labels: Labels; value: number };

export const PROMETHEUS_CONTENT_TYPE: string = PromRegistry.PROMETHEUS_CONTENT_TYPE;

let processMetrics: PromRegistry | null = null;

/** The process-wide registry of prom-client's default metrics, started on first use. */
function processRegistry(): PromRegistry {
  if (!processMetrics) {
    processMetrics = new PromRegistry();
    collectDefaultMetrics({ register: processMetrics });
  }
  return processMetrics;
}

/** One service's metrics; the exposition adds the process metrics (see above) unless told not to. */
export class Registry {
  readonly prom = new PromRegistry();

  constructor(private readonly withProcessMetrics = true) {
    if (withProcessMetrics) processRegistry();
  }

  /** The whole exposition, `# HELP` and `# TYPE` before each metric's samples. */
  async render(): Promise<string> {
    const own = await this.prom.metrics();
    return this.withProcessMetrics ? `${own}\n${await processRegistry().metrics()}` : own;
  }
}

/**
 * A gauge read at scrape time: `read` returns one value, or one per label set (label sets not
 * returned by a scrape disappear from it).
 */
export function scrapedGauge(
  registry: Registry,
  name: string,
  help: string,
  read: () => number | Sample[] | Promise<number | Sample[]>,
  labelNames: readonly string[] = [],
): Gauge {
  return new Gauge({
    name,
    help,
    labelNames,
    registers: [registry.prom],
    async collect() {
      const value = await read();
      this.reset();
      if (typeof value === 'number') this.set(value);
      else for (const s of value) this.set(s.labels, s.value);
    },
  });
}
