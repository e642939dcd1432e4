/**
 * A print that fails on the printer gives its copy back to the queue (counted
 * in `failed`); after queue_max_attempts failures in a row the item fails.
 * The printer here clears its own plate (plate_auto_clear), so each retry
 * starts as soon as the failed print is over.
 */
import { bambu3mf } from '../../service/simulators/seed-files';
import { control, until } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';
import { addPrinters, bambuSim, itemUntil, queueServiceOptions, simState, upload, type SimPrinter } from './queue-helpers';

describe('queue: failed prints', () => {
  let printers: SimPrinter[] = [];
  let h: Harness;
  beforeAll(async () => {
    printers = [await bambuSim('x1c-a', 'X1C #01')];
    h = await startService(queueServiceOptions);
    await addPrinters(h, printers);
    expect((await h.put('/api/v1/printers/x1c-a', { plate_auto_clear: true })).status).toBe(200);
  });
  afterAll(async () => {
    await h?.close();
    await Promise.all(printers.map((p) => p.close()));
  });

  const printingAttempt = (n: number) => (i: Record<string, any>) => i.dispatches.length === n && i.dispatches[n - 1].state === 'printing'; // eslint-disable-line @typescript-eslint/no-explicit-any

  test('a failed print returns its copy; three failures in a row fail the item', async () => {
    const [p] = printers;
    const file = await upload(h, 'Gear.gcode.3mf', bambu3mf({ model: 'X1C' }));
    const { body } = await h.post('/api/v1/queue', { file_id: file, copies: 1 });

    await itemUntil(h, body.id, printingAttempt(1), 'the first attempt printing');
    await control(p.control, 'fail');
    const retried = await itemUntil(h, body.id, printingAttempt(2), 'the second attempt printing');
    expect(retried).toMatchObject({ status: 'printing', failed: 1, remaining: 0, printing: 1 });
    expect(retried.dispatches[0]).toMatchObject({ state: 'failed', attempt: 1, error: expect.stringMatching(/Slot 1 filament has run out/i) });
    // An auto-clearing printer's plate never needs clearing.
    expect((await h.get('/api/v1/printers/x1c-a')).body.plate_state).toBe('clear');

    await control(p.control, 'fail');
    await itemUntil(h, body.id, printingAttempt(3), 'the third attempt printing');
    await control(p.control, 'fail');
    const failed = await itemUntil(h, body.id, (i) => i.status === 'failed', 'the item failed');
    expect(failed).toMatchObject({ completed: 0, failed: 3, remaining: 0, printing: 0, waiting_reason: null });
    expect(failed.dispatches.map((d: { state: string; attempt: number }) => [d.state, d.attempt])).toEqual([
      ['failed', 1],
      ['failed', 2],
      ['failed', 3],
    ]);
    // Nothing more starts for a failed item.
    await until(async () => (await h.get('/api/v1/printers/x1c-a')).body.status !== 'printing', 'the printer idle');
    expect((await simState(p)).prints_started).toBe(3);
    const jobs = (await h.get('/api/v1/jobs?status=failed')).body.jobs;
    expect(jobs.map((j: { id: number }) => j.id).sort()).toEqual(failed.dispatches.map((d: { job_id: number }) => d.job_id).sort());
  });

  test('a start the firmware rejects fails at once with its message; the copy goes back and starts later', async () => {
    const [p] = printers;
    // The printer shows the last failed print (FAILED): a state a start may go to.
    await until(async () => (await simState(p)).status === 'failed', 'the printer free');
    await control(p.control, 'faults', { reject_commands: true });
    const before = (await simState(p)).prints_started;
    const file = await upload(h, 'Lever.gcode.3mf', bambu3mf({ model: 'X1C' }));
    const { body } = await h.post('/api/v1/queue', { file_id: file });
    const rejected = await itemUntil(h, body.id, (i) => i.dispatches[0]?.state === 'start_failed', 'the rejected start');
    expect(rejected.dispatches[0]).toMatchObject({ attempt: 1, error: 'command rejected by the printer (simulated fault)' });
    expect(rejected).toMatchObject({ failed: 1 });
    await control(p.control, 'faults', { reject_commands: false });
    const started = await itemUntil(h, body.id, (i) => i.dispatches.some((d: { state: string }) => d.state === 'printing'), 'the retried start');
    expect(started.dispatches.map((d: { state: string }) => d.state)).toEqual([...started.dispatches.slice(0, -1).map(() => 'start_failed'), 'printing']);
    expect((await simState(p)).prints_started).toBe(before + 1);
  });
});
