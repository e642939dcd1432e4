/**
 * What a printer's driver is started with about the printer's last print (monitoring/cancelled-runs.ts): the
 * newest job the job tracker recorded for each printer, in one statement for the farm, and a test of its run
 * when it ended cancelled. The same on SQLite and PostgreSQL.
 */
import type { Store } from '../../service/db';
import type { NewJob } from '../../service/db/repositories/jobs';
import { cancelledRuns } from '../../service/monitoring/cancelled-runs';
import type { PrintProgress } from '../../service/printers/driver';
import { dialectStore, statementsOf } from '../helpers/dialect-store';
import { describeDialects } from '../helpers/dialects';

const AT = '2026-11-27T10:00:00.000Z';

async function addPrinter(store: Store, id: string) {
  await store.printers.insert({
    id, name: id, type: 'bambu_lab', model: 'P1S', ip_address: '127.0.0.1', serial_number: null, access_code: null, is_active: true,
    status: 'online', connection_status: 'connected', status_message: null, firmware_version: null, last_seen: null,
    created_at: AT, updated_at: AT, mqtt_port: null, ftps_port: null, http_port: null, power_watts: null, auth_method: null,
  });
}

/** A job as the job tracker writes it (print_key set), started at `start` (ISO). */
async function addJob(store: Store, printerId: string, file: string, start: string, status: string, extra: Partial<NewJob> = {}) {
  return store.jobs.insert({
    printer_id: printerId, job_name: file.replace(/\..*$/, ''), filename: file, status, start_time: start, created_at: start, updated_at: start,
    print_key: `${file}@${start}`, printer_job_id: null, customer_info: { auto_created: true, printer_start_time: start }, ...extra,
  });
}

const print = (file: string, startedAt: string | null, taskId: string | null = null): PrintProgress => ({
  name: file.replace(/\..*$/, ''), file, progress: 40, layer_current: null, layer_total: null, remaining_seconds: null, started_at: startedAt, printer_job_id: taskId, time_printing: null,
});

describeDialects('the last job of each printer, for its driver', (db) => {
  const store = dialectStore(db);

  test('the newest tracked job per printer in one statement; a run test only where it ended cancelled', async () => {
    for (const id of ['p1', 'p2', 'p3', 'p4']) await addPrinter(store, id);
    // p1: an older completed print, then the cancelled one; a job added by hand later (no print identity) is no print.
    await addJob(store, 'p1', 'Old.gcode.3mf', '2026-11-27T08:00:00.000Z', 'completed');
    await addJob(store, 'p1', 'Cube.gcode.3mf', '2026-11-27T09:00:00.000Z', 'cancelled', { printer_job_id: '7' });
    await store.jobs.insert({ printer_id: 'p1', job_name: 'by hand', status: 'queued', created_at: AT, updated_at: AT });
    // p2: a cancel, then a newer print that failed: its last job is the failure.
    await addJob(store, 'p2', 'Cube.gcode.3mf', '2026-11-27T08:00:00.000Z', 'cancelled');
    await addJob(store, 'p2', 'Gear.gcode.3mf', '2026-11-27T09:00:00.000Z', 'failed');
    // p3: still printing; p4: no job at all.
    await addJob(store, 'p3', 'Cube.gcode.3mf', '2026-11-27T09:00:00.000Z', 'printing');

    let last = new Map<string, { job_name: string; status: string }>();
    const statements = await statementsOf(store, async () => {
      last = await store.jobs.lastTrackedByPrinter(['p1', 'p2', 'p3', 'p4', 'gone']);
    });
    expect(statements).toHaveLength(1);
    expect(Object.fromEntries([...last].map(([id, j]) => [id, [j.job_name, j.status]]))).toEqual({
      p1: ['Cube', 'cancelled'],
      p2: ['Gear', 'failed'],
      p3: ['Cube', 'printing'],
    });

    const runs = await cancelledRuns(store, ['p1', 'p2', 'p3', 'p4']);
    expect([...runs.keys()]).toEqual(['p1']);
    const isRun = runs.get('p1')!;
    // The job tracker's rule: the same file in any spelling, the same printer job id and start minute.
    expect(isRun(print('/cache/Cube.gcode.3mf', '2026-11-27T09:00:20.000Z', '7'))).toBe(true);
    expect(isRun(print('Cube.3mf', null, null))).toBe(true);
    expect(isRun(print('Cube.gcode.3mf', '2026-11-27T09:00:00.000Z', '8'))).toBe(false);
    expect(isRun(print('Cube.gcode.3mf', '2026-11-27T09:30:00.000Z', '7'))).toBe(false);
    expect(isRun(print('Gear.gcode.3mf', '2026-11-27T09:00:00.000Z', '7'))).toBe(false);
    expect(isRun(null)).toBe(false);
    expect(await cancelledRuns(store, [])).toEqual(new Map());
  });
});
