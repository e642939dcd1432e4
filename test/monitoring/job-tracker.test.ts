/**
 * The job tracker against a real store (SQLite and PostgreSQL), fed the states a driver would
 * emit: one print is one job, whatever the spelling of its file name, the
 * number of updates, wiped caches or restarts.
 */
import fs from 'node:fs';
import pino from 'pino';
import { openStore, type Store } from '../../service/db';
import { EventBus, type EventMap } from '../../service/events';
import { JobTracker } from '../../service/monitoring/job-tracker';
import { normaliseFileName } from '../../service/monitoring/print-identity';
import type { MachineState, PrinterState } from '../../service/printers/driver';
import { SettingsService } from '../../service/settings';
import { describeDialects, sqliteOf } from '../helpers/dialects';
import { tempDir } from '../helpers/service';

const log = pino({ level: 'silent' });

function state(s: MachineState, file: string | null, progress = 10, extra: Partial<NonNullable<PrinterState['job']>> = {}): PrinterState {
  return {
    state: s,
    raw_state: s.toUpperCase(),
    temperatures: { nozzle: 210, bed: 60, nozzle_target: 215, bed_target: 60 },
    job: file === null ? null : { name: 'Cube', file, progress, layer_current: 3, layer_total: 40, remaining_seconds: 600, started_at: null, printer_job_id: null, time_printing: null, ...extra },
    error: null,
    firmware_version: null,
    model: null,
    capabilities: null,
  };
}

