/**
 * The dispatcher never sends a start to a busy printer (on some Bambu models
 * a start while printing cancels the running print), and a PrusaLink printer
 * that is not ready at its screen (409) is reported in words and retried once
 * it is ready again, not in a loop. A refusal whose printer still reads the
 * same is tried again once its wait is over, at the first report after it,
 * even one that only moves a temperature.
 */
import { bambu3mf, prusaGcode } from '../../service/simulators/seed-files';
import { control, until } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';
import { addPrinters, bambuSim, itemUntil, prusaSim, queueServiceOptions, simState, upload, type SimPrinter } from './queue-helpers';

describe('queue: busy and not-ready printers', () => {
  let printers: SimPrinter[] = [];
  let h: Harness;
  afterEach(async () => {
    await h?.close();
    await Promise.all(printers.map((p) => p.close()));
    printers = [];
  });

  test('a printing Bambu printer gets no start: prints_started does not move until it is free and its plate clear', async () => {
    printers = [await bambuSim('x1c-a', 'X1C #01')];
    h = await startService(queueServiceOptions);
    await addPrinters(h, printers);
    const [p] = printers;
    // Started at the printer's screen.
    await control(p.control, 'print', { file: (await simState(p)).files.find((f: string) => /\.3mf$/.test(f)) });
    await until(async () => (await h.get('/api/v1/printers/x1c-a')).body.status === 'printing', 'the hand-started print');
    const file = await upload(h, 'Spacer.gcode.3mf', bambu3mf({ model: 'X1C' }));
    const { body } = await h.post('/api/v1/queue', { file_id: file });
    const waiting = await itemUntil(h, body.id, (i) => i.waiting_reason !== null, 'a waiting reason');
    expect(waiting).toMatchObject({ waiting_reason: 'all compatible printers busy', dispatches: [] });
    // Reports keep coming while it prints; none of them leads to a start.
    await until(async () => (await simState(p)).progress > 0, 'progress');
    expect(await simState(p)).toMatchObject({ prints_started: 1, starts_while_busy: 0 });

    await control(p.control, 'finish');
    await itemUntil(h, body.id, (i) => i.waiting_reason === 'plate needs clearing on X1C #01', 'the plate reason');
    expect((await simState(p)).prints_started).toBe(1);
    await h.post('/api/v1/printers/x1c-a/plate-cleared');
    await itemUntil(h, body.id, (i) => i.dispatches[0]?.state === 'printing', 'the queued print');
    expect(await simState(p)).toMatchObject({ prints_started: 2, starts_while_busy: 0 });
  });

  test('a Prusa that answers 409 is reported as not ready at its screen and retried after POST /ready', async () => {
    printers = [await prusaSim('mk4s-a', 'MK4S #01')];
    h = await startService(queueServiceOptions);
    await addPrinters(h, printers);
    const [p] = printers;
    await control(p.control, 'not-ready');
    const file = await upload(h, 'cube_0.2mm_PLA_MK4S.gcode', prusaGcode({ model: 'MK4S' }));
    const { body } = await h.post('/api/v1/queue', { file_id: file, copies: 1 });
    const refused = await itemUntil(h, body.id, (i) => i.dispatches[0]?.state === 'start_failed' && i.waiting_reason !== null, 'the refused start');
    expect(refused).toMatchObject({ status: 'queued', remaining: 1, failed: 1, waiting_reason: 'printer not ready at its screen (MK4S #01)' });
    expect(refused.dispatches[0]).toMatchObject({ printer_id: 'mk4s-a', state: 'start_failed', error: 'printer not ready at its screen' });
    expect(await simState(p)).toMatchObject({ prints_started: 0, starts_refused: 1 });

    await control(p.control, 'ready');
    const started = await itemUntil(h, body.id, (i) => i.dispatches.some((d: { state: string }) => d.state === 'printing'), 'the retried start');
    expect(started.dispatches.map((d: { state: string }) => d.state)).toEqual(['start_failed', 'printing']);
    expect(started.dispatches[1]).toMatchObject({ attempt: 2, job_id: expect.any(Number) });
    const sim = await simState(p);
    expect(sim).toMatchObject({ prints_started: 1, starts_refused: 1, last_start: { source: 'upload', file: expect.stringMatching(/cube_0\.2mm_PLA_MK4S\.gcode$/) } });

    await control(p.control, 'finish');
    const done = await itemUntil(h, body.id, (i) => i.status === 'completed', 'completed');
    expect(done).toMatchObject({ completed: 1, failed: 1 });
    expect((await h.get('/api/v1/printers/mk4s-a')).body.plate_state).toBe('needs_clearing');
  });

  test('a refusal is tried again when its wait ends, at the next report even if only a temperature moved', async () => {
    // Speed 1: the printer cools for a minute after its print, so every report of that minute moves a temperature only.
    printers = [await prusaSim('mk4s-b', 'MK4S #02', 'MK4S', 1)];
    h = await startService({ ...queueServiceOptions, notReadyRetryMs: 2000 });
    await addPrinters(h, printers);
    const [p] = printers;
    await control(p.control, 'print', { file: (await simState(p)).files.find((f: string) => /\.gcode$/.test(f)) });
    await until(async () => (await h.get('/api/v1/printers/mk4s-b')).body.temperatures?.nozzle > 60, 'a warm nozzle');
    await control(p.control, 'finish');
    await until(async () => (await h.get('/api/v1/printers/mk4s-b')).body.plate_state === 'needs_clearing', 'the finished print');
    expect((await h.post('/api/v1/printers/mk4s-b/plate-cleared')).status).toBe(200);
    // Someone opened a menu: PrusaLink still says FINISHED, yet starts get 409.
    await control(p.control, 'not-ready');
    const file = await upload(h, 'cube_0.2mm_PLA_MK4S.gcode', prusaGcode({ model: 'MK4S' }));
    const { body } = await h.post('/api/v1/queue', { file_id: file, copies: 1 });
    await itemUntil(h, body.id, (i) => i.dispatches[0]?.state === 'start_failed' && i.waiting_reason !== null, 'the refused start');

    // Nothing but time and the cooling nozzle change (the safety pass is 30 s away): the queue asks again.
    const again = await itemUntil(h, body.id, (i) => i.dispatches[1]?.state === 'start_failed' && i.waiting_reason !== null, 'the second try', 15_000);
    // Not before the wait was over: the refusal was written, then the wait began.
    expect(Date.parse(again.dispatches[1].created_at) - Date.parse(again.dispatches[0].updated_at)).toBeGreaterThanOrEqual(2000);
    expect(again.dispatches.map((d: { attempt: number }) => d.attempt)).toEqual([1, 2]);
    expect(again).toMatchObject({ status: 'queued', remaining: 1, failed: 2, waiting_reason: 'printer not ready at its screen (MK4S #02)' });
    const sim = await simState(p);
    expect(sim).toMatchObject({ status: 'FINISHED', prints_started: 1, starts_refused: 2 });
  });
});
