/**
 * "A Benchy on whatever is free" (issue 23) over five simulators (X1C, P1S,
 * A1, MK4S, Core One): an item with an X1C and an MK4S variant and 4 copies
 * starts exactly 4 prints, each variant only on its own model, and the
 * per-variant counts add up to the item's. GET /queue/schedule estimated
 * beforehand which copy goes where and in which order, and that is what then
 * happens.
 */
import { bambu3mf, prusaGcode } from '../../service/simulators/seed-files';
import { control } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';
import { addPrinters, bambuSim, itemUntil, prusaSim, queueServiceOptions, simState, upload, type SimPrinter } from './queue-helpers';

type Dispatch = { printer_id: string; file_id: string; state: string };

describe('queue: variants and the schedule', () => {
  let printers: Record<string, SimPrinter> = {};
  let h: Harness;
  beforeAll(async () => {
    const list = await Promise.all([
      // The X1C prints fast, so that it frees up first as the schedule says; the MK4S print is ended by hand.
      bambuSim('x1c', 'X1C #01', 'X1C', 50),
      bambuSim('p1s', 'P1S #01', 'P1S'),
      bambuSim('a1', 'A1 #01', 'A1'),
      prusaSim('mk4s', 'MK4S #01', 'MK4S'),
      prusaSim('core-one', 'Core One #01', 'Core One'),
    ]);
    printers = Object.fromEntries(list.map((p) => [p.id, p]));
    h = await startService(queueServiceOptions);
    await addPrinters(h, list);
  });
  afterAll(async () => {
    await h?.close();
    await Promise.all(Object.values(printers).map((p) => p.close()));
  });

  test('2 variants x 4 copies: exactly 4 prints, each variant on its model, in the order the schedule estimated', async () => {
    await h.put('/api/v1/settings', { queue_dispatch_enabled: false });
    const x1cFile = await upload(h, 'Benchy_X1C.gcode.3mf', bambu3mf({ model: 'X1C', predictionS: 120 }));
    const mk4sFile = await upload(h, 'Benchy_MK4S.gcode', prusaGcode({ model: 'MK4S' }));
    const a1File = await upload(h, 'Hook_A1.gcode.3mf', bambu3mf({ model: 'A1' }));
    const benchy = (await h.post('/api/v1/queue', { name: 'Benchy', files: [{ file_id: x1cFile }, { file_id: mk4sFile }], copies: 4, priority: 1 })).body;
    const hook = (await h.post('/api/v1/queue', { name: 'Hook', file_id: a1File })).body;

    const schedule = (await h.get('/api/v1/queue/schedule')).body;
    const plan = schedule.entries.map((e: Record<string, unknown>) => [e.item_name, e.copy, e.printer_id, e.file_id]);
    // Now: one Benchy copy on each model it has a variant for, the hook on the A1; then twice the X1C: its
    // 2-minute print ends twice before the MK4S's 12 min 30 s.
    expect(plan.slice(0, 3).map(([name, , printer, file]: unknown[]) => [name, printer, file])).toEqual(
      expect.arrayContaining([
        ['Benchy', 'x1c', x1cFile],
        ['Benchy', 'mk4s', mk4sFile],
        ['Hook', 'a1', a1File],
      ]),
    );
    expect(plan.slice(3)).toEqual([
      ['Benchy', 3, 'x1c', x1cFile],
      ['Benchy', 4, 'x1c', x1cFile],
    ]);
    const [first, , , third, fourth] = schedule.entries;
    expect(Date.parse(third.start) - Date.parse(first.start)).toBe(120_000);
    expect(Date.parse(fourth.start) - Date.parse(first.start)).toBe(240_000);
    expect(schedule.unplaced).toEqual([]);
    expect(schedule.printers.map((p: { id: string }) => p.id).sort()).toEqual(['a1', 'core-one', 'mk4s', 'p1s', 'x1c']);

    await h.put('/api/v1/settings', { queue_dispatch_enabled: true });
    const started = await itemUntil(h, benchy.id, (i) => i.dispatches.filter((d: Dispatch) => d.state === 'printing').length === 2, 'two Benchy copies printing');
    expect(started.dispatches.map((d: Dispatch) => [d.printer_id, d.file_id]).sort()).toEqual([['mk4s', mk4sFile], ['x1c', x1cFile]].sort());
    expect(started).toMatchObject({ remaining: 2, waiting_reason: 'all compatible printers busy' });
    await itemUntil(h, hook.id, (i) => i.dispatches[0]?.printer_id === 'a1' && i.dispatches[0]?.state === 'printing', 'the hook on the A1');

    // The X1C finishes on its own, twice, while the MK4S still prints: copies 3 and 4 go there, as estimated.
    for (const n of [3, 4]) {
      await itemUntil(h, benchy.id, (i) => i.completed === n - 2, `X1C copy ${n - 2} completed`, 30_000);
      await h.post('/api/v1/printers/x1c/plate-cleared');
      const claimed = await itemUntil(h, benchy.id, (i) => i.dispatches.length === n, `copy ${n} claimed`);
      expect(claimed.dispatches[n - 1]).toMatchObject({ printer_id: 'x1c', file_id: x1cFile });
      expect((await simState(printers.mk4s)).status).toBe('PRINTING');
    }
    await itemUntil(h, benchy.id, (i) => i.completed === 2 && i.remaining === 0, 'both X1C copies done', 30_000);
    await control(printers.mk4s.control, 'finish');

    // Exactly 4 prints, each variant only on its model; the P1S and the Core One printed nothing.
    const done = await itemUntil(h, benchy.id, (i) => i.status === 'completed', 'completed', 30_000);
    expect(done).toMatchObject({ copies: 4, completed: 4, failed: 0, remaining: 0 });
    expect(done.files).toEqual([
      { file_id: x1cFile, plate: 1, printing: 0, completed: 3, failed: 0 },
      { file_id: mk4sFile, plate: 1, printing: 0, completed: 1, failed: 0 },
    ]);
    expect((await simState(printers.x1c)).prints_started).toBe(3);
    expect((await simState(printers.mk4s)).prints_started).toBe(1);
    expect((await simState(printers.p1s)).prints_started).toBe(0);
    expect((await simState(printers['core-one'])).prints_started).toBe(0);
    expect((await h.get('/api/v1/queue/schedule')).body.entries).toEqual([]);
  });
});
