/**
 * The PrusaLink simulator's `transfer_bytes_per_sec` fault slows uploads too
 * (issue 23), so an upload to a Prusa can be cut: the service is stopped while
 * a queued copy crawls to an MK4S; the printer keeps no partial file and
 * starts nothing; after the restart the cut start is resolved from the
 * printer's state (no new job: failed), the copy is sent again and prints
 * exactly once.
 */
import { prusaGcode } from '../../service/simulators/seed-files';
import { control, until } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';
import { addPrinters, itemUntil, prusaSim, queueServiceOptions, simState, upload, type SimPrinter } from './queue-helpers';

// The upload's deadline is the command timeout plus the file at 50 kB/s: a long command timeout lets it crawl.
const options = { ...queueServiceOptions, fleet: { ...queueServiceOptions.fleet, commandTimeoutMs: 60_000 } };

describe('queue: a Prusa upload cut by a shutdown', () => {
  let printers: SimPrinter[] = [];
  let h: Harness;
  afterAll(async () => {
    await h?.close();
    await Promise.all(printers.map((p) => p.close()));
  });

  test('throttled to 2 kB/s, stopped mid-upload: no partial file, no start; sent again after the restart, printed once', async () => {
    printers = [await prusaSim('mk4s-a', 'MK4S #01', 'MK4S')];
    const [p] = printers;
    h = await startService(options);
    await addPrinters(h, printers);
    await control(p.control, 'faults', { transfer_bytes_per_sec: 2000 });
    // A PrusaLink start is acknowledged within queue_start_timeout_s of the request that uploads it: 8 s here, less
    // than the upload takes, so that the start cut by the stop is resolved soon after the restart.
    expect((await h.put('/api/v1/settings', { queue_start_timeout_s: 8 })).status).toBe(200);
    const data = prusaGcode({ model: 'MK4S' });
    expect(data.length).toBeGreaterThan(20_000); // 10 s and more at 2 kB/s
    const file = await upload(h, 'Slow_MK4S.gcode', data);
    const { body } = await h.post('/api/v1/queue', { file_id: file });
    // PrusaLink uploads and starts in one request: the dispatch is "starting" while the bytes crawl.
    await itemUntil(h, body.id, (i) => i.dispatches[0]?.state === 'starting', 'sending');
    // Bytes are arriving, slowly: the printer has neither the file nor a print yet.
    expect((await simState(p)).files).not.toContain('/Slow_MK4S.gcode');

    await h.stop();
    const cut = await simState(p);
    expect(cut.prints_started).toBe(0);
    expect(cut.files.some((f: string) => f.includes('Slow_MK4S'))).toBe(false);

    await control(p.control, 'faults', { transfer_bytes_per_sec: 0 });
    h = await h.restart(options);
    // The cut start is resolved from the printer's state: no new job there, so it failed (at the start timeout)
    // and the copy goes out again.
    const done = await until(async () => {
      const i = (await h.get(`/api/v1/queue/${body.id}`)).body;
      return i.dispatches.some((d: { state: string }) => d.state === 'printing') ? i : null;
    }, 'the retried upload printing', 30_000);
    const states = done.dispatches.map((d: { state: string }) => d.state);
    expect(states.at(-1)).toBe('printing');
    expect(states.slice(0, -1).every((s: string) => s === 'start_failed')).toBe(true);
    expect(await simState(p)).toMatchObject({ prints_started: 1, last_start: { source: 'upload', file: expect.stringMatching(/Slow_MK4S\.gcode$/) } });
  }, 60_000);
});
