/**
 * A queued 3-colour print on simulated AMS trays, and `printfarm serve`
 * SIGKILLed as the print ends, then again once its usage is recorded: each
 * filament's grams come off the spool of its tray exactly once across the
 * restarts (the replayed end of the print subtracts nothing more).
 * Needs `npm run build` (the child runs dist/).
 */
import Database from 'better-sqlite3';
import path from 'node:path';
import { bambu3mf } from '../../service/simulators/seed-files';
import { killChildren, spawnService } from '../helpers/child-service';
import { control, until } from '../helpers/farm';
import { tempDir } from '../helpers/service';
import { bambuSim, upload, type SimPrinter } from './queue-helpers';

const ENV = { MONITORING_INTERVAL: '5' };
const TAG = 'C3'.repeat(16);

/** The usage rows of a job, read from the killed service's database file. */
function storedUsage(dir: string, jobId: number): { slot: number; grams: number }[] {
  const db = new Database(path.join(dir, 'printfarm.db'), { readonly: true });
  try {
    return db.prepare('SELECT slot, grams FROM filament_usage WHERE job_id = ? ORDER BY slot').all(jobId) as { slot: number; grams: number }[];
  } finally {
    db.close();
  }
}

describe('filament: usage across SIGKILL restarts', () => {
  let sim: SimPrinter | undefined;
  afterAll(async () => {
    await killChildren();
    await sim?.close();
  });

  test('each filament of a 3-colour print is subtracted from its spool once', async () => {
    sim = await bambuSim('x1c-r', 'X1C #05', 'X1C', 5);
    await control(sim.control, 'materials', {
      materials: [
        { slot: 0, type: 'PLA', color: '#FF0000', tray_uuid: TAG, remain: 80 },
        { slot: 1, type: 'PETG', color: '#00FF00' },
        { slot: 2, type: 'PLA', color: '#0000FF' },
      ],
    });
    const dir = tempDir();
    let s = await spawnService(dir, ENV);
    expect((await s.post('/api/v1/printers', { ...sim.body, plate_auto_clear: true })).status).toBe(201);
    const red = await until(async () => (await s.get('/api/v1/spools?printer_id=x1c-r')).body.spools.find((x: { rfid_uuid: string }) => x.rfid_uuid === TAG), 'the RFID spool', 20_000);
    expect(red.remaining_weight_g).toBe(800);
    const green = (await s.post('/api/v1/spools', { material: 'PETG', color: '#00FF00', remaining_weight_g: 600 })).body;
    const blue = (await s.post('/api/v1/spools', { material: 'PLA', color: '#0000FF', remaining_weight_g: 400 })).body;
    expect((await s.request('PUT', '/api/v1/printers/x1c-r/slots/1', { spool_id: green.id })).status).toBe(200);
    expect((await s.request('PUT', '/api/v1/printers/x1c-r/slots/2', { spool_id: blue.id })).status).toBe(200);

    const file = await upload(
      s,
      'Flag.gcode.3mf',
      bambu3mf({ model: 'X1C', filaments: [{ type: 'PLA', color: '#FF0000', grams: 21.5 }, { type: 'PETG', color: '#00FF00', grams: 14 }, { type: 'PLA', color: '#0000FF', grams: 6.25 }] }),
    );
    const item = (await s.post('/api/v1/queue', { file_id: file })).body;
    const dispatch = await until(async () => {
      const d = (await s.get(`/api/v1/queue/${item.id}`)).body.dispatches[0];
      return d?.state === 'printing' && d.job_id ? d : null;
    }, 'the copy printing with its job', 30_000);

    // The print ends and the service dies with it.
    await control(sim.control, 'finish');
    await s.kill('SIGKILL');

    s = await spawnService(dir, ENV);
    const job = await until(async () => {
      const j = (await s.get(`/api/v1/jobs/${dispatch.job_id}`)).body;
      return j.filament_usage?.length === 3 ? j : null;
    }, 'the usage after the restart', 30_000);
    expect(job.status).toBe('completed');
    expect(job.filament_usage.map((u: { spool_id: number; slot: number; grams: number }) => [u.spool_id, u.slot, u.grams])).toEqual([
      [red.id, 0, 21.5],
      [green.id, 1, 14],
      [blue.id, 2, 6.25],
    ]);
    const left = async () => Promise.all([red, green, blue].map(async (x) => (await s.get(`/api/v1/spools/${x.id}`)).body.remaining_weight_g));
    expect(await left()).toEqual([778.5, 586, 393.75]);

    // Killed again after the usage was written: the printer's finished print, seen anew, subtracts nothing more.
    await s.kill('SIGKILL');
    expect(storedUsage(dir, dispatch.job_id)).toHaveLength(3);
    s = await spawnService(dir, ENV);
    await until(async () => ((await s.get('/api/v1/printers/x1c-r')).body.connection_status === 'connected' ? true : null), 'reconnected', 20_000);
    // A report or two after the reconnect has been handled by the time a new print could have been tracked.
    await until(async () => ((await s.get('/api/v1/printers/x1c-r')).body.materials.length === 3 ? true : null), 'materials reported', 20_000);
    expect(await left()).toEqual([778.5, 586, 393.75]);
    expect((await s.get(`/api/v1/jobs/${dispatch.job_id}`)).body.filament_usage).toHaveLength(3);
    await s.kill('SIGTERM');
  }, 150_000);
});
