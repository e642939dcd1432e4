/**
 * What the statistics tests (test/api/statistics-*.test.ts) share: a service per test whose printers
 * are driven by hand (test/helpers/hand-driver.ts), polling with a deadline, and for the statistics
 * API the setup helpers and a seeded week of jobs, printers and files with known figures.
 */
import type { NewJob } from '../../service/db/repositories/jobs';
import type { DialectUnderTest } from '../helpers/dialects';
import { handDrivers, type HandDriver } from '../helpers/hand-driver';
import { bambu, prusa, startService, type Harness } from '../helpers/service';

export const TZ = 'Europe/Berlin';
export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const DAY = 86_400_000;

/** Polls `check` until it returns true, failing after `ms` (for db writes the fleet makes in the background). */
export async function until(check: () => Promise<boolean> | boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export interface HandDrivenService {
  /** The running test's service; a test that restarts it assigns the new one here (afterEach closes it). */
  h: Harness;
  /** The drivers of the running test's printers, by printer id. */
  drivers: Map<string, HandDriver>;
}

/** A fresh service (and database) per test, in Berlin time, whose printers connect only when the test says so. */
export function useHandDrivenService(db: DialectUnderTest): HandDrivenService {
  const api: HandDrivenService = { h: undefined as unknown as Harness, drivers: new Map() };
  beforeEach(async () => {
    const hand = handDrivers();
    api.drivers = hand.drivers;
    api.h = await startService({ env: { TIMEZONE: TZ }, driverFactory: hand.factory, fleet: { connectTimeoutMs: 600_000 }, ...(await db.options()) });
  });
  afterEach(() => api.h.close());
  return api;
}

/**
 * The week of 9 to 15 March 2026 in Berlin (UTC+1): [2026-03-08T23:00Z, 2026-03-15T23:00Z), 604 800 s.
 * Two active printers (x1c-01 connected, mk4-01 still in its connection test) and an inactive one.
 */
export const WEEK = '?start_date=2026-03-09&end_date=2026-03-15';

/** The hand-driven service plus the statistics tests' setup: printers, jobs and files written straight to the store. */
export function useStatisticsApi(db: DialectUnderTest) {
  const api = useHandDrivenService(db);

  const store = () => api.h.service.context.store;

  async function addPrinter(body: Record<string, unknown>) {
    expect((await api.h.post('/api/v1/printers', body)).status).toBe(201);
  }
  /** Test setup: printers that have been in the farm since January. */
  async function backdatePrinters(createdAt = '2026-01-01T00:00:00.000Z') {
    await store().connection.db.updateTable('printers').set({ created_at: createdAt }).execute();
  }
  async function job(values: Partial<NewJob> & Pick<NewJob, 'printer_id' | 'status'>) {
    const created = values.created_at ?? values.start_time ?? new Date().toISOString();
    return store().jobs.insert({ job_name: 'Part', created_at: created, updated_at: created, ...values });
  }
  async function file(id: string, status: string, size: number) {
    const now = new Date().toISOString();
    await store()
      .connection.db.insertInto('files')
      .values({ id, printer_id: null, filename: `${id}.3mf`, file_type: '.3mf', file_size: size, status, download_attempts: 0, created_at: now, updated_at: now })
      .execute();
  }
  async function overview(query = '') {
    const res = await api.h.get(`/api/v1/statistics/overview${query}`);
    expect(res.status).toBe(200);
    return res.body;
  }
  async function printerStats(id: string, query = '') {
    const res = await api.h.get(`/api/v1/statistics/printers/${id}${query}`);
    expect(res.status).toBe(200);
    return res.body;
  }

  /** Seeds the week of WEEK: its printers, jobs in it, on its edges and outside it, and files. */
  async function seedWeek() {
    await addPrinter(bambu('x1c-01'));
    await addPrinter(prusa('mk4-01'));
    await addPrinter(prusa('old-01', { is_active: false }));
    api.drivers.get('x1c-01')!.online();
    await until(async () => (await store().printers.get('x1c-01'))?.connection_status === 'connected');
    await backdatePrinters();
    // In the week:
    await job({
      printer_id: 'x1c-01', status: 'completed', start_time: '2026-03-10T08:00:00.000Z', end_time: '2026-03-10T10:00:00.000Z', actual_duration: 7200,
      material_type: 'PLA', material_actual_usage: 120, material_cost: 3, power_cost: 0.5, labor_cost: 2, is_business: true,
      quality_metrics: { first_layer_adhesion: 'Good', surface_finish: 'excellent', dimensional_accuracy: 0.1 },
    });
    await job({
      printer_id: 'x1c-01', status: 'failed', start_time: '2026-03-11T12:00:00.000Z', end_time: '2026-03-11T13:00:00.000Z', actual_duration: 3600,
      material_type: 'PETG', material_actual_usage: 40, material_cost: 1.2, power_cost: 0.25,
      quality_metrics: { first_layer_adhesion: 'poor', surface_finish: 'fair', dimensional_accuracy: 0.3 },
    });
    await job({
      // The estimate counts for a completed job without a measured use; "pla" is PLA.
      printer_id: 'mk4-01', status: 'completed', start_time: '2026-03-12T00:00:00.000Z', end_time: '2026-03-12T03:00:00.000Z', actual_duration: 10800,
      material_type: 'pla', material_estimated_usage: 200, material_cost: 5, power_cost: 1, labor_cost: 10, is_business: true,
    });
    await job({
      // Types are compared without case and surrounding blanks.
      printer_id: 'mk4-01', status: 'cancelled', start_time: '2026-03-13T10:00:00.000Z', end_time: '2026-03-13T10:30:00.000Z', actual_duration: 1800,
      material_type: ' petg ', material_actual_usage: 10,
    });
    // Never started: belongs to the week of its creation.
    await job({ printer_id: 'x1c-01', status: 'queued', created_at: '2026-03-14T09:00:00.000Z' });
    await job({
      // 00:30 on 9 March in Berlin (still 8 March in UTC); material of no named type.
      printer_id: 'x1c-01', status: 'completed', start_time: '2026-03-08T23:30:00.000Z', end_time: '2026-03-09T00:30:00.000Z', actual_duration: 3600,
      material_actual_usage: 30, material_cost: 0.75, quality_metrics: { first_layer_adhesion: 'weird' },
    });
    await job({
      // Starts on the last evening and ends after the week: one of its three hours is in it.
      printer_id: 'x1c-01', status: 'completed', start_time: '2026-03-15T22:00:00.000Z', end_time: '2026-03-16T01:00:00.000Z', actual_duration: 10800,
      material_type: 'ABS', material_actual_usage: 50, material_cost: 1.25, quality_metrics: { surface_finish: '4' },
    });
    // A printer that is no longer active: its jobs count, its printing time is not measured against the active printers.
    await job({ printer_id: 'old-01', status: 'completed', start_time: '2026-03-10T00:00:00.000Z', end_time: '2026-03-10T01:00:00.000Z', actual_duration: 3600 });
    // Not in the week: 23:30 on 8 March in Berlin; its last half hour overlaps the week's printing time.
    await job({
      printer_id: 'x1c-01', status: 'completed', start_time: '2026-03-08T22:30:00.000Z', end_time: '2026-03-08T23:30:00.000Z', actual_duration: 3600,
      material_type: 'PLA', material_actual_usage: 500, material_cost: 100, is_business: true,
    });
    await job({ printer_id: 'mk4-01', status: 'completed', start_time: '2026-03-20T10:00:00.000Z', end_time: '2026-03-20T11:00:00.000Z', actual_duration: 3600 });

    await file('f-downloaded-1', 'downloaded', 1024 * 1024);
    await file('f-downloaded-2', 'downloaded', 2 * 1024 * 1024);
    await file('f-local', 'local', 512 * 1024);
    await file('f-error', 'error', 100);
    await file('f-available', 'available', 10 * 1024 * 1024);
  }

  return Object.assign(api, { store, addPrinter, backdatePrinters, job, file, overview, printerStats, seedWeek });
}
