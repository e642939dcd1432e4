/**
 * Compatibility over real simulators: a file sliced for a model the farm
 * lacks waits and names the model; a material requirement waits until the
 * printer reports that filament loaded, then starts with a tray mapping
 * computed for that printer.
 */
import { bambu3mf } from '../../service/simulators/seed-files';
import { control } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';
import { addPrinters, bambuSim, itemUntil, queueServiceOptions, simState, upload, type SimPrinter } from './queue-helpers';

describe('queue: compatibility from what the file and the printer say', () => {
  let printers: SimPrinter[] = [];
  let h: Harness;
  beforeAll(async () => {
    printers = [await bambuSim('x1c-a', 'X1C #01'), await bambuSim('x1c-b', 'X1C #02')];
    h = await startService(queueServiceOptions);
    await addPrinters(h, printers);
  });
  afterAll(async () => {
    await h?.close();
    await Promise.all(printers.map((p) => p.close()));
  });

  test('an A1 file with only X1C printers stays queued, naming the model; nothing starts', async () => {
    const file = await upload(h, 'Hook.gcode.3mf', bambu3mf({ model: 'A1' }));
    const { body } = await h.post('/api/v1/queue', { file_id: file });
    const waiting = await itemUntil(h, body.id, (i) => i.waiting_reason !== null, 'a waiting reason');
    expect(waiting).toMatchObject({ status: 'queued', remaining: 1, dispatches: [], waiting_reason: 'sliced for Bambu Lab A1; no A1 in the farm' });
    for (const p of printers) expect((await simState(p)).prints_started).toBe(0);
    expect((await h.del(`/api/v1/queue/${body.id}`)).body.status).toBe('cancelled');
  });

  test('a PETG requirement waits until POST /materials loads PETG, then starts with that tray', async () => {
    const printers0 = (await h.get('/api/v1/printers')).body.printers;
    expect(printers0[0]).toMatchObject({ nozzle_diameter: 0.4, materials: [{ slot: 0, type: 'PLA', color: '#FFFFFF', remaining_percent: expect.any(Number) }] });
    const file = await upload(h, 'Clip.gcode.3mf', bambu3mf({ model: 'X1C' }));
    const { body } = await h.post('/api/v1/queue', { file_id: file, requirements: { material: 'PETG' } });
    const waiting = await itemUntil(h, body.id, (i) => i.waiting_reason !== null, 'a waiting reason');
    expect(waiting.waiting_reason).toBe('PETG not loaded on X1C #01; PETG not loaded on X1C #02');
    expect(waiting.dispatches).toEqual([]);

    await control(printers[1].control, 'materials', { materials: [{ slot: 0, type: 'PLA', color: '#FFFFFF' }, { slot: 2, type: 'PETG', color: '#000000' }] });
    const started = await itemUntil(h, body.id, (i) => i.dispatches.some((d: { state: string }) => d.state === 'printing'), 'the copy printing');
    expect(started.dispatches).toEqual([expect.objectContaining({ printer_id: 'x1c-b', state: 'printing', attempt: 1, error: null })]);
    const sim = await simState(printers[1]);
    // The file's one filament goes to the PETG tray of THIS printer.
    expect(sim.last_start).toMatchObject({ ams_mapping: [2], use_ams: true, stalled: null });
    expect(sim.last_start.trays).toEqual([expect.objectContaining({ slot: 2, loaded_type: 'PETG' })]);
    expect((await simState(printers[0])).prints_started).toBe(0);
  });

  test('start_after holds a copy back until its time, then it starts on its own', async () => {
    const file = await upload(h, 'Later.gcode.3mf', bambu3mf({ model: 'X1C' }));
    const at = new Date(Date.now() + 2000).toISOString();
    const { body } = await h.post('/api/v1/queue', { file_id: file, start_after: at, target: { printer_ids: ['x1c-a'] } });
    expect(body.start_after).toBe(at);
    const waiting = await itemUntil(h, body.id, (i) => i.waiting_reason !== null, 'a waiting reason');
    expect(waiting).toMatchObject({ waiting_reason: 'start_after not reached', dispatches: [] });
    const started = await itemUntil(h, body.id, (i) => i.dispatches[0]?.state === 'printing', 'the copy printing', 15_000);
    expect(Date.parse(started.dispatches[0].created_at)).toBeGreaterThanOrEqual(Date.parse(at));
    expect((await simState(printers[0])).prints_started).toBe(1);
  });
});
