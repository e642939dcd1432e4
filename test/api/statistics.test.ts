import { EventEmitter } from 'node:events';
import type { NewJob } from '../../service/db/repositories/jobs';
import { DriverError, type ConnectionState, type DriverConfig, type PrinterDriver, type PrinterState } from '../../service/printers/driver';
import { resolvePeriod } from '../../service/statistics/period';
import { HistoryRetention } from '../../service/statistics/retention';
import { calendarDate, dayStart } from '../../service/util/time';
import { bambu, expectError, prusa, startService, type Harness } from '../helpers/service';
import { describeDialects } from '../helpers/dialects';

const TZ = 'Europe/Berlin';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const DAY = 86_400_000;

/**
 * A printer the test drives by hand: it connects when told to, reports the
 * states it is given and drops its link on demand (the protocols themselves
 * are proven against the simulators in test/e2e).
 */
class HandDriver extends EventEmitter implements PrinterDriver {
  state: PrinterState | null = null;
  connection: ConnectionState = 'disconnected';
  private settle: { resolve: () => void; reject: (e: Error) => void } | null = null;

  constructor(readonly config: DriverConfig) {
    super();
  }

  connect(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.settle = { resolve, reject };
    });
  }

  /** The connection test succeeds. */
  online(): void {
    this.connection = 'connected';
    this.settle?.resolve();
  }

  report(state: PrinterState['state'], nozzle = 25): void {
    this.state = {
      state,
      raw_state: state.toUpperCase(),
      temperatures: { nozzle, bed: 20, nozzle_target: 0, bed_target: 0 },
      job: null,
      error: null,
      firmware_version: null,
      model: null,
      capabilities: null,
    };
    this.emit('state', this.state);
  }

  drop(): void {
    this.connection = 'disconnected';
    this.emit('connection', { connection: 'disconnected', message: 'link lost' });
  }

  async close(): Promise<void> {
    this.settle?.reject(new DriverError('OFFLINE', 'closed'));
  }

  private unreachable = async (): Promise<never> => {
    throw new DriverError('OFFLINE', 'hand-driven printer');
  };

  listFiles = this.unreachable;
  download = this.unreachable;
  pause = this.unreachable;
  resume = this.unreachable;
  stop = this.unreachable;
  startPrint = this.unreachable;
}

function handDrivers() {
  const drivers = new Map<string, HandDriver>();
  const factory = (_type: string, config: DriverConfig) => {
    const driver = new HandDriver(config);
    drivers.set(config.id, driver);
    return driver;
  };
  return { drivers, factory };
}

