/** The steady API load of the soak run: a mix of requests at a fixed rate, with latencies per kind. */
import { type ApiStats, percentile } from './soak-support';

export class ApiLoad {
  private timer: NodeJS.Timeout | null = null;
  private readonly inFlight = new Set<Promise<void>>();
  private n = 0;
  private jobIds: string[] = [];
  latencies: number[] = [];
  private readonly kinds = new Map<string, number[]>();
  requests = 0;
  errors = 0;
  errorSamples: string[] = [];

  constructor(
    private readonly base: string,
    private readonly printerIds: string[],
  ) {}

  /** The request mix: list, detail, jobs, job detail, statistics, health, system info. */
  private nextPath(): string {
    const i = this.n++;
    const printer = this.printerIds[(i * 7) % this.printerIds.length];
    switch (i % 8) {
      case 0:
        return '/api/v1/printers';
      case 1:
        return `/api/v1/printers/${printer}`;
      case 2:
        return '/api/v1/jobs?limit=50';
      case 3:
        return this.jobIds.length ? `/api/v1/jobs/${this.jobIds[i % this.jobIds.length]}` : '/api/v1/jobs?status=running';
      case 4:
        return '/api/v1/statistics/overview';
      case 5:
        return `/api/v1/statistics/printers/${printer}`;
      case 6:
        return '/api/v1/health';
      default:
        return '/api/v1/system/info';
    }
  }

  private async one(urlPath: string): Promise<void> {
    const t0 = performance.now();
    this.requests++;
    try {
      const res = await fetch(this.base + urlPath);
      const text = await res.text();
      const ms = performance.now() - t0;
      this.latencies.push(ms);
      const kind = `GET ${urlPath.replace('/api/v1', '').replace(/\?.*$/, '').replace(/\/(printers|jobs)\/[^/]+/, '/$1/{id}')}`;
      let list = this.kinds.get(kind);
      if (!list) this.kinds.set(kind, (list = []));
      list.push(ms);
      if (res.status >= 400) {
        this.errors++;
        if (this.errorSamples.length < 10) this.errorSamples.push(`GET ${urlPath} -> ${res.status} ${text.slice(0, 300)}`);
      } else if (urlPath.startsWith('/api/v1/jobs?')) {
        const body = JSON.parse(text) as { jobs?: Array<{ id: string }> };
        if (body.jobs?.length) this.jobIds = body.jobs.map((j) => String(j.id)).slice(0, 50);
      }
    } catch (err) {
      this.errors++;
      if (this.errorSamples.length < 10) this.errorSamples.push(`GET ${urlPath} -> ${(err as Error).message}`);
    }
  }

  start(rps: number): void {
    this.timer = setInterval(() => {
      // Open loop, but a service that stops answering must not pile up thousands of sockets here.
      if (this.inFlight.size >= 100) {
        this.requests++;
        this.errors++;
        if (this.errorSamples.length < 10) this.errorSamples.push('100 requests in flight: the service stopped answering');
        return;
      }
      const p: Promise<void> = this.one(this.nextPath()).finally(() => this.inFlight.delete(p));
      this.inFlight.add(p);
    }, 1000 / rps);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await Promise.all(this.inFlight);
  }

  stats(): ApiStats {
    const byKind: ApiStats['byKind'] = {};
    for (const [kind, list] of this.kinds) byKind[kind] = { n: list.length, p50: percentile(list, 50), p99: percentile(list, 99) };
    return { requests: this.requests, errors: this.errors, errorSamples: [...this.errorSamples], p50: percentile(this.latencies, 50), p99: percentile(this.latencies, 99), byKind };
  }

  reset(): void {
    this.latencies = [];
    this.requests = 0;
    this.errors = 0;
    this.errorSamples = [];
  }
}
