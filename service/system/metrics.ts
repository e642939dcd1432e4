/**
 * GET /metrics: the service in Prometheus text format, for the farm's own
 * monitoring. Printers by status and connection, printer reports (a counter
 * and the rate over the last seconds), /ws clients and frames, API latency per
 * route, downloads, rate-limit refusals, the database size and the process.
 * Values that already live elsewhere are read when scraped, not copied.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import type { RequestHandler } from 'express';
import type { EventBus } from '../events';
import { CONNECTION_STATUSES, PRINTER_STATUSES } from '../schemas/printers';
import { Counter, Histogram, Registry, scrapedGauge } from '../util/prometheus';

export interface MetricSources {
  version: string;
  /** The stored printers with their current status and connection status. */
  printers(): Promise<{ status: string; connection_status: string; is_active: boolean | number }[]>;
  /** Jobs in each of the given statuses now. */
  jobsByStatus(statuses: readonly string[]): Promise<Record<string, number>>;
  /** Connected /ws clients now. */
  wsClients(): number;
  /** Camera streams served and camera connections open now (counts only: frames never reach the metrics). */
  cameras?(): { streams: number; upstreams: number };
  /** The bytes the database takes (0 before it is open). */
  databaseBytes(): Promise<number>;
}

/** Seconds; from a 1 ms answer to a slow statistics query over a large farm. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** The job statuses worth a gauge: finished jobs only grow, GET /statistics counts those. */
const OPEN_JOB_STATUSES = ['queued', 'printing', 'paused'] as const;
/** Reports per second are averaged over this many whole seconds. */
const RATE_SECONDS = 10;

/** Events per second over the last whole seconds, from one counter per second of a ring. */
class RateMeter {
  private readonly ring = new Float64Array(RATE_SECONDS + 1);
  private second = 0;

  constructor(private readonly now: () => number) {}

  mark(): void {
    this.advance();
    this.ring[this.second % this.ring.length]++;
  }

  /** The average of the last RATE_SECONDS whole seconds (the current, partial second is left out). */
  perSecond(): number {
    this.advance();
    let sum = 0;
    for (let i = 1; i <= RATE_SECONDS; i++) sum += this.ring[(this.second - i + this.ring.length * 2) % this.ring.length];
    return sum / RATE_SECONDS;
  }

  private advance(): void {
    const current = Math.floor(this.now() / 1000);
    if (current === this.second) return;
    // Seconds that passed without events are zero; a long gap clears the whole ring.
    for (let s = Math.max(this.second + 1, current - this.ring.length + 1); s <= current; s++) this.ring[s % this.ring.length] = 0;
    this.second = current;
  }
}

export class ServiceMetrics {
  readonly registry = new Registry();
  private readonly requestSeconds: Histogram;
  private readonly reportTally = new Map<string, number>();
  private readonly reportRate: RateMeter;
  private readonly downloadsFinished: Counter;
  private readonly rateLimited: Counter;
  private readonly webhooks: Counter;
  private readonly activeDownloads = new Set<string>();
  private readonly eventLoop: IntervalHistogram;
  private readonly unsubscribe: () => void;

