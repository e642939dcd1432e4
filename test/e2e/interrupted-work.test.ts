/**
 * Interrupted work that the other restart tests do not reach: the moments
 * after a stop that lasted long, or that fell between two writes.
 *
 * A start the printer took but whose acknowledgement was never recorded stays
 * `starting` across a stop. When the service stays down longer than
 * queue_start_timeout_s, the restarted service must still ask the printer
 * before it gives up on the start: the printer is running our print, and a
 * copy sent back to the queue would be printed a second time elsewhere.
 * And when the printer never got that start (killed between storing
 * `starting` and sending it), the start still fails in time and the copy
 * prints once, not never.
 *
 * A printer that took a start and dropped off the network before it could
 * say so is not failed while it cannot answer: the timeout counts again from
 * its first report once it is back.
 *
 * An upload into the library killed between the rename of its complete
 * file and its database row: the file is removed at the next start.
 *
 * A first download of a printer file killed after its complete copy was
 * renamed into place and before the database said so: after the restart
 * the copy is the file's, not an orphan left in the data dir.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { bambu3mf } from '../../service/simulators/seed-files';
import { control, until } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';
import { addPrinters, bambuSim, itemUntil, queueServiceOptions, queueUntilUploading, simState, upload, type SimPrinter } from './queue-helpers';

/** Runs `sql` on the stopped service's database file. */
function patchDb(dir: string, sql: string, ...params: unknown[]): number {
  const db = new Database(path.join(dir, 'printfarm.db'));
  try {
    return db.prepare(sql).run(...params).changes;
  } finally {
    db.close();
  }
}

