/**
 * A copy that waits while its printer's link is renewed (a connection test, a reconnect after an unacknowledged
 * start). The dispatcher runs a pass only when what a printer's reports show changes (seen-printers.ts); a new
 * Bambu link shows nothing until its first full report, so a pass in that gap finds the printer offline. The
 * state that then comes back is the one reported before the new link: the copy must start all the same, not
 * wait for the next safety pass (30 s).
 */
import { bambu3mf } from '../../service/simulators/seed-files';
import { control, until } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';
import { addPrinters, bambuSim, itemUntil, queueServiceOptions, simState, upload, type SimPrinter } from './queue-helpers';

/** How late the new link's full report comes: long enough for the copy's pass to fall in the gap. */
const LATE_MS = 3000;

let printers: SimPrinter[] = [];
let h: Harness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
  await Promise.all(printers.map((p) => p.close()));
  printers = [];
});

test('a copy queued while the printer\'s new link waits for its first full report starts once that report shows the printer as free as before', async () => {
  printers = [await bambuSim('x1c-a', 'X1C #01', 'X1C', 20)];
  const [p] = printers;
  h = await startService(queueServiceOptions);
  await addPrinters(h, printers);
  await until(async () => (await h!.get('/api/v1/printers/x1c-a')).body.status === 'online', 'the printer idle');

  await control(p.control, 'faults', { pushall_delay_ms: LATE_MS });
  expect((await h.post('/api/v1/printers/x1c-a/test-connection')).status).toBe(200);
  const file = await upload(h, 'Cap.gcode.3mf', bambu3mf({ model: 'X1C' }));
  const { body } = await h.post('/api/v1/queue', { file_id: file });
  // The pass of the new copy: the new link has shown nothing yet.
  await itemUntil(h, body.id, (i) => i.waiting_reason === 'all compatible printers offline', 'the copy waiting for the printer', LATE_MS);

  // The late full report shows the printer idle, as before the new link: the copy starts (well before a safety pass).
  const started = await itemUntil(h, body.id, (i) => i.dispatches.some((d: { state: string }) => d.state === 'printing'), 'the copy printing', 15_000);
  expect(started.dispatches).toHaveLength(1);
  expect(await simState(p)).toMatchObject({ prints_started: 1, starts_while_busy: 0 });
}, 40_000);