  constructor(sources: MetricSources, bus: EventBus, now: () => number = Date.now) {
    const r = this.registry;
    this.reportRate = new RateMeter(now);
    this.eventLoop = monitorEventLoopDelay({ resolution: 10 });
    this.eventLoop.enable();

    const gauge = (name: string, help: string, read: Parameters<typeof scrapedGauge>[3], labelNames: string[] = []) => scrapedGauge(r, name, help, read, labelNames);
    const counter = (name: string, help: string, labelNames: string[] = []) => new Counter({ name, help, labelNames, registers: [r.prom] });
    // Counted in plain numbers as they happen (once per printer report) and handed to prom-client at scrape time.
    const tallied = (name: string, help: string, labelName: string, tally: Map<string, number>) =>
      new Counter({
        name,
        help,
        labelNames: labelName ? [labelName] : [],
        registers: [r.prom],
        collect() {
          for (const [label, n] of tally) if (n) this.inc(labelName ? { [labelName]: label } : {}, n);
          tally.clear();
        },
      });

    gauge('printfarm_info', 'Version of the running service (always 1)', () => [{ labels: { version: sources.version }, value: 1 }], ['version']);
    // Both printer gauges read the same list: one query per scrape (the gauges are read together), not two.
    let scrapeOfPrinters: Promise<{ status: string; connection_status: string }[]> | null = null;
    const activePrinters = () =>
      (scrapeOfPrinters ??= sources
        .printers()
        .then((all) => all.filter((p) => p.is_active))
        .finally(() => (scrapeOfPrinters = null)));
    gauge(
      'printfarm_printers',
      'Active printers by status',
      async () => {
        const active = await activePrinters();
        return PRINTER_STATUSES.map((status) => ({ labels: { status }, value: active.filter((p) => p.status === status).length }));
      },
      ['status'],
    );
    gauge(
      'printfarm_printer_connections',
      'Active printers by connection status',
      async () => {
        const active = await activePrinters();
        return CONNECTION_STATUSES.map((connection) => ({ labels: { connection }, value: active.filter((p) => p.connection_status === connection).length }));
      },
      ['connection'],
    );
    gauge(
      'printfarm_jobs',
      'Jobs queued, printing or paused now',
      async () => Object.entries(await sources.jobsByStatus(OPEN_JOB_STATUSES)).map(([status, value]) => ({ labels: { status }, value })),
      ['status'],
    );
    tallied('printfarm_printer_reports_total', 'State reports received from printers', '', this.reportTally);
    gauge('printfarm_printer_reports_per_second', `State reports per second, averaged over the last ${RATE_SECONDS} s`, () => this.reportRate.perSecond());
    gauge('printfarm_ws_clients', 'Connected /ws clients', () => sources.wsClients());
    gauge('printfarm_camera_streams', 'Camera MJPEG streams served now', () => sources.cameras?.().streams ?? 0);
    gauge('printfarm_camera_connections', 'Camera connections open now (one per watched printer)', () => sources.cameras?.().upstreams ?? 0);
    const frames = new Map<string, number>();
    tallied('printfarm_ws_events_total', 'Events published to /ws, by type', 'type', frames);
    this.requestSeconds = new Histogram({
      name: 'printfarm_http_request_duration_seconds',
      help: 'API request latency by route and status',
      labelNames: ['method', 'route', 'status'],
      buckets: LATENCY_BUCKETS,
      registers: [r.prom],
    });
    this.rateLimited = counter('printfarm_rate_limited_total', 'Requests and connections refused by a rate limit, by limit', ['limit']);
    this.webhooks = counter('printfarm_notify_webhooks_total', 'Notification webhook deliveries, by result (sent, retried, failed after every retry, dropped from a full queue)', ['result']);
    gauge('printfarm_downloads_active', 'Printer file downloads running now', () => this.activeDownloads.size);
    this.downloadsFinished = counter('printfarm_downloads_total', 'Finished printer file downloads, by result', ['result']);
    gauge('printfarm_database_size_bytes', 'Size of the database: the SQLite file with its WAL, or the PostgreSQL database', () => sources.databaseBytes());
    // process_resident_memory_bytes, process_cpu_seconds_total, process_start_time_seconds and the other
    // standard process and Node.js metrics come from prom-client (util/prometheus.ts); these two stay by
    // their names of before, which dashboards and docs/api.md use.
    gauge('nodejs_heap_used_bytes', 'V8 heap in use in bytes', () => process.memoryUsage().heapUsed);
    gauge(
      'nodejs_eventloop_delay_seconds',
      'Event loop delay since the previous scrape, by quantile',
      () => {
        const h = this.eventLoop;
        const samples = [0.5, 0.99, 1].map((q) => ({ labels: { quantile: String(q) }, value: (q === 1 ? h.max : h.percentile(q * 100)) / 1e9 }));
        h.reset();
        return samples;
      },
      ['quantile'],
    );

    this.unsubscribe = bus.onAny((type, data) => {
      frames.set(type, (frames.get(type) ?? 0) + 1);
      if (type === 'file_update') this.download(data as { download_id?: unknown; status?: unknown });
    });
  }

  /** One state report from a printer (the fleet's report listener). */
  report(): void {
    this.reportTally.set('', (this.reportTally.get('') ?? 0) + 1);
    this.reportRate.mark();
  }

  /** One notification webhook outcome. */
  webhook(result: string): void {
    this.webhooks.inc({ result });
  }

  refused(limit: string): void {
    this.rateLimited.inc({ limit });
  }

  /** Times every request; the route is the template (`/api/v1/printers/{printer_id}`), never the raw path. */
  readonly http: RequestHandler = (req, res, next) => {
    const started = process.hrtime.bigint();
    res.once('finish', () => {
      const route = typeof res.locals.route === 'string' ? res.locals.route : 'unmatched';
      this.requestSeconds.observe({ method: req.method, route, status: String(res.statusCode) }, Number(process.hrtime.bigint() - started) / 1e9);
    });
    next();
  };

  /** Download tasks announce themselves in their file_update frames; the first and the last frame are always sent. */
  private download(update: { download_id?: unknown; status?: unknown }): void {
    if (typeof update.download_id !== 'string') return;
    if (update.status === 'downloading') this.activeDownloads.add(update.download_id);
    else if ((update.status === 'completed' || update.status === 'failed') && this.activeDownloads.delete(update.download_id)) {
      this.downloadsFinished.inc({ result: update.status });
    }
  }

  close(): void {
    this.unsubscribe();
    this.eventLoop.disable();
  }
}
