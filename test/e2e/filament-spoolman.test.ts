/**
 * Spoolman mode against the Spoolman simulator: the spools are Spoolman's,
 * slots store Spoolman ids, and what prints use is reported with
 * `PUT /spool/{id}/use {"use_weight": g}`: the uses add up to the printed
 * grams; with Spoolman down the usage waits in the outbox (/health shows
 * Spoolman degraded) and is sent once it is back, nothing lost and nothing
 * sent twice.
 */
import { bambu3mf } from '../../service/simulators/seed-files';
import { SpoolmanSimulator } from '../../service/simulators/spoolman';
import { control, until } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';
import { addPrinters, bambuSim, itemUntil, queueServiceOptions, upload, type SimPrinter } from './queue-helpers';

describe('filament: Spoolman mode', () => {
  let printer: SimPrinter;
  let spoolman: SpoolmanSimulator;
  let h: Harness;

  beforeAll(async () => {
    spoolman = await SpoolmanSimulator.start();
    printer = await bambuSim('x1c-s', 'X1C #07', 'X1C', 5);
    printer.body.plate_auto_clear = true;
    await control(printer.control, 'materials', { materials: [{ slot: 0, type: 'PLA', color: '#FFFFFF' }, { slot: 1, type: 'PLA', color: '#000000' }] });
    h = await startService({ ...queueServiceOptions, env: { SPOOLMAN_URL: spoolman.url }, spoolman: { pollMs: 60_000, retryMs: 200, timeoutMs: 1000 } });
    await addPrinters(h, [printer]);
  });
  afterAll(async () => {
    await h?.close();
    await printer?.close();
    await spoolman?.close();
  });

  /** Queues a two-colour print on the printer, lets it finish, and returns its job once its usage is recorded. */
  async function print(name: string, white: number, black: number) {
    const file = await upload(h, name, bambu3mf({ model: 'X1C', filaments: [{ type: 'PLA', color: '#FFFFFF', grams: white }, { type: 'PLA', color: '#000000', grams: black }] }));
    const { body } = await h.post('/api/v1/queue', { file_id: file });
    const item = await itemUntil(h, body.id, (i) => i.dispatches[0]?.state === 'printing' && i.dispatches[0].job_id !== null, 'the copy printing');
    await control(printer.control, 'finish');
    const jobId = item.dispatches[0].job_id;
    return until(async () => {
      const job = (await h.get(`/api/v1/jobs/${jobId}`)).body;
      return job.filament_usage.length === 2 ? job : null;
    }, 'the usage', 20_000);
  }

  test('the spools are Spoolman\'s; usage is reported with use_weight and adds up to the printed grams', async () => {
    const list = await until(async () => {
      const b = (await h.get('/api/v1/spools')).body;
      return b.spools.length === 3 ? b : null;
    }, 'Spoolman spools listed');
    expect(list.source).toBe('spoolman');
    expect(list.spools[2]).toMatchObject({ id: 3, source: 'spoolman', material: 'PETG', color: '#FF6A00', brand: 'Prusament', remaining_weight_g: 180, cost_per_kg: 30 });
    expect((await h.get('/api/v1/spools?material=PLA')).body.spools.map((s: { id: number }) => s.id)).toEqual([1, 2]);
    expect((await h.post('/api/v1/spools', { material: 'PLA' })).status).toBe(409);

    expect((await h.put('/api/v1/printers/x1c-s/slots/0', { spool_id: 1 })).body).toMatchObject({ spool_id: 1, spool: { source: 'spoolman', printer_id: 'x1c-s', slot: 0, location: 'X1C #07 slot 0' } });
    // Spoolman's own location follows the slot.
    expect(spoolman.view(1)).toMatchObject({ location: 'X1C #07 slot 0' });
    expect((await h.put('/api/v1/printers/x1c-s/slots/1', { spool_id: 2 })).status).toBe(200);
    expect((await h.put('/api/v1/printers/x1c-s/slots/2', { spool_id: 99 })).status).toBe(404);
    // Read once the printer's state is there: on a loaded machine the test service's short watchdog can drop and
    // renew the link, and until the next report a printer shows no materials (one local failure, 2026-11-26).
    const materials = await until(async () => {
      const m = (await h.get('/api/v1/printers/x1c-s')).body.materials as Array<{ spool_id: number | null }>;
      return m.length >= 2 && m[1].spool_id !== null ? m : null;
    }, 'the materials with their spools');
    expect(materials).toEqual([expect.objectContaining({ slot: 0, spool_id: 1, remaining_weight_g: 1000 }), expect.objectContaining({ slot: 1, spool_id: 2, remaining_weight_g: 1000 })]);

    const job = await print('Duo.gcode.3mf', 10.5, 4.25);
    expect(job.filament_usage).toEqual([expect.objectContaining({ spool_id: 1, slot: 0, grams: 10.5 }), expect.objectContaining({ spool_id: 2, slot: 1, grams: 4.25 })]);
    await until(() => spoolman.uses.length === 2, 'the two use calls');
    expect(spoolman.uses).toEqual([
      { spool_id: 1, use_weight: 10.5, use_length: null },
      { spool_id: 2, use_weight: 4.25, use_length: null },
    ]);
    await until(async () => ((await h.get('/api/v1/spools/1')).body.remaining_weight_g === 989.5 ? true : null), 'Spoolman\'s figure back in the view');
    expect((await h.get('/api/v1/health')).body.spoolman).toMatchObject({ status: 'ok', pending_usage: 0 });
  }, 60_000);

  test('Spoolman down: the usage waits (health degraded), is sent once it is back, and never twice', async () => {
    await spoolman.down();
    const job = await print('Duo2.gcode.3mf', 3, 2);
    expect(job.filament_usage.map((u: { grams: number }) => u.grams)).toEqual([3, 2]);
    const health = await until(async () => {
      const b = (await h.get('/api/v1/health')).body;
      return b.spoolman?.pending_usage === 2 && b.spoolman.last_error ? b : null;
    }, 'health shows the outbox waiting');
    expect(health).toMatchObject({ status: 'healthy', spoolman: { status: 'degraded', pending_usage: 2 } });
    // Several retry rounds fail while it is down.
    await new Promise((r) => setTimeout(r, 1500));
    expect(spoolman.uses).toHaveLength(2);

    await spoolman.up();
    await until(() => spoolman.uses.length === 4, 'the waiting uses sent', 20_000);
    await until(async () => ((await h.get('/api/v1/health')).body.spoolman.status === 'ok' ? true : null), 'health ok again');
    // More poll rounds: nothing is sent again.
    await new Promise((r) => setTimeout(r, 1500));
    expect(spoolman.uses.slice(2)).toEqual([
      { spool_id: 1, use_weight: 3, use_length: null },
      { spool_id: 2, use_weight: 2, use_length: null },
    ]);
    const total = (id: number) => spoolman.uses.filter((u) => u.spool_id === id).reduce((s, u) => s + u.use_weight!, 0);
    expect([total(1), total(2)]).toEqual([13.5, 6.25]);
    expect((await h.get('/api/v1/spools/2')).body.remaining_weight_g).toBe(993.75);
  }, 60_000);

  test('a use that arrived but whose answer was lost is not sent again', async () => {
    spoolman.loseNextUseAnswer = true;
    const before = spoolman.uses.length;
    await print('Duo3.gcode.3mf', 1.5, 1);
    await until(() => spoolman.uses.length === before + 2, 'both uses arrived', 20_000);
    await until(async () => ((await h.get('/api/v1/health')).body.spoolman.pending_usage === 0 ? true : null), 'the outbox empty');
    await new Promise((r) => setTimeout(r, 1000));
    // The first answer was cut off: the retry saw Spoolman's used_weight had taken it and sent nothing more.
    expect(spoolman.uses.slice(before)).toEqual([
      { spool_id: 1, use_weight: 1.5, use_length: null },
      { spool_id: 2, use_weight: 1, use_length: null },
    ]);
  }, 60_000);

  test('a spool weighed in Spoolman shows at once: the change feed, not the next poll', async () => {
    await h.service.context.filament.spools.spoolman.idle();
    const res = await fetch(`${spoolman.url}/api/v1/spool/3`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ remaining_weight: 42 }) });
    expect(res.status).toBe(200);
    // Polls are a minute apart here: only the feed can bring it this fast.
    await until(async () => ((await h.get('/api/v1/spools/3')).body.remaining_weight_g === 42 ? true : null), 'the weighed spool', 5000);
  }, 30_000);
});
