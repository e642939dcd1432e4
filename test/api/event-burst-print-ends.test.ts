/**
 * Many printers' prints ending at once (a farm back after a network drop reports every finished print in one
 * turn), on a real store (SQLite and PostgreSQL): the print queue's runner (each end: the dispatch's move, then
 * its item settled, several statements) and the job tracker (each printer's job read and ended) take the
 * printers a few at a time, so that only a few statements wait for the database at once. With one chain per
 * printer, every printer's statements waited together and a request needing the database waited behind all.
 * Each printer's own steps stay in order: its end is recorded before its plate is marked and its item settled.
 */
import pino from 'pino';
import type { DispatchRecord } from '../../service/db/repositories/queue';
import { EventBus, type JobUpdateEvent } from '../../service/events';
import { JobTracker } from '../../service/monitoring/job-tracker';
import type { MachineState, PrinterState } from '../../service/printers/driver';
import { DispatchRunner } from '../../service/queue/dispatch-run';
import { ItemSettler } from '../../service/queue/item-settle';
import { newDispatch } from '../../service/queue/queued-start';
import { SettingsService } from '../../service/settings';
import { nowIso } from '../../service/util/time';
import { dialectStore } from '../helpers/dialect-store';
import { watchWaiting } from '../helpers/db-waiting';
import { describeDialects } from '../helpers/dialects';
import { queueItemRecord } from '../helpers/queue-records';

// A burst's work takes seconds alone and several times that beside the rest of the suite on two cores.
jest.setTimeout(90_000);

const log = pino({ level: 'silent' });
const PRINTERS = 60;

function report(state: MachineState, file: string | null): PrinterState {
  return {
    state, raw_state: state.toUpperCase(), temperatures: { nozzle: 30, bed: 30, nozzle_target: 0, bed_target: 0 }, error: null,
    job: file === null ? null : { name: file, file, progress: 100, layer_current: 40, layer_total: 40, remaining_seconds: 0, started_at: null, printer_job_id: null, time_printing: null },
    firmware_version: null, model: 'MK4S', capabilities: null,
  };
}

