/**
 * What one printer report costs the service, counted instead of timed: the
 * repository calls (SQL), the events on the bus and the JSON serialisations
 * (frames) that 100 reports cause, for an idle printer and a printing one.
 * A report that changes nothing visible costs no write, no event and no
 * frame; a temperature costs one printer_status frame; a whole percent costs
 * one job write and one job_update. A report that moved only temperatures
 * (telemetry) reaches none of the listeners that never act on one (the job
 * tracker, filament, attention, notifications, usage). The next slide of the
 * per-report path fails here instead of waiting for `npm run bench -- fleet`.
 *
 * The printer is the simulator's real MQTT-over-TLS broker; the reports are
 * sent as ready bytes, so the only serialisations in the window are the
 * service's own.
 */
import type { Store } from '../../service/db';
import type { EventType } from '../../service/events';
import { driverFactory } from '../../service/printers/drivers';
import { until } from '../helpers/farm';
import { IDLE_REPORT, startHostileBambu, type HostileBambu } from '../helpers/hostile-bambu';
import { startService, type Harness } from '../helpers/service';
import { connectWs, type WsClient } from '../helpers/ws';

interface Counts {
  sql: Record<string, number>;
  events: Partial<Record<EventType, number>>;
  serialisations: number;
  /** Events heard, and reports taken, by listeners registered with `telemetry: false`. */
  spared: { events: number; reports: number };
}

/** Counts every repository call on `store` while `run` runs (each call is at least one SQL statement). */
function countRepositoryCalls(store: Store, into: Record<string, number>): () => void {
  const restore: Array<() => void> = [];
  for (const [name, repo] of Object.entries(store)) {
    if (!repo || typeof repo !== 'object' || name === 'connection') continue;
    const target = repo as Record<string, unknown>;
    let proto = Object.getPrototypeOf(target);
    while (proto && proto !== Object.prototype) {
      for (const method of Object.getOwnPropertyNames(proto)) {
        const original = target[method];
        if (method === 'constructor' || typeof original !== 'function' || Object.prototype.hasOwnProperty.call(target, method)) continue;
        target[method] = function (this: unknown, ...args: unknown[]) {
          into[`${name}.${method}`] = (into[`${name}.${method}`] ?? 0) + 1;
          return (original as (...a: unknown[]) => unknown).apply(this, args);
        };
        restore.push(() => delete target[method]);
      }
      proto = Object.getPrototypeOf(proto);
    }
  }
  return () => restore.forEach((undo) => undo());
}

let harness: Harness;
let peer: HostileBambu;
let ws: WsClient;
let marker = 100;
/** Reports given to a report listener that never acts on telemetry, while cost() counts. */
let sparedReports: number | null = null;
/** The printer whose telemetry a choosy report listener asks for (none: null), and the reports it was given. */
let askFor: string | null = null;
let askedReports = 0;

beforeAll(async () => {
  harness = await startService({ driverFactory: driverFactory({ backoffBaseMs: 50, backoffMaxMs: 200 }) });
  peer = await startHostileBambu('cost-01');
  expect((await harness.post('/api/v1/printers', peer.printer)).status).toBe(201);
  await until(async () => (await harness.get('/api/v1/printers/cost-01')).body?.connection_status === 'connected', 'printer connected');
  // The monitoring driver's first full report (the pushall answer, idle): what comes before it is held, and the
  // printer's view may show the connection test's driver, whose link is gone.
  await until(async () => harness.service.context.fleet.stateOf('cost-01') !== undefined, 'the first full report');
  harness.service.context.fleet.onReport(() => sparedReports !== null && sparedReports++, { telemetry: false });
  harness.service.context.fleet.onReport(() => askedReports++, { telemetry: (id) => id === askFor });
  ws = await connectWs(harness.base);
});

afterAll(async () => {
  await ws?.close();
  await harness?.close();
  await peer?.close();
});

const report = (fields: Record<string, unknown>) => Buffer.from(JSON.stringify({ print: { command: 'push_status', msg: 1, ...fields } }));

/**
 * Sends the reports, then one whose bed temperature is new (its printer_status frame marks the end: MQTT keeps
 * the order), and returns what the reports cost, the marker's frame and event taken off.
 */
async function cost(reports: Buffer[]): Promise<Counts> {
  const counts: Counts = { sql: {}, events: {}, serialisations: 0, spared: { events: 0, reports: 0 } };
  // Let the printer's earlier reports settle (job creation, the first last_seen write, the queue's pass a new
  // state woke) before counting.
  await harness.service.context.store.ping();
  await harness.service.context.dispatcher.idle();
  const restoreSql = countRepositoryCalls(harness.service.context.store, counts.sql);
  const stopEvents = harness.service.context.bus.onAny((type) => {
    counts.events[type] = (counts.events[type] ?? 0) + 1;
  });
  const stopSpared = harness.service.context.bus.onAny(() => counts.spared.events++, { telemetry: false });
  sparedReports = 0;
  const stringify = JSON.stringify;
  JSON.stringify = function (...args: Parameters<typeof JSON.stringify>) {
    counts.serialisations++;
    return stringify.apply(JSON, args);
  } as typeof JSON.stringify;
  const bed = ++marker;
  const end = stringify({ print: { command: 'push_status', msg: 1, bed_temper: bed } });
  try {
    // One report a loop turn, as a printer's reports come (seconds apart): a burst read at once would let the job
    // tracker fold several percents into one write, which is right there but not what is counted here.
    for (const payload of reports) {
      await peer.raw(payload);
      await new Promise((resolve) => setImmediate(resolve));
    }
    await peer.raw(end);
    await ws.next((f) => f.type === 'printer_status' && (f.data.temperatures as { bed?: number } | undefined)?.bed === bed, 10_000);
  } finally {
    JSON.stringify = stringify;
    stopEvents();
    stopSpared();
    restoreSql();
  }
  counts.spared.reports = sparedReports;
  sparedReports = null;
  counts.events.printer_status = (counts.events.printer_status ?? 0) - 1;
  counts.serialisations -= 1;
  return counts;
}