describe('interrupted work', () => {
  let printers: SimPrinter[] = [];
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
    await Promise.all(printers.map((p) => p.close()));
    printers = [];
  });

  test('a start left unacknowledged across a stop longer than the start timeout is resolved from the printer, not started again', async () => {
    printers = [await bambuSim('x1c-a', 'X1C #01', 'X1C', 1), await bambuSim('x1c-b', 'X1C #02', 'X1C', 1)];
    const options = { ...queueServiceOptions, env: { QUEUE_START_TIMEOUT_S: '30' } };
    h = await startService(options);
    await addPrinters(h, printers);
    const file = await upload(h, 'Knob.gcode.3mf', bambu3mf({ model: 'X1C' }));
    const { body } = await h.post('/api/v1/queue', { file_id: file });
    const started = await itemUntil(h, body.id, (i) => i.dispatches[0]?.state === 'printing', 'printing');
    const printer = started.dispatches[0].printer_id as string;
    await h.stop();

    // As if the service died after the start went out and before the acknowledgement was stored,
    // and stayed down an hour (longer than queue_start_timeout_s): the printer kept printing our copy.
    const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
    expect(patchDb(h.dataDir, "UPDATE queue_dispatches SET state = 'starting', start_sent_at = ? WHERE item_id = ?", hourAgo, body.id)).toBe(1);

    h = await h.restart(options);
    const resolved = await itemUntil(h, body.id, (i) => i.dispatches[0]?.state !== 'starting', 'the start resolved', 15_000);
    expect(resolved.dispatches).toHaveLength(1);
    expect(resolved.dispatches[0]).toMatchObject({ state: 'printing', printer_id: printer });
    // Both printers reported since the restart; neither got a second start.
    await until(async () => (await h!.get('/api/v1/printers')).body.printers.every((p: { connection_status: string }) => p.connection_status === 'connected'), 'printers connected');
    const sims = await Promise.all(printers.map((p) => simState(p)));
    expect(sims.reduce((n, s) => n + s.prints_started, 0)).toBe(1);
    expect((await h.get(`/api/v1/queue/${body.id}`)).body.dispatches).toHaveLength(1);
  }, 30_000);

  test('a start stored but never sent before a long stop fails once the printer reports, and the copy prints once', async () => {
    printers = [await bambuSim('x1c-a', 'X1C #01', 'X1C', 1)];
    const [p] = printers;
    const options = { ...queueServiceOptions, env: { QUEUE_START_TIMEOUT_S: '2' } };
    h = await startService(options);
    await addPrinters(h, printers);
    const body = { id: (await queueUntilUploading(h, p, 'Cap.gcode.3mf')).itemId };
    await h.stop();
    await control(p.control, 'faults', { transfer_bytes_per_sec: 0 });

    // As if killed after `starting` was stored and before the start went out, and down for an hour.
    const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
    expect(patchDb(h.dataDir, "UPDATE queue_dispatches SET state = 'starting', start_sent_at = ? WHERE item_id = ?", hourAgo, body.id)).toBe(1);
    expect((await simState(p)).prints_started).toBe(0);

    h = await h.restart(options);
    const done = await itemUntil(h, body.id, (i) => i.dispatches.some((d: { state: string }) => d.state === 'printing'), 'the copy printing', 12_000);
    expect(done.dispatches[0]).toMatchObject({ state: 'start_failed', error: 'the printer did not acknowledge the start within 2 s' });
    expect(done.dispatches.filter((d: { state: string }) => d.state === 'printing')).toHaveLength(1);
    expect(await simState(p)).toMatchObject({ prints_started: 1, starts_while_busy: 0 });
  }, 30_000);

  test('a printer that goes offline right after taking a start is not failed while unreachable, and prints the copy once', async () => {
    // It takes the start, then needs a simulated second before PREPARE shows (its clock stands while it is offline).
    printers = [await bambuSim('x1c-a', 'X1C #01', 'X1C', 1, { startDelayS: 1 }), await bambuSim('x1c-b', 'X1C #02', 'X1C', 1)];
    const [a, b] = printers;
    h = await startService({ ...queueServiceOptions, env: { QUEUE_START_TIMEOUT_S: '2', QUEUE_PRINTER_CHOICE: 'first_free' } });
    await addPrinters(h, [a]);
    const file = await upload(h, 'Clip.gcode.3mf', bambu3mf({ model: 'X1C' }));
    const { body } = await h.post('/api/v1/queue', { file_id: file });
    await until(async () => (await simState(a)).last_start !== null, 'the start taken by the printer');
    await control(a.control, 'offline');
    await addPrinters(h, [b]);
    await until(async () => (await h!.get('/api/v1/printers/x1c-a')).body.status === 'offline', 'the printer seen offline');
    const sentAt = Date.parse((await h.get(`/api/v1/queue/${body.id}`)).body.dispatches[0].updated_at);
    // Past the timeout while it cannot answer: the start is neither failed nor sent to the other printer.
    await until(async () => Date.now() > sentAt + 3000, 'the timeout passed');
    const waiting = (await h.get(`/api/v1/queue/${body.id}`)).body;
    expect(waiting.dispatches).toHaveLength(1);
    expect(waiting.dispatches[0]).toMatchObject({ printer_id: 'x1c-a', state: 'starting' });

    await control(a.control, 'online');
    const printing = await itemUntil(h, body.id, (i) => i.dispatches[0]?.state === 'printing', 'the start acknowledged once back', 15_000);
    expect(printing.dispatches).toHaveLength(1);
    expect((await simState(a)).prints_started + (await simState(b)).prints_started).toBe(1);
  }, 30_000);

  test('an upload cut by a stop whose file is gone by the restart ends start_failed and lets go of the printer', async () => {
    printers = [await bambuSim('x1c-a', 'X1C #01', 'X1C', 1)];
    const [p] = printers;
    h = await startService(queueServiceOptions);
    await addPrinters(h, printers);
    const { file, itemId } = await queueUntilUploading(h, p, 'Gone.gcode.3mf');
    const body = { id: itemId };
    const copy = path.join(h.dataDir, (await h.get(`/api/v1/files/${file}`)).body.local_path);
    await h.stop();
    await control(p.control, 'faults', { transfer_bytes_per_sec: 0 });
    // Its copy went meanwhile (as a DELETE /files/{id} would take it).
    fs.rmSync(copy);

    h = await h.restart(queueServiceOptions);
    const dropped = await itemUntil(h, body.id, (i) => i.dispatches[0]?.state === 'start_failed' && i.waiting_reason !== null, 'the interrupted upload ended', 10_000);
    expect(dropped.dispatches[0]).toMatchObject({ printer_id: 'x1c-a', error: 'the file is no longer available on the service' });
    // The copy waits in the queue, saying why, and the printer is free for the next item.
    expect(dropped).toMatchObject({ status: 'queued', remaining: 1, waiting_reason: 'the file is no longer available on the service' });
    const next = await upload(h, 'Next.gcode.3mf', bambu3mf({ model: 'X1C' }));
    const second = (await h.post('/api/v1/queue', { file_id: next })).body;
    await itemUntil(h, second.id, (i) => i.dispatches[0]?.state === 'printing', 'the next item printing on it', 15_000);
  }, 30_000);

  test('a library upload cut between the rename of its file and its row leaves no unlisted file at the next start', async () => {
    h = await startService(queueServiceOptions);
    const kept = await upload(h, 'Kept.gcode', Buffer.from('G28\n'));
    const keptPath = path.join(h.dataDir, (await h.get(`/api/v1/files/${kept}`)).body.local_path);
    await h.stop();
    // What the killed upload left: a complete file under files/local/ with an id no row has.
    const orphan = path.join(path.dirname(keptPath), '0123456789abcdef0123-Orphan.gcode');
    fs.writeFileSync(orphan, 'G28\n');

    h = await h.restart(queueServiceOptions);
    await until(async () => !fs.existsSync(orphan), 'the orphan removed');
    expect(fs.readFileSync(keptPath, 'utf8')).toBe('G28\n');
    expect((await h.get(`/api/v1/files/${kept}/content`)).status).toBe(200);
  }, 30_000);

  test('a first download cut between the rename of its complete copy and the database update leaves no orphan copy', async () => {
    printers = [await bambuSim('x1c-a', 'X1C #01', 'X1C', 1)];
    h = await startService(queueServiceOptions);
    await addPrinters(h, printers);
    const listed = await until(async () => {
      const files = (await h!.get('/api/v1/files?printer_id=x1c-a&limit=100')).body.files as { id: string; filename: string }[];
      return files.find((f) => /\.3mf$/i.test(f.filename));
    }, 'printer files listed');
    expect((await h.post(`/api/v1/files/${listed.id}/download`)).status).toBe(202);
    await until(async () => (await h!.get(`/api/v1/files/${listed.id}/download/status`)).body.status === 'completed', 'downloaded');
    const copy = path.join(h.dataDir, (await h.get(`/api/v1/files/${listed.id}`)).body.local_path);
    const bytes = fs.readFileSync(copy);
    await h.stop();

    // The copy is in place, the row still says what it said before the rename of a first download.
    expect(patchDb(h.dataDir, "UPDATE files SET status = 'downloading', local_path = NULL, checksum = NULL, downloaded_at = NULL WHERE id = ?", listed.id)).toBe(1);

    h = await h.restart(queueServiceOptions);
    const detail = await until(async () => {
      const f = (await h!.get(`/api/v1/files/${listed.id}`)).body;
      return f.status !== 'downloading' ? f : null;
    }, 'the interrupted download resolved');
    // Either the complete copy is the file's, or it is gone: never a copy on disk that no row owns.
    if (detail.status === 'downloaded') expect(fs.readFileSync(path.join(h.dataDir, detail.local_path)).equals(bytes)).toBe(true);
    else expect(fs.existsSync(copy)).toBe(false);
  }, 30_000);
});