/** Polls `check` until it returns true, failing after `ms` (for db writes the fleet makes in the background). */
async function until(check: () => Promise<boolean> | boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describeDialects('statistics API', (db) => {
  let h: Harness;
  let drivers: Map<string, HandDriver>;

  beforeEach(async () => {
    const hand = handDrivers();
    drivers = hand.drivers;
    h = await startService({ env: { TIMEZONE: TZ }, driverFactory: hand.factory, fleet: { connectTimeoutMs: 600_000 }, ...(await db.options()) });
  });
  afterEach(() => h.close());

  const store = () => h.service.context.store;

  async function addPrinter(body: Record<string, unknown>) {
    expect((await h.post('/api/v1/printers', body)).status).toBe(201);
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
    const res = await h.get(`/api/v1/statistics/overview${query}`);
    expect(res.status).toBe(200);
    return res.body;
  }
  async function printerStats(id: string, query = '') {
    const res = await h.get(`/api/v1/statistics/printers/${id}${query}`);
    expect(res.status).toBe(200);
    return res.body;
  }

  /**
   * The week of 9 to 15 March 2026 in Berlin (UTC+1): [2026-03-08T23:00Z, 2026-03-15T23:00Z), 604 800 s.
   * Two active printers (x1c-01 connected, mk4-01 still in its connection test) and an inactive one.
   */
  const WEEK = '?start_date=2026-03-09&end_date=2026-03-15';
  async function seedWeek() {
    await addPrinter(bambu('x1c-01'));
    await addPrinter(prusa('mk4-01'));
    await addPrinter(prusa('old-01', { is_active: false }));
    drivers.get('x1c-01')!.online();
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

  describe('GET /statistics/overview', () => {
    test('a custom week: every figure, with its type, from jobs, printers and files', async () => {
      await seedWeek();
      const body = await overview(WEEK);
      expect(body).toEqual({
        period: 'custom',
        start_date: '2026-03-09',
        end_date: '2026-03-15',
        printers: {
          total_active: 2,
          online_count: 1,
          // Printing of the active printers in the week: 2 h + 1 h + 3 h + 0.5 h + 1 h + 0.5 h (clipped) + 1 h (clipped) = 32 400 s,
          // against 2 printers x 604 800 s.
          utilization_rate: 2.7,
        },
        jobs: {
          total_jobs: 8,
          completed_jobs: 5,
          failed_jobs: 1,
          // 5 completed of 7 finished (completed, failed, cancelled); the queued job does not count.
          success_rate: 71.4,
          total_print_time: 41_400,
          // 41 400 s over the 7 jobs with a duration.
          average_job_duration: 5914,
        },
        materials: {
          total_used_kg: 0.45,
          most_used_material: 'PLA',
          materials_breakdown: [
            { material: 'PLA', used_kg: 0.32, jobs: 2 },
            { material: 'PETG', used_kg: 0.05, jobs: 2 },
            { material: 'ABS', used_kg: 0.05, jobs: 1 },
            { material: 'unknown', used_kg: 0.03, jobs: 1 },
          ],
        },
        business: {
          business_jobs: 2,
          private_jobs: 6,
          business_percentage: 25,
          // (3 + 0.5 + 2) + (5 + 1 + 10)
          revenue_estimate: 21.5,
        },
        files: {
          total_files: 5,
          downloaded_files: 2,
          local_only_files: 1,
          // 2 downloaded of 3 that finished a download (downloaded or error)
          download_success_rate: 66.7,
          // 1 MiB + 2 MiB + 0.5 MiB kept locally
          total_storage_used_mb: 3.5,
        },
      });
      // Counts and seconds are integers.
      const integers = [body.printers.total_active, body.printers.online_count, body.jobs.total_print_time, body.jobs.average_job_duration];
      integers.push(body.files.total_files, body.files.downloaded_files, body.files.local_only_files, body.business.business_jobs, body.business.private_jobs);
      for (const v of integers) expect(Number.isInteger(v)).toBe(true);
    });

    test('counts the same jobs as GET /jobs with the same dates', async () => {
      await seedWeek();
      const jobs = await h.get(`/api/v1/jobs${WEEK}&limit=100`);
      expect(jobs.body.pagination.total_items).toBe((await overview(WEEK)).jobs.total_jobs);
    });

    test('a day ends at midnight in the configured time zone', async () => {
      await seedWeek();
      // 9 March in Berlin holds only the job that started at 00:30 local time (23:30 UTC the day before).
      const body = await overview('?start_date=2026-03-09&end_date=2026-03-09');
      expect(body.jobs).toEqual({ total_jobs: 1, completed_jobs: 1, failed_jobs: 0, success_rate: 100, total_print_time: 3600, average_job_duration: 3600 });
      expect(body.materials).toEqual({ total_used_kg: 0.03, most_used_material: null, materials_breakdown: [{ material: 'unknown', used_kg: 0.03, jobs: 1 }] });
      // 8 March holds the job that started at 23:30 local time.
      expect((await overview('?start_date=2026-03-08&end_date=2026-03-08')).jobs.total_jobs).toBe(1);
    });

    test('periods are whole days ending today; the default is week', async () => {
      await addPrinter(bambu('x1c-01', { is_active: false }));
      const now = Date.now();
      const ago = (ms: number) => new Date(now - ms).toISOString();
      await job({ printer_id: 'x1c-01', status: 'completed', start_time: ago(60_000), end_time: ago(0), actual_duration: 60 });
      await job({ printer_id: 'x1c-01', status: 'completed', start_time: ago(3 * DAY), end_time: ago(3 * DAY - 60_000), actual_duration: 60 });
      await job({ printer_id: 'x1c-01', status: 'failed', start_time: ago(20 * DAY), end_time: ago(20 * DAY - 60_000), actual_duration: 60 });
      await job({ printer_id: 'x1c-01', status: 'failed', start_time: ago(200 * DAY), end_time: ago(200 * DAY - 60_000), actual_duration: 60 });
      await job({ printer_id: 'x1c-01', status: 'failed', start_time: ago(400 * DAY), end_time: ago(400 * DAY - 60_000), actual_duration: 60 });

      const today = calendarDate(new Date(), TZ);
      const minus = (days: number) => new Date(Date.parse(`${today}T00:00:00Z`) - days * DAY).toISOString().slice(0, 10);
      const expected = { day: [1, 0], week: [2, 6], month: [3, 29], year: [4, 364] } as const;
      for (const [period, [total, back]] of Object.entries(expected)) {
        const body = await overview(`?period=${period}`);
        expect([period, body.period, body.start_date, body.end_date, body.jobs.total_jobs]).toEqual([period, period, minus(back), today, total]);
      }
      const byDefault = await overview();
      expect([byDefault.period, byDefault.start_date, byDefault.end_date, byDefault.jobs.total_jobs]).toEqual(['week', minus(6), today, 2]);
      // 2 completed of 4 finished in the year; 1 of 1 today.
      expect((await overview('?period=year')).jobs.success_rate).toBe(50);
      expect((await overview('?period=day')).jobs.success_rate).toBe(100);
    });

    test('a running job counts as printing up to now', async () => {
      await addPrinter(bambu('x1c-01'));
      await backdatePrinters('2020-01-01T00:00:00.000Z');
      const started = Date.now() - 3600_000;
      await job({ printer_id: 'x1c-01', status: 'printing', start_time: new Date(started).toISOString() });
      const before = Date.now();
      const body = await overview('?period=day');
      const after = Date.now();
      // One active printer; today so far, and of it the time since the job started (all of it when it started yesterday).
      const from = dayStart(body.start_date, TZ).getTime();
      const rate = (t: number) => Math.round(((t - Math.max(started, from)) / (t - from)) * 1000) / 10;
      expect(body.printers.utilization_rate).toBeGreaterThanOrEqual(Math.min(rate(before), rate(after)));
      expect(body.printers.utilization_rate).toBeLessThanOrEqual(Math.max(rate(before), rate(after)));
      expect(body.printers.utilization_rate).toBeGreaterThan(0);
      // The job counts in the day of its start: in the first hour of the day (Berlin) it started yesterday.
      const counted = started >= from ? 1 : 0;
      expect(body.jobs).toEqual({ total_jobs: counted, completed_jobs: 0, failed_jobs: 0, success_rate: 0, total_print_time: 0, average_job_duration: 0 });
    });

    test('an empty farm: zeros everywhere, rates 0, no material', async () => {
      const body = await overview(WEEK);
      expect(body).toEqual({
        period: 'custom',
        start_date: '2026-03-09',
        end_date: '2026-03-15',
        printers: { total_active: 0, online_count: 0, utilization_rate: 0 },
        jobs: { total_jobs: 0, completed_jobs: 0, failed_jobs: 0, success_rate: 0, total_print_time: 0, average_job_duration: 0 },
        materials: { total_used_kg: 0, most_used_material: null, materials_breakdown: [] },
        business: { business_jobs: 0, private_jobs: 0, business_percentage: 0, revenue_estimate: 0 },
        files: { total_files: 0, downloaded_files: 0, local_only_files: 0, download_success_rate: 0, total_storage_used_mb: 0 },
      });
      for (const period of ['day', 'week', 'month', 'year']) expect((await overview(`?period=${period}`)).printers.utilization_rate).toBe(0);
    });

    test.each([
      ['?period=decade', 'period'],
      ['?period=week&start_date=2026-03-09&end_date=2026-03-15', 'period'],
      ['?start_date=2026-03-09', 'end_date'],
      ['?end_date=2026-03-15', 'start_date'],
      ['?start_date=2026-03-15&end_date=2026-03-09', 'end_date'],
      ['?start_date=2026-02-30&end_date=2026-03-09', 'start_date'],
      ['?start_date=2026-3-1&end_date=2026-03-09', 'start_date'],
      ['?start_date=2026-03-01T00:00:00Z&end_date=2026-03-09', 'start_date'],
      ['?start_date=1900-01-01&end_date=2026-03-09', 'start_date'],
      ['?start_date=2026-03-01&end_date=2026-03-09&start_date=2026-03-02', 'start_date'],
    ])('%s is 400 VALIDATION_ERROR naming %s', async (query, field) => {
      const err = expectError(await h.get(`/api/v1/statistics/overview${query}`), 400, 'VALIDATION_ERROR');
      expect(err.details.location).toBe('query');
      expect(err.details.fields.map((f: { field: string }) => f.field)).toContain(field);
    });

    test('a wide custom range works (no overflow, rates stay within 0 to 100)', async () => {
      await seedWeek();
      const body = await overview('?start_date=1970-01-01&end_date=2999-12-31');
      expect(body.jobs.total_jobs).toBe(10);
      expect(body.printers.utilization_rate).toBeGreaterThanOrEqual(0);
      expect(body.printers.utilization_rate).toBeLessThanOrEqual(100);
    });
  });

  describe('GET /statistics/printers/{printer_id}', () => {
    test('a custom week of one printer: uptime, jobs, materials, maintenance, quality', async () => {
      await seedWeek();
      const history = store().statusHistory;
      // Connected since 1 March, offline for 6 hours on 10 March.
      await history.record('x1c-01', 'online', 'connected', '2026-03-01T00:00:00.000Z');
      await history.record('x1c-01', 'offline', 'disconnected', '2026-03-10T00:00:00.000Z');
      await history.record('x1c-01', 'online', 'connected', '2026-03-10T06:00:00.000Z');
      for (const [kind, at] of [
        ['nozzle_change', '2026-03-01T09:00:00+01:00'],
        ['nozzle_change', '2026-03-10T10:00:00+01:00'],
        ['bed_calibration', '2026-03-12T18:30:00+01:00'],
        ['maintenance', '2026-03-20T08:00:00+01:00'],
      ]) {
        expect((await h.post('/api/v1/printers/x1c-01/maintenance', { kind, performed_at: at })).status).toBe(201);
      }

      const body = await printerStats('x1c-01', WEEK);
      expect(body).toEqual({
        printer_id: 'x1c-01',
        printer_name: 'Bambu x1c-01',
        period: 'custom',
        start_date: '2026-03-09',
        end_date: '2026-03-15',
        uptime: {
          // 168 h minus the 6 offline hours
          total_hours: 162,
          // 2 h + 1 h + 1 h + 0.5 h (the job before the week, clipped) + 1 h (the one after, clipped)
          active_hours: 5.5,
          // 19 800 s of 604 800 s
          utilization_rate: 3.3,
        },
        jobs: { total_jobs: 5, completed_jobs: 3, failed_jobs: 1, cancelled_jobs: 0, success_rate: 75, average_duration: 6300 },
        materials: { total_used_kg: 0.24, cost_total: 6.2, most_used: 'PLA' },
        maintenance: { last_maintenance: '2026-03-12T17:30:00.000Z', nozzle_changes: 1, bed_calibrations: 1 },
        quality_metrics: {
          // "Good" of "Good" and "poor" ("weird" is no rating)
          first_layer_success_rate: 50,
          // excellent 5, fair 3, "4"
          average_surface_quality: 4,
          dimensional_accuracy: 0.2,
        },
      });
      expect(Number.isInteger(body.jobs.average_duration)).toBe(true);
    });

    test('the utilization counts from when the printer was added', async () => {
      await seedWeek();
      // Added at the start of 12 March (Berlin): 4 of the 7 days.
      await store().connection.db.updateTable('printers').set({ created_at: '2026-03-11T23:00:00.000Z' }).where('id', '=', 'mk4-01').execute();
      const body = await printerStats('mk4-01', WEEK);
      // 3 h + 0.5 h of printing in 96 h
      expect(body.uptime).toEqual({ total_hours: 0, active_hours: 3.5, utilization_rate: 3.6 });
      expect(body.jobs).toEqual({ total_jobs: 2, completed_jobs: 1, failed_jobs: 0, cancelled_jobs: 1, success_rate: 50, average_duration: 6300 });
    });

    test('a new printer without jobs: zeros, nulls and rates 0', async () => {
      await addPrinter(prusa('mk4-01', { is_active: false }));
      const body = await printerStats('mk4-01');
      expect(body).toEqual({
        printer_id: 'mk4-01',
        printer_name: 'Prusa mk4-01',
        period: 'week',
        start_date: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
        end_date: calendarDate(new Date(), TZ),
        uptime: { total_hours: 0, active_hours: 0, utilization_rate: 0 },
        jobs: { total_jobs: 0, completed_jobs: 0, failed_jobs: 0, cancelled_jobs: 0, success_rate: 0, average_duration: 0 },
        materials: { total_used_kg: 0, cost_total: 0, most_used: null },
        maintenance: { last_maintenance: null, nozzle_changes: 0, bed_calibrations: 0 },
        quality_metrics: { first_layer_success_rate: 0, average_surface_quality: null, dimensional_accuracy: null },
      });
    });

    test('an unknown printer is 404 PRINTER_NOT_FOUND; bad periods are 400', async () => {
      const err = expectError(await h.get('/api/v1/statistics/printers/ghost'), 404, 'PRINTER_NOT_FOUND');
      expect(err.details).toEqual({ printer_id: 'ghost' });
      await addPrinter(prusa('mk4-01', { is_active: false }));
      expectError(await h.get('/api/v1/statistics/printers/mk4-01?period=week&end_date=2026-03-01'), 400, 'VALIDATION_ERROR');
      expectError(await h.get('/api/v1/statistics/printers/mk4-01?period=fortnight'), 400, 'VALIDATION_ERROR');
    });

    test('a deleted printer is 404, its history stays', async () => {
      await addPrinter(prusa('mk4-01', { is_active: false }));
      expect((await h.del('/api/v1/printers/mk4-01')).status).toBe(200);
      expectError(await h.get('/api/v1/statistics/printers/mk4-01'), 404, 'PRINTER_NOT_FOUND');
      expect((await store().statusHistory.list('mk4-01')).length).toBeGreaterThan(0);
    });
  });

  describe('maintenance events', () => {
    beforeEach(() => addPrinter(bambu('x1c-01', { is_active: false })));

    test('POST records an event (201); GET lists them newest first, with a kind filter and pages', async () => {
      const before = Date.now();
      const res = await h.post('/api/v1/printers/x1c-01/maintenance', { kind: 'nozzle_change', notes: '0.4 mm hardened steel' });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        id: expect.any(Number),
        printer_id: 'x1c-01',
        kind: 'nozzle_change',
        notes: '0.4 mm hardened steel',
        performed_at: expect.stringMatching(ISO),
        created_at: expect.stringMatching(ISO),
      });
      expect(Date.parse(res.body.performed_at)).toBeGreaterThanOrEqual(before - 1);
      expect(res.body.performed_at).toBe(res.body.created_at);

      const older = await h.post('/api/v1/printers/x1c-01/maintenance', { kind: 'bed_calibration', performed_at: '2026-03-12T18:30:00+01:00' });
      expect(older.body).toMatchObject({ kind: 'bed_calibration', notes: null, performed_at: '2026-03-12T17:30:00.000Z' });
      await h.post('/api/v1/printers/x1c-01/maintenance', { kind: 'cleaning', performed_at: '2026-03-13T08:00:00Z' });

      const all = await h.get('/api/v1/printers/x1c-01/maintenance');
      expect(all.status).toBe(200);
      expect(all.body.printer_id).toBe('x1c-01');
      expect(all.body.maintenance.map((e: { kind: string }) => e.kind)).toEqual(['nozzle_change', 'cleaning', 'bed_calibration']);
      expect(all.body.maintenance[0]).toEqual(res.body);
      expect(all.body.pagination).toEqual({ page: 1, limit: 50, total_items: 3, total_pages: 1, has_next: false, has_previous: false });

      const filtered = await h.get('/api/v1/printers/x1c-01/maintenance?kind=bed_calibration');
      expect(filtered.body.maintenance).toEqual([older.body]);
      const page = await h.get('/api/v1/printers/x1c-01/maintenance?limit=2&page=2');
      expect(page.body.maintenance.map((e: { kind: string }) => e.kind)).toEqual(['bed_calibration']);
      expect(page.body.pagination).toEqual({ page: 2, limit: 2, total_items: 3, total_pages: 2, has_next: false, has_previous: true });
    });

    test('invalid bodies are 422 with the offending fields and store nothing', async () => {
      const future = new Date(Date.now() + 3600_000).toISOString();
      const cases: [unknown, string[]][] = [
        [{}, ['kind']],
        [{ kind: 'repaint' }, ['kind']],
        [{ kind: 'cleaning', colour: 'red' }, ['colour']],
        [{ kind: 'cleaning', notes: 'x'.repeat(2001) }, ['notes']],
        [{ kind: 'cleaning', notes: 42 }, ['notes']],
        [{ kind: 'cleaning', performed_at: future }, ['performed_at']],
        [{ kind: 'cleaning', performed_at: '2026-03-12 10:00' }, ['performed_at']],
        [{ kind: 'cleaning', performed_at: '1969-12-31T23:59:59Z' }, ['performed_at']],
        [[], ['(root)']],
      ];
      for (const [body, fields] of cases) {
        const err = expectError(await h.post('/api/v1/printers/x1c-01/maintenance', body), 422, 'VALIDATION_ERROR');
        expect(err.details.fields.map((f: { field: string }) => f.field)).toEqual(fields);
      }
      expectError(await h.request('POST', '/api/v1/printers/x1c-01/maintenance', '{"kind":', { 'content-type': 'application/json' }), 422, 'VALIDATION_ERROR');
      expect((await h.get('/api/v1/printers/x1c-01/maintenance')).body.pagination.total_items).toBe(0);
    });

    test('an unknown printer is 404 for both; bad list queries are 400', async () => {
      expectError(await h.post('/api/v1/printers/ghost/maintenance', { kind: 'cleaning' }), 404, 'PRINTER_NOT_FOUND');
      expectError(await h.get('/api/v1/printers/ghost/maintenance'), 404, 'PRINTER_NOT_FOUND');
      expectError(await h.get('/api/v1/printers/x1c-01/maintenance?kind=repaint'), 400, 'VALIDATION_ERROR');
      expectError(await h.get('/api/v1/printers/x1c-01/maintenance?limit=0'), 400, 'VALIDATION_ERROR');
      expectError(await h.get('/api/v1/printers/x1c-01/maintenance?limit=101'), 400, 'VALIDATION_ERROR');
    });

    test("a printer's events go with it", async () => {
      await h.post('/api/v1/printers/x1c-01/maintenance', { kind: 'cleaning' });
      expect((await h.del('/api/v1/printers/x1c-01')).status).toBe(200);
      await addPrinter(bambu('x1c-01', { is_active: false }));
      expect((await h.get('/api/v1/printers/x1c-01/maintenance')).body.maintenance).toEqual([]);
    });
  });
});

