/**
 * `printfarm serve` SIGKILLed in the middle of a dispatch, twice: while it
 * uploads to a Bambu printer (throttled FTPS), and while it waits for a
 * PrusaLink printer to acknowledge its start. After each restart on the same
 * data dir nothing is lost and nothing starts twice: the interrupted upload is
 * retried, the unacknowledged start is resolved from the printer's state.
 * Needs `npm run build` (the child runs dist/).
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import { bambu3mf, prusaGcode } from '../../service/simulators/seed-files';
import { killChildren, spawnService, type ChildService } from '../helpers/child-service';
import { control, until } from '../helpers/farm';
import { tempDir, uploadFile } from '../helpers/service';
import { bambuSim, prusaSim, simState, type SimPrinter } from './queue-helpers';

const ENV = { MONITORING_INTERVAL: '5', QUEUE_START_TIMEOUT_S: '30' };

/** The dispatch states stored for an item, read from the database file of the killed service. */
function storedStates(dir: string, itemId: string): string[] {
  const db = new Database(path.join(dir, 'printfarm.db'), { readonly: true });
  try {
    return (db.prepare('SELECT state FROM queue_dispatches WHERE item_id = ? ORDER BY created_at').all(itemId) as { state: string }[]).map((r) => r.state);
  } finally {
    db.close();
  }
}

const itemOf = async (s: ChildService, id: string) => (await s.get(`/api/v1/queue/${id}`)).body as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('queue: restart recovery', () => {
  let printers: SimPrinter[] = [];
  afterAll(async () => {
    await killChildren();
    await Promise.all(printers.map((p) => p.close()));
  });

  test('killed while uploading and while waiting for the acknowledgement: each copy starts exactly once', async () => {
    const bambu = await bambuSim('x1c-a', 'X1C #01', 'X1C', 5);
    const prusa = await prusaSim('mk4s-a', 'MK4S #01', 'MK4S', 5);
    printers = [bambu, prusa];
    const dir = tempDir();
    let s = await spawnService(dir, ENV);
    for (const p of printers) expect((await s.post('/api/v1/printers', p.body)).status).toBe(201);
    await until(async () => (await s.get('/api/v1/printers')).body.printers.every((p: { connection_status: string }) => p.connection_status === 'connected'), 'printers connected', 20_000);

    // 1. SIGKILL while the 8 kB file crawls to the Bambu printer at 1 kB/s.
    await control(bambu.control, 'faults', { transfer_bytes_per_sec: 1000 });
    const bambuFile = await uploadFile(s.base, 'Knob.gcode.3mf', bambu3mf({ model: 'X1C' }));
    const first = (await s.post('/api/v1/queue', { file_id: bambuFile, target: { printer_ids: ['x1c-a'] } })).body;
    await until(async () => (await itemOf(s, first.id)).dispatches[0]?.state === 'uploading', 'uploading', 20_000);
    await s.kill('SIGKILL');
    expect(storedStates(dir, first.id)).toEqual(['uploading']);
    // The simulator notices the cut upload (its session closes) before it reports again.
    const st = await until(async () => {
      const state = await simState(bambu);
      return state.prints_started !== undefined && state.stats.ftp_active_uploads === 0 ? state : null;
    }, 'the cut upload noticed', 10_000);
    expect(st.prints_started).toBe(0);
    await control(bambu.control, 'faults', { transfer_bytes_per_sec: 0 });

    s = await spawnService(dir, ENV);
    const resumed = await until(async () => {
      const i = await itemOf(s, first.id);
      return i.dispatches.some((d: { state: string }) => d.state === 'printing') ? i : null;
    }, 'the retried upload printing', 30_000);
    expect(resumed.dispatches.filter((d: { state: string }) => d.state === 'printing')).toHaveLength(1);
    expect(await simState(bambu)).toMatchObject({ prints_started: 1, starts_while_busy: 0 });

    // 2. SIGKILL after the PrusaLink start went out, before a poll saw the new job.
    const prusaFile = await uploadFile(s.base, 'cube_MK4S.gcode', prusaGcode({ model: 'MK4S' }));
    const second = (await s.post('/api/v1/queue', { file_id: prusaFile })).body;
    await until(async () => (await itemOf(s, second.id)).dispatches[0]?.state === 'starting', 'starting', 20_000);
    await until(async () => (await simState(prusa)).prints_started === 1, 'the Prusa start', 10_000);
    await s.kill('SIGKILL');
    // Killed before any poll acknowledged the start (the printer is polled every 5 s).
    expect(storedStates(dir, second.id)).toEqual(['starting']);

    s = await spawnService(dir, ENV);
    const acknowledged = await until(async () => {
      const i = await itemOf(s, second.id);
      return i.dispatches[0]?.state === 'printing' ? i : null;
    }, 'the start resolved from the printer state', 30_000);
    expect(acknowledged.dispatches).toHaveLength(1);
    expect(await simState(prusa)).toMatchObject({ prints_started: 1 });
    expect(await simState(bambu)).toMatchObject({ prints_started: 1, starts_while_busy: 0 });
    expect((await itemOf(s, first.id)).dispatches.filter((d: { state: string }) => d.state === 'printing')).toHaveLength(1);
    await s.kill('SIGTERM');
  }, 150_000);
});