describeDialects('many printers\' prints ending at once', (db) => {
  const store = dialectStore(db, { options: async (d) => ({ ...(await d.options()), poolMax: 4 }) });

  async function printers(): Promise<string[]> {
    const at = nowIso();
    const ids: string[] = [];
    for (let p = 0; p < PRINTERS; p++) {
      ids.push(`mk4s-${p}`);
      await store.printers.insert({
        id: `mk4s-${p}`, name: `MK4S ${p}`, type: 'prusa_core', model: 'MK4S', ip_address: '127.0.0.1', serial_number: null, access_code: null, is_active: true,
        status: 'online', connection_status: 'connected', status_message: null, firmware_version: null, last_seen: null, created_at: at, updated_at: at,
        mqtt_port: null, ftps_port: null, http_port: null, power_watts: 100, auth_method: null,
      });
    }
    return ids;
  }

  test(`${PRINTERS} queued prints reported finished in one turn (half of them acknowledged in the same turn): the runner ends them a few at a time (a few statements wait), each printer's acknowledgement, end, plate and item in order, every item completed once`, async () => {
    const settings = await SettingsService.load(store.settings, {});
    const steps: string[] = [];
    const published: string[] = [];
    const settler = new ItemSettler({ store, settings, log, publish: async (itemId) => void published.push(itemId) }, () => undefined);
    const runner = new DispatchRunner(store, settings, log, {
      sender: () => { throw new Error('no start in this test'); },
      stateOf: () => undefined,
      isConnected: () => true,
      isFree: () => false,
      printerType: () => 'prusa_core',
      settle: async (itemId, failure) => {
        steps.push(`settle ${itemId} ${failure}`);
        await settler.settle(itemId, failure);
      },
      notReady: () => undefined,
      printEnded: (id) => void steps.push(`ended ${id}`),
      cleanUp: () => undefined,
      reconnect: () => undefined,
    });
    const ids = await printers();
    const open: DispatchRecord[] = [];
    for (const [i, printerId] of ids.entries()) {
      const item = queueItemRecord({ id: `item-${i}`, file_id: `file-${i}`, name: `Part ${i}` });
      await store.queue.insertItem(item);
      const d = newDispatch(item, { id: printerId, type: 'prusa_core' }, `part_${i}.gcode`, { file_id: item.file_id, plate: 1 }, 1);
      expect(await store.queue.claim(d)).toBe(true);
      // Every other start was sent and not yet acknowledged when the printers went out of sight.
      const state = i % 2 ? 'starting' : 'printing';
      await store.queue.updateDispatch(d.id, { state, start_sent_at: nowIso(), updated_at: nowIso() });
      await store.queue.transitionItem(item.id, ['queued'], { status: 'printing', updated_at: nowIso() });
      open.push({ ...d, state });
    }
    // The runner moves its records on: which were starting is kept aside.
    const starting = new Set(open.filter((d) => d.state === 'starting').map((d) => d.id));
    for (const d of open) runner.recover(d, 60);
    const waiting = watchWaiting(store);
    try {
      const ends = open.flatMap((d) => [
        ...(starting.has(d.id) ? [runner.onReport(d.printer_id, report('printing', d.remote_name))] : []),
        runner.onReport(d.printer_id, report('finished', d.remote_name)),
      ]);
      await Promise.all(ends);
      await runner.idle();
      // Two printers' ends at a time, each one statement after the other.
      expect(waiting.most()).toBeLessThanOrEqual(2);
    } finally {
      waiting.stop();
      await runner.close();
    }
    for (const d of open) {
      const acknowledged = starting.has(d.id) ? [`settle ${d.item_id} null`] : [];
      expect(steps.filter((s) => s.endsWith(` ${d.printer_id}`) || s.includes(` ${d.item_id} `))).toEqual([...acknowledged, `ended ${d.printer_id}`, `settle ${d.item_id} reset`]);
      expect(await store.queue.getDispatch(d.id)).toMatchObject({ state: 'completed', error: null });
      expect(await store.queue.getItem(d.item_id)).toMatchObject({ status: 'completed', failures_in_row: 0 });
    }
    // Announced once per settle: the acknowledged ones twice (printing, then completed).
    expect(published.sort()).toEqual(open.flatMap((d) => (starting.has(d.id) ? [d.item_id, d.item_id] : [d.item_id])).sort());
  });

  test(`${PRINTERS} printers' tracked jobs ending in one turn: the job tracker ends them a few at a time (a few statements wait), each job ended and announced once`, async () => {
    const settings = await SettingsService.load(store.settings, {});
    const bus = new EventBus();
    const ended: JobUpdateEvent[] = [];
    bus.on('job_update', (e) => void (e.change === 'status' && ended.push(e)));
    const tracker = new JobTracker(store, settings, bus, log);
    const ids = await printers();
    const jobs = new Map<string, number>();
    const at = nowIso();
    for (const [i, printerId] of ids.entries()) {
      jobs.set(printerId, await store.jobs.insert({
        printer_id: printerId, job_name: `Part ${i}`, filename: `part_${i}.gcode`, status: 'printing', progress: 90, start_time: at, created_at: at, updated_at: at, print_key: `part_${i}.gcode@${i}`,
      }));
    }
    const waiting = watchWaiting(store);
    try {
      for (const printerId of ids) tracker.report(printerId, report('finished', null));
      await tracker.idle();
      // Four printers' updates at a time, each one statement after the other.
      expect(waiting.most()).toBeLessThanOrEqual(4);
    } finally {
      waiting.stop();
      tracker.close();
    }
    expect(ended.map((e) => e.job_id).sort((a, b) => a - b)).toEqual([...jobs.values()].sort((a, b) => a - b));
    for (const [i, printerId] of ids.entries()) {
      expect(await store.jobs.get(jobs.get(printerId)!)).toMatchObject({ status: 'completed', progress: 100 });
      expect(ended.find((e) => e.printer_id === printerId)).toMatchObject({ status: 'completed', job_name: `Part ${i}` });
    }
  });
});