describeDialects('job tracker', (db) => {
  let dir: string;
  let store: Store;
  let bus: EventBus;
  let events: { type: keyof EventMap; data: unknown }[];
  let settings: SettingsService;
  let tracker: JobTracker;
  /** The tracker's clock: every fed update is a minute and a bit later than the one before (the new-job limit is per minute). */
  let clock: number;

  beforeEach(async () => {
    dir = tempDir();
    store = await openStore(dir, await db.options());
    bus = new EventBus();
    events = [];
    bus.onAny((type, data) => events.push({ type, data }));
    settings = await SettingsService.load(store.settings, {});
    clock = Date.parse('2026-11-22T12:00:00.000Z');
    tracker = new JobTracker(store, settings, bus, log, { now: () => clock });
    const now = new Date().toISOString();
    await store.printers.insert({
      id: 'p1', name: 'P1', type: 'bambu_lab', model: 'P1S', ip_address: '127.0.0.1', serial_number: 'S', access_code: 'A', is_active: true,
      status: 'online', connection_status: 'connected', status_message: null, firmware_version: null, last_seen: null, created_at: now, updated_at: now,
      mqtt_port: null, ftps_port: null, http_port: null, power_watts: 200, auth_method: null,
    });
  });
  afterEach(async () => {
    await tracker.idle();
    tracker.close();
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const feed = async (s: PrinterState) => {
    clock += 61_000;
    tracker.report('p1', s);
    await tracker.idle();
  };
  const jobs = async () => (await store.jobs.list({ page: 1, limit: 100, order_by: 'created_at', order_dir: 'asc' })).jobs;
  /** The next `n` job transitions fail (a locked database); returns how many transitions were tried since. */
  const failTransitions = (n: number) => {
    const transition = store.jobs.transition.bind(store.jobs);
    let tried = 0;
    store.jobs.transition = (async (...args: Parameters<typeof transition>) => {
      if (++tried <= n) throw new Error('database is locked');
      return transition(...args);
    }) as typeof transition;
    return () => tried;
  };

  test('file name variants normalise to one name', () => {
    const variants = ['cache/Cube.gcode.3mf', '/sdcard/Cube.3mf', 'Cube.gcode', '/usb/CUBE.BGCODE', 'Metadata/../cube.gcode.3mf', 'cube'];
    expect(new Set(variants.map(normaliseFileName))).toEqual(new Set(['cube']));
  });

  test('a print gets one job with the auto-creation metadata and one job_auto_created event', async () => {
    await feed(state('printing', 'cache/Cube.gcode.3mf', 5, { started_at: '2026-11-22T10:00:30.000Z' }));
    const [job] = await jobs();
    expect(job).toMatchObject({ status: 'printing', filename: 'Cube.gcode.3mf', job_name: 'Cube', start_time: '2026-11-22T10:00:30.000Z' });
    expect(job.customer_info).toEqual({
      auto_created: true,
      discovery_time: expect.any(String),
      printer_start_time: '2026-11-22T10:00:30.000Z',
      discovered_on_startup: true,
    });
    const created = events.filter((e) => e.type === 'job_auto_created');
    expect(created).toEqual([
      {
        type: 'job_auto_created',
        data: { id: String(job.id), printer_id: 'p1', job_name: 'Cube', filename: 'Cube.gcode.3mf', status: 'running', start_time: '2026-11-22T10:00:30.000Z', customer_info: job.customer_info },
      },
    ]);
  });

  test('thousands of updates with name variants, partial reports, wiped caches and three restarts: still one job', async () => {
    const names = ['cache/Cube.gcode.3mf', '/sdcard/Cube.3mf', 'Cube.gcode.3mf', 'Cube'];
    let restarts = 0;
    for (let i = 0; i < 3000; i++) {
      // Some updates carry no start time (partial reports), the rest the printer's start.
      const started = i % 3 === 0 ? null : '2026-11-22T10:00:30.000Z';
      tracker.report('p1', state(i % 50 === 25 ? 'paused' : 'printing', names[i % names.length], Math.min(99, i / 30), { started_at: started }));
      if (i % 97 === 0) tracker.forgetCache();
      if (i % 1000 === 999) {
        await tracker.idle();
        tracker = new JobTracker(store, settings, bus, log); // a restart: empty cache
        restarts++;
      }
    }
    await tracker.idle();
    expect(restarts).toBe(3);
    const all = await jobs();
    expect(all).toHaveLength(1);
    expect(all[0].progress).toBeGreaterThan(90);
    expect(events.filter((e) => e.type === 'job_auto_created')).toHaveLength(1);
  });

  test('the same file printed again a few minutes later is a new job; the first one ends', async () => {
    await feed(state('printing', 'Cube.gcode.3mf', 50, { started_at: '2026-11-22T10:00:00.000Z' }));
    await feed(state('finished', 'Cube.gcode.3mf', 100, { started_at: '2026-11-22T10:00:00.000Z' }));
    await feed(state('idle', null));
    await feed(state('printing', 'Cube.gcode.3mf', 1, { started_at: '2026-11-22T10:04:00.000Z' }));
    const all = await jobs();
    expect(all.map((j) => j.status)).toEqual(['completed', 'printing']);
    expect(all[0]).toMatchObject({ progress: 100, end_time: expect.any(String), actual_duration: expect.any(Number) });
    expect(all[0].power_cost).toEqual(expect.any(Number));
  });

  test('a print that ends while unseen is closed when the printer shows a different print', async () => {
    await feed(state('printing', 'A.gcode', 40, { started_at: '2026-11-22T10:00:00.000Z' }));
    await feed(state('printing', 'B.gcode', 2, { started_at: '2026-11-22T11:00:00.000Z' }));
    const all = await jobs();
    expect(all.map((j) => [j.filename, j.status])).toEqual([
      ['A.gcode', 'cancelled'],
      ['B.gcode', 'printing'],
    ]);
  });

  test('finished, failed and stopped become completed, failed and cancelled, each end\'s event with the job\'s name', async () => {
    const outcomes: [MachineState, string][] = [
      ['finished', 'completed'],
      ['failed', 'failed'],
      ['stopped', 'cancelled'],
    ];
    for (const [i, [end, expected]] of outcomes.entries()) {
      const started = `2026-11-22T1${i}:00:00.000Z`;
      await feed(state('printing', `part${i}.gcode`, 30, { started_at: started }));
      await feed(state(end, `part${i}.gcode`, 30, { started_at: started }));
      const job = (await jobs()).find((j) => j.filename === `part${i}.gcode`)!;
      expect([end, job.status]).toEqual([end, expected]);
      // The end's event names the job: the notification of it reads no job for its name.
      const last = events.filter((e) => e.type === 'job_update').pop()!.data;
      expect(last).toMatchObject({ job_id: job.id, change: 'status', status: expected, job_name: job.job_name });
    }
  });

  test('pause and resume keep the same job; job_update frames follow status and whole percents only', async () => {
    await feed(state('printing', 'Cube.gcode', 10.2));
    await feed(state('printing', 'Cube.gcode', 10.7));
    await feed(state('paused', 'Cube.gcode', 10.9));
    await feed(state('printing', 'Cube.gcode', 11.1));
    const all = await jobs();
    expect(all).toHaveLength(1);
    const updates = events.filter((e) => e.type === 'job_update').map((e) => (e.data as { change: string; status: string }).change + ':' + (e.data as { status: string }).status);
    expect(updates).toEqual(['created:printing', 'status:paused', 'status:printing']);
  });

  test('auto-creation off creates nothing; on again creates at the next update', async () => {
    await settings.update({ job_creation_auto_create: false });
    await feed(state('printing', 'Cube.gcode', 5));
    expect(await jobs()).toHaveLength(0);
    await settings.update({ job_creation_auto_create: true });
    await feed(state('printing', 'Cube.gcode', 6));
    expect(await jobs()).toHaveLength(1);
  });

  // Breaking the database on purpose needs SQLite's query_only switch.
  (db.name === 'sqlite' ? test : test.skip)('a database fault during creation is retried at the next update, and then creates the job once', async () => {
    sqliteOf(store.connection).pragma('query_only = ON');
    await feed(state('printing', 'Cube.gcode', 5));
    expect(await jobs()).toHaveLength(0);
    sqliteOf(store.connection).pragma('query_only = OFF');
    await feed(state('printing', 'Cube.gcode', 6));
    await feed(state('printing', 'Cube.gcode', 7));
    expect(await jobs()).toHaveLength(1);
  });

  test('a manual job made at the same moment is left alone: at most one extra job', async () => {
    const now = new Date().toISOString();
    await store.jobs.insert({ printer_id: 'p1', job_name: 'Cube', filename: 'Cube.gcode', status: 'printing', created_at: now, updated_at: now, start_time: now });
    await feed(state('printing', 'Cube.gcode', 5));
    await feed(state('printing', 'Cube.gcode', 6));
    const all = await jobs();
    expect(all).toHaveLength(2);
    expect(all.filter((j) => j.customer_info?.auto_created === true)).toHaveLength(1);
    expect(all.filter((j) => !j.customer_info)).toHaveLength(1);
  });

  test('a job a user cancelled is not revived by later updates of the same print', async () => {
    await feed(state('printing', 'Cube.gcode', 5));
    const [job] = await jobs();
    await store.jobs.update(job.id, { status: 'cancelled', end_time: new Date().toISOString() });
    tracker.forgetCache();
    await feed(state('printing', 'Cube.gcode', 9));
    const all = await jobs();
    expect(all.map((j) => j.status)).toContain('cancelled');
  });

  const alerts = () => events.filter((e) => e.type === 'system_alert').map((e) => e.data as Record<string, unknown>);

  test('a flood of reports with a changing job name and no start of the printer creates one job and alerts once a minute', async () => {
    await feed(state('printing', 'Cube.gcode', 5, { started_at: '2026-11-22T10:00:00.000Z' }));
    for (let i = 0; i < 500; i++) tracker.report('p1', state('printing', `flood-${i}.gcode`, 5, { started_at: '2026-11-22T10:00:00.000Z' }));
    await tracker.idle();
    let all = await jobs();
    expect(all.map((j) => [j.filename, j.status])).toEqual([['Cube.gcode', 'printing']]);
    expect(alerts()).toEqual([expect.objectContaining({ level: 'warning', printer_id: 'p1', reason: 'no_start', refused_jobs: 1 })]);
    // A minute later the next refusal reports the rest.
    await feed(state('printing', 'flood-x.gcode', 5, { started_at: '2026-11-22T10:00:00.000Z' }));
    expect(alerts()[1]).toMatchObject({ refused_jobs: expect.any(Number) });
    expect(alerts()).toHaveLength(2);
    all = await jobs();
    expect(all).toHaveLength(1);
  });

  test('starts faster than one a minute: one new job per printer per minute, the rest refused; later starts count again', async () => {
    await feed(state('printing', 'A.gcode', 5));
    // Within the same minute (the clock stands still): stop, start B, stop, start C...
    for (const name of ['B', 'C', 'D']) {
      tracker.report('p1', state('stopped', `${name}.gcode`, 0));
      await tracker.idle();
      tracker.report('p1', state('printing', `${name}.gcode`, 1));
      await tracker.idle();
    }
    expect((await jobs()).map((j) => [j.filename, j.status])).toEqual([['A.gcode', 'cancelled']]);
    expect(alerts().filter((a) => a.reason === 'too_soon')).toHaveLength(1);
    // A minute later the print that is running becomes a job.
    await feed(state('printing', 'D.gcode', 3));
    expect((await jobs()).map((j) => [j.filename, j.status])).toEqual([
      ['A.gcode', 'cancelled'],
      ['D.gcode', 'printing'],
    ]);
  });

  test('an update that failed is retried on the next report, even one of temperatures alone that the tracker is spared', async () => {
    await feed(state('printing', 'Cube.gcode', 99));
    failTransitions(1);
    const finished = state('finished', 'Cube.gcode', 100);
    await feed(finished);
    expect((await jobs()).map((j) => j.status)).toEqual(['printing']);
    // The fleet asks this before it hands the tracker a report that moved only temperatures (app.ts).
    expect(tracker.awaitsRetry('p1')).toBe(true);
    const cooler = { ...finished, temperatures: { ...finished.temperatures, nozzle: 150 } };
    clock += 1000;
    tracker.report('p1', cooler);
    expect(tracker.awaitsRetry('p1')).toBe(false); // handled now: not handed again meanwhile
    await tracker.idle();
    expect((await jobs()).map((j) => j.status)).toEqual(['completed']);
    // Once handled, such reports are spared the tracker again.
    expect(tracker.awaitsRetry('p1')).toBe(false);
    expect((await jobs()).map((j) => j.status)).toEqual(['completed']);
  });

  test('an update that failed is retried by a timer when no report comes (a printer whose reports change nothing sends none)', async () => {
    tracker.close();
    tracker = new JobTracker(store, settings, bus, log, { now: () => clock, retry: { firstMs: 30, maxMs: 60 } });
    await feed(state('printing', 'Cube.gcode', 99));
    const failed = failTransitions(2);
    await feed(state('finished', 'Cube.gcode', 100));
    expect((await jobs()).map((j) => j.status)).toEqual(['printing']);
    // No report follows: the first retry fails too, the second (a longer wait) ends the job.
    const deadline = Date.now() + 5000;
    while ((await jobs())[0].status !== 'completed' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(failed()).toBe(3);
    expect((await jobs()).map((j) => j.status)).toEqual(['completed']);
    expect(tracker.awaitsRetry('p1')).toBe(false);
  });
});
