/**
 * What the hostile-input tests (test/api/hostile-*.test.ts) share: a fresh
 * service on a fresh database for every test, and the row counts the service
 * reports, which show that a refused request stored nothing.
 */
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