describeDialects('printer status history', (db) => {
  let h: Harness;
  let drivers: Map<string, HandDriver>;
  beforeEach(async () => {
    const hand = handDrivers();
    drivers = hand.drivers;
    h = await startService({ env: { TIMEZONE: TZ }, driverFactory: hand.factory, fleet: { connectTimeoutMs: 600_000 }, ...(await db.options()) });
  });
  afterEach(() => h.close());

  const states = async (id: string) => (await h.service.context.store.statusHistory.list(id)).map((r) => `${r.status}/${r.connection_status}`);
  const waitForRows = (id: string, n: number) => until(async () => (await states(id)).length >= n);

  test('records one row per change of status or connection, not one per report', async () => {
    await h.post('/api/v1/printers', bambu('x1c-01'));
    expect(await states('x1c-01')).toEqual(['configuring/testing']);

    drivers.get('x1c-01')!.online();
    await waitForRows('x1c-01', 2);
    const driver = drivers.get('x1c-01')!;
    driver.report('printing', 200);
    await waitForRows('x1c-01', 3);
    // Reports that change only temperatures or progress are no change of state.
    for (let i = 0; i < 20; i++) driver.report('printing', 201 + i);
    driver.report('paused');
    await waitForRows('x1c-01', 4);
    driver.drop();
    await waitForRows('x1c-01', 5);
    expect(await states('x1c-01')).toEqual(['configuring/testing', 'online/connected', 'printing/connected', 'paused/connected', 'offline/disconnected']);

    const rows = await h.service.context.store.statusHistory.list('x1c-01');
    for (const row of rows) expect(row.at).toMatch(ISO);
    expect(rows.map((r) => r.at)).toEqual([...rows.map((r) => r.at)].sort());
  });

  test('deactivation, reactivation and deletion are recorded; a stop of the service ends monitoring', async () => {
    await h.post('/api/v1/printers', prusa('mk4-01'));
    drivers.get('mk4-01')!.online();
    await waitForRows('mk4-01', 2);
    await h.put('/api/v1/printers/mk4-01', { is_active: false });
    await h.put('/api/v1/printers/mk4-01', { is_active: true });
    expect(await states('mk4-01')).toEqual(['configuring/testing', 'online/connected', 'offline/disconnected', 'configuring/testing']);
    drivers.get('mk4-01')!.online();
    await waitForRows('mk4-01', 5);

    // Stopping the service: the printer is no longer watched; starting again begins with a connection test.
    h = await h.restart();
    expect(await states('mk4-01')).toEqual([
      'configuring/testing',
      'online/connected',
      'offline/disconnected',
      'configuring/testing',
      'online/connected',
      'offline/disconnected',
      'online/testing',
    ]);

    await h.del('/api/v1/printers/mk4-01');
    expect((await states('mk4-01')).slice(-1)).toEqual(['offline/disconnected']);
  });

  test('an inactive printer starts offline; record() skips a row that repeats the state in effect', async () => {
    await h.post('/api/v1/printers', prusa('mk4-01', { is_active: false }));
    expect(await states('mk4-01')).toEqual(['offline/disconnected']);
    const history = h.service.context.store.statusHistory;
    expect(await history.record('mk4-01', 'offline', 'disconnected', new Date().toISOString())).toBe(false);
    expect(await history.record('mk4-01', 'online', 'connected', new Date().toISOString())).toBe(true);
    expect(await states('mk4-01')).toEqual(['offline/disconnected', 'online/connected']);
  });

  test('uptime sums the connected spans inside the range', async () => {
    await h.post('/api/v1/printers', prusa('mk4-01', { is_active: false }));
    const history = h.service.context.store.statusHistory;
    // The state at the start of the range comes from the row before it.
    await history.record('lab-1', 'online', 'connected', '2026-01-01T00:00:00.000Z');
    await history.record('lab-1', 'error', 'error', '2026-01-02T06:00:00.000Z');
    await history.record('lab-1', 'printing', 'connected', '2026-01-02T12:00:00.000Z');
    await history.record('lab-1', 'offline', 'disconnected', '2026-01-03T00:00:00.000Z');
    // 2 January: connected 00:00-06:00 and 12:00-24:00
    expect(await history.connectedSeconds('lab-1', '2026-01-02T00:00:00.000Z', '2026-01-03T00:00:00.000Z')).toBeCloseTo(18 * 3600, 3);
    // Before any row: nothing known, nothing counted.
    expect(await history.connectedSeconds('lab-1', '2025-12-31T00:00:00.000Z', '2026-01-01T12:00:00.000Z')).toBeCloseTo(12 * 3600, 3);
    expect(await history.connectedSeconds('nobody', '2026-01-01T00:00:00.000Z', '2026-01-05T00:00:00.000Z')).toBe(0);
    expect(await history.connectedSeconds('lab-1', '2026-01-05T00:00:00.000Z', '2026-01-01T00:00:00.000Z')).toBe(0);
  });

  test('pruning forgets rows before the retention but keeps the state in effect at the cutoff, so uptime after it is unchanged', async () => {
    const history = h.service.context.store.statusHistory;
    const day = (d: number, hour = 0) => new Date(Date.UTC(2026, 0, d, hour)).toISOString();
    // Two printers, a change every 6 hours for 20 days.
    for (const printer of ['lab-1', 'lab-2']) {
      for (let i = 0; i < 80; i++) await history.record(printer, i % 2 ? 'offline' : 'online', i % 2 ? 'disconnected' : 'connected', day(1 + Math.floor(i / 4), (i % 4) * 6));
    }
    const after = [day(15, 3), day(21)] as const;
    const before = await history.connectedSeconds('lab-1', ...after);

    const removed = await history.prune(day(15), 7);
    // Rows before 15 January: 56 per printer; the last of them stays for each.
    expect(removed).toBe(2 * 55);
    expect(await history.list('lab-1', { to: day(15) })).toEqual([{ status: 'offline', connection_status: 'disconnected', at: day(14, 18) }]);
    expect(await history.connectedSeconds('lab-1', ...after)).toBeCloseTo(before, 3);
    expect(await history.prune(day(15))).toBe(0);

    // The service prunes by its setting: with the default 400 days these rows stay; with 7 days they go.
    const retention = new HistoryRetention(h.service.context.store, h.service.context.settings, h.service.context.log, () => Date.parse(day(31)));
    expect(await retention.prune()).toBe(0);
    await h.put('/api/v1/settings', { status_history_retention_days: 7 });
    // Cutoff 24 January: of the 25 rows left per printer only the last (20 January, 18:00) stays.
    expect(await retention.prune()).toBe(2 * 24);
    expect((await history.list('lab-2')).map((r) => r.at)[0]).toBe(day(20, 18));
    await retention.close();
  });
});

