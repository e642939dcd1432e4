/**
 * What the hostile-input tests (test/api/hostile-*.test.ts) share: a fresh
 * service on a fresh database for every test, and the row counts the service
 * reports, which show that a refused request stored nothing.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { DialectUnderTest } from './dialects';
import { startService, type Harness } from './service';

/** The current test's service. A test that restarts it puts the new one in `h`, so that the new one is closed after it. */
export interface CurrentService {
  h: Harness;
}

/** A fresh service on a fresh database (of the block's dialect) before each test of the enclosing block, closed after it. */
export function serviceForEachTest(db: DialectUnderTest): CurrentService {
  // h is set in beforeEach, before the test reads it.
  const svc: CurrentService = { h: null as unknown as Harness };
  beforeEach(async () => {
    svc.h = await startService(await db.options());
  });
  afterEach(() => svc.h.close());
  return svc;
}

/** Database counts as the service reports them. */
export async function counts(h: Harness) {
  const info = await h.get('/api/v1/system/info');
  expect(info.status).toBe(200);
  const { jobs_count, files_count, printers_count } = info.body.database;
  return { jobs_count, files_count, printers_count } as { jobs_count: number; files_count: number; printers_count: number };
}

/**
 * Calls GET /health back to back (at least 3 times, each must answer 200) until `work` settles, and measures
 * the event loop meanwhile. The service runs in this process: `maxLoopDelayMs` is the longest the loop was held
 * (the cause of a slow /health; unlike a round trip it does not grow much on a loaded machine), `slowestHealthMs`
 * the slowest answer, `probes` how many answered.
 */
export async function healthWhile<T>(h: Harness, work: Promise<T>): Promise<{ maxLoopDelayMs: number; slowestHealthMs: number; probes: number; result: T }> {
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  let done = false;
  const settled = work.finally(() => (done = true));
  let slowest = 0;
  let probes = 0;
  try {
    do {
      const started = Date.now();
      expect((await h.get('/api/v1/health')).status).toBe(200);
      slowest = Math.max(slowest, Date.now() - started);
      probes++;
    } while (!done || probes < 3);
    return { maxLoopDelayMs: loop.max / 1e6, slowestHealthMs: slowest, probes, result: await settled };
  } finally {
    loop.disable();
  }
}