const times = <T>(n: number, make: (i: number) => T) => Array.from({ length: n }, (_, i) => make(i));

describe('the cost of a printer report, counted', () => {
  it('an idle printer: 100 reports that change nothing cost no SQL, no event and no frame', async () => {
    await peer.raw(report({ ...IDLE_REPORT, msg: 1, nozzle_temper: 24 }));
    const counts = await cost(times(100, () => report({ nozzle_temper: 24, bed_temper: 23 + 0.1 })));
    expect(counts).toEqual({ sql: {}, events: { printer_status: 0 }, serialisations: 0, spared: { events: 0, reports: 0 } });
  });

  it('an idle printer: 100 new temperatures cost one printer_status frame each, no SQL, and reach no listener that ignores telemetry', async () => {
    const counts = await cost(times(100, (i) => report({ nozzle_temper: 30 + i })));
    expect(counts).toEqual({ sql: {}, events: { printer_status: 100 }, serialisations: 100, spared: { events: 0, reports: 0 } });
  });

  it('a printing printer: temperatures cost a frame each, a whole percent one job write and one job_update', async () => {
    const start = { gcode_state: 'RUNNING', subtask_name: 'Cost benchy', gcode_file: '/data/Metadata/plate_1.gcode', mc_percent: 1, mc_remaining_time: 60, task_id: '4242', gcode_start_time: String(Math.floor(Date.now() / 1000)) };
    await peer.raw(report(start));
    await until(async () => (await harness.get('/api/v1/jobs?printer_id=cost-01&status=printing')).body?.jobs?.length === 1, 'the print became a job');

    const sameRun = await cost(times(100, (i) => report({ nozzle_temper: 200 + i * 0.5 + 0.5 })));
    expect(sameRun).toEqual({ sql: {}, events: { printer_status: 100 }, serialisations: 100, spared: { events: 0, reports: 0 } });

    // Ten whole percents, each reported with ten temperature changes: ten job writes, ten job_updates.
    const percents = await cost(times(100, (i) => report({ mc_percent: 2 + Math.floor(i / 10), nozzle_temper: 260 + i })));
    expect(percents.events).toEqual({ printer_status: 100, job_update: 10 });
    expect(percents.sql).toEqual({ 'jobs.transition': 10 });
    expect(percents.serialisations).toBe(110);
    // The ten reports with a new percent, their ten frames and ten job_updates reach every listener; the other 90 none of them.
    expect(percents.spared).toEqual({ events: 20, reports: 10 });
  });

  it('a listener that asks for telemetry hears a printer\'s only while it asks', async () => {
    askedReports = 0;
    await cost(times(10, (i) => report({ nozzle_temper: 300 + i })));
    expect(askedReports).toBe(0);
    askFor = 'cost-01';
    // The ten reports and cost()'s end marker, each of temperatures alone.
    await cost(times(10, (i) => report({ nozzle_temper: 320 + i })));
    expect(askedReports).toBe(11);
    askFor = null;
  });

  it('a job update that failed is retried by the next report, even one of temperatures alone; then telemetry is spared again', async () => {
    const { store, tracker } = harness.service.context;
    const transition = store.jobs.transition;
    let failures = 1;
    store.jobs.transition = async (...args: Parameters<typeof transition>) => {
      if (failures-- > 0) throw new Error('database is locked');
      return transition.apply(store.jobs, args);
    };
    const printing = async () => (await harness.get('/api/v1/jobs?printer_id=cost-01')).body.jobs.map((j: { status: string }) => j.status);
    try {
      await peer.raw(report({ gcode_state: 'FINISH', mc_percent: 100 }));
      await until(async () => failures < 1 && tracker.awaitsRetry('cost-01'), 'the job update failed');
      expect(await printing()).toEqual(['printing']);
      // An idle printer's next reports move only temperatures: the tracker asks for them until the retry.
      await peer.raw(report({ nozzle_temper: 180 }));
      await until(async () => (await printing())[0] === 'completed', 'the retry completed the job');
    } finally {
      store.jobs.transition = transition;
    }
    const after = await cost(times(20, (i) => report({ nozzle_temper: 170 - i })));
    expect(after).toEqual({ sql: {}, events: { printer_status: 20 }, serialisations: 20, spared: { events: 0, reports: 0 } });
  });
});
