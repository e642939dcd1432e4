/**
 * Three copies of one file on two compatible, idle Bambu printers (real MQTT
 * over TLS and implicit FTPS): exactly three prints start, never two on one
 * printer at once, each only on a clear plate; the item ends completed with a
 * job linked to each copy.
 */
import { bambu3mf } from '../../service/simulators/seed-files';
import { control, until } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';
import { connectWs } from '../helpers/ws';
import { addPrinters, bambuSim, item, itemUntil, queueServiceOptions, simState, upload, type SimPrinter } from './queue-helpers';

describe('queue: copies over a Bambu farm', () => {
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

  test('3 copies on 2 printers: 3 starts, one per printer at a time, each after its plate was cleared', async () => {
    const ws = await connectWs(h.base);
    const file = await upload(h, 'Bracket.gcode.3mf', bambu3mf({ model: 'X1C' }));
    const created = await h.post('/api/v1/queue', { file_id: file, copies: 3 });
    expect(created.status).toBe(201);
    const id = created.body.id as string;

    // Both printers take a copy; the third waits for a free printer.
    const first = await itemUntil(
      h,
      id,
      (i) => i.dispatches.filter((d: { state: string }) => d.state === 'printing').length === 2 && i.waiting_reason !== null,
      'two copies printing',
    );
    // Still queued: a copy is left to start.
    expect(first).toMatchObject({ status: 'queued', remaining: 1, printing: 2, completed: 0, waiting_reason: 'all compatible printers busy' });
    expect(new Set(first.dispatches.map((d: { printer_id: string }) => d.printer_id))).toEqual(new Set(['x1c-a', 'x1c-b']));
    for (const p of printers) {
      const s = await simState(p);
      expect(s.prints_started).toBe(1);
      expect(s.starts_while_busy).toBe(0);
      expect(s.last_start).toMatchObject({ source: 'mqtt', file: expect.stringMatching(/Bracket\.gcode\.3mf$/), plate: 1, ams_mapping: [0], use_ams: true, ignored_fields: [] });
      expect(Number(s.last_start.task_id)).toBeLessThan(2 ** 31 - 1);
      expect(s.files).toContain('/Bracket.gcode.3mf'); // uploaded to the card root
    }
    expect(Number((await simState(printers[0])).last_start.task_id)).not.toBe(Number((await simState(printers[1])).last_start.task_id));

    // The first print ends: its plate needs clearing, so nothing starts there until someone clears it.
    await control(printers[0].control, 'finish');
    await until(async () => (await h.get('/api/v1/printers/x1c-a')).body.plate_state === 'needs_clearing', 'plate needs clearing');
    await ws.next((f) => f.type === 'printer_status' && f.data.printer_id === 'x1c-a' && f.data.plate_state === 'needs_clearing');
    // The reason is the next pass's (passes coalesce: the one that settles the copy may come before the plate's).
    const waiting = await itemUntil(h, id, (i) => i.completed === 1 && i.waiting_reason === 'plate needs clearing on X1C #01', 'the third copy waiting');
    expect(waiting).toMatchObject({ status: 'queued', remaining: 1, printing: 1, waiting_reason: 'plate needs clearing on X1C #01' });
    expect((await simState(printers[0])).prints_started).toBe(1);

    expect((await h.post('/api/v1/printers/x1c-a/plate-cleared')).status).toBe(200);
    await itemUntil(h, id, (i) => i.dispatches.filter((d: { state: string }) => d.state === 'printing').length === 2, 'the third copy printing');
    expect((await simState(printers[0])).prints_started).toBe(2);
    expect((await simState(printers[1])).prints_started).toBe(1);

    await control(printers[0].control, 'finish');
    await control(printers[1].control, 'finish');
    const done = await itemUntil(h, id, (i) => i.status === 'completed', 'completed');
    expect(done).toMatchObject({ copies: 3, remaining: 0, printing: 0, completed: 3, failed: 0, waiting_reason: null });
    expect(done.dispatches.map((d: { state: string }) => d.state)).toEqual(['completed', 'completed', 'completed']);
    // One job per copy, each the dispatch's own (the tracker made no second one).
    const jobIds = done.dispatches.map((d: { job_id: number }) => d.job_id);
    expect(new Set(jobIds).size).toBe(3);
    for (const jobId of jobIds) expect((await h.get(`/api/v1/jobs/${jobId}`)).body).toMatchObject({ status: 'completed', queue_item_id: done.id });
    expect((await h.get('/api/v1/jobs')).body.jobs).toHaveLength(3);
    // The jobs of one queue item, by its id.
    const linked = (await h.get(`/api/v1/jobs?queue_item_id=${done.id}`)).body.jobs as { id: number }[];
    expect(linked.map((j) => j.id).sort()).toEqual([...jobIds].sort());
    expect((await h.get('/api/v1/jobs?queue_item_id=nope')).body.jobs).toEqual([]);
    expect((await simState(printers[0])).starts_while_busy + (await simState(printers[1])).starts_while_busy).toBe(0);
    // The printed uploads are gone from the cards (no "ghost print" at the next power-on).
    for (const p of printers) await until(async () => !(await simState(p)).files.includes('/Bracket.gcode.3mf'), 'the upload removed');
    expect(ws.frames.some((f) => f.type === 'queue_update' && f.data.id === id && f.data.status === 'completed')).toBe(true);
    expect((await item(h, id)).status).toBe('completed');
    await ws.close();
  }, 90_000);
});
