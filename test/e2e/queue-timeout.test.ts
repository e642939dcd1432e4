/**
 * A start the printer never acknowledges: the dispatch becomes start_failed
 * after queue_start_timeout_s and the copy goes back to the queue, where a new
 * start (with a fresh task id) succeeds. The fault comes from the simulator's
 * real quirk: a project_file whose ids are not decimal numbers below 2^31-1 is
 * answered "success" but the printer stays IDLE (QUEUE.md). The test plants
 * such an id in a dispatch interrupted while uploading, which the restarted
 * service retries as it is.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import { control } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';
import { addPrinters, bambuSim, itemUntil, queueServiceOptions, queueUntilUploading, simState, type SimPrinter } from './queue-helpers';

describe('queue: unacknowledged starts', () => {
  let printers: SimPrinter[] = [];
  let h: Harness;
  afterAll(async () => {
    await h?.close();
    await Promise.all(printers.map((p) => p.close()));
  });

  test('no acknowledgement within queue_start_timeout_s: start_failed, the copy goes back and starts again', async () => {
    printers = [await bambuSim('x1c-a', 'X1C #01')];
    const [p] = printers;
    h = await startService({ ...queueServiceOptions, env: { QUEUE_START_TIMEOUT_S: '2' } });
    await addPrinters(h, printers);
    const body = { id: (await queueUntilUploading(h, p, 'Cap.gcode.3mf')).itemId };
    await h.stop();

    // The interrupted dispatch keeps its state; its task id becomes one the printer accepts but never starts.
    const db = new Database(path.join(h.dataDir, 'printfarm.db'));
    try {
      const rows = db.prepare("UPDATE queue_dispatches SET task_id = '99999999999' WHERE item_id = ? AND state = 'uploading'").run(body.id);
      expect(rows.changes).toBe(1);
    } finally {
      db.close();
    }
    await control(p.control, 'faults', { transfer_bytes_per_sec: 0 });
    h = await h.restart({ ...queueServiceOptions, env: { QUEUE_START_TIMEOUT_S: '2' } });

    const retried = await itemUntil(h, body.id, (i) => i.dispatches.some((d: { state: string }) => d.state === 'printing'), 'the second start printing', 30_000);
    expect(retried.dispatches[0]).toMatchObject({ state: 'start_failed', attempt: 1, error: 'the printer did not acknowledge the start within 2 s' });
    expect(retried.dispatches[retried.dispatches.length - 1]).toMatchObject({ state: 'printing' });
    expect(retried).toMatchObject({ failed: retried.dispatches.length - 1, remaining: 0 });
    const sim = await simState(p);
    expect(Number(sim.last_start.task_id)).toBeLessThan(2 ** 31 - 1);
    expect(sim.starts_while_busy).toBe(0);
  }, 60_000);
});