describe('statistics periods', () => {
  test('days follow the configured time zone, DST days included', () => {
    // Berlin moves its clocks forward on 29 March 2026: that day has 23 hours.
    expect(resolvePeriod({ start_date: '2026-03-29', end_date: '2026-03-29' }, TZ)).toEqual({
      period: 'custom',
      start_date: '2026-03-29',
      end_date: '2026-03-29',
      from: '2026-03-28T23:00:00.000Z',
      to: '2026-03-29T22:00:00.000Z',
    });
    expect(resolvePeriod({ start_date: '2026-10-25', end_date: '2026-10-25' }, 'UTC')).toMatchObject({ from: '2026-10-25T00:00:00.000Z', to: '2026-10-26T00:00:00.000Z' });
  });

  test('named periods end today in the time zone and move on at its midnight', () => {
    // 22:30 UTC on 15 March is 23:30 in Berlin: still the 15th.
    const late = resolvePeriod({ period: 'week' }, TZ, new Date('2026-03-15T22:30:00Z'));
    expect(late).toEqual({ period: 'week', start_date: '2026-03-09', end_date: '2026-03-15', from: '2026-03-08T23:00:00.000Z', to: '2026-03-15T23:00:00.000Z' });
    // Half an hour later it is the 16th there (while it still is the 15th in UTC).
    const next = resolvePeriod({ period: 'week' }, TZ, new Date('2026-03-15T23:00:00Z'));
    expect([next.start_date, next.end_date]).toEqual(['2026-03-10', '2026-03-16']);
    expect(resolvePeriod({ period: 'week' }, 'UTC', new Date('2026-03-15T23:00:00Z')).end_date).toBe('2026-03-15');
    expect(resolvePeriod({}, TZ, new Date('2026-03-15T12:00:00Z')).period).toBe('week');
    for (const [period, start] of [
      ['day', '2026-03-15'],
      ['month', '2026-02-14'],
      ['year', '2025-03-16'],
    ] as const) {
      expect(resolvePeriod({ period }, TZ, new Date('2026-03-15T12:00:00Z')).start_date).toBe(start);
    }
  });
});

