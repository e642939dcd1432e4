/**
 * The waiting reason a pass gives a copy left over after it claimed every compatible printer for the item's
 * other copies: those printers are busy now, not missing. (The pass used to say "no compatible printer",
 * or name the model as absent from the farm, until the next pass corrected it.)
 */
import { bambu3mf } from '../../service/simulators/seed-files';
import { control } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';
import { addPrinters, bambuSim, itemUntil, queueServiceOptions, upload, type SimPrinter } from './queue-helpers';

describe('queue: the reason of the copies a pass could not place', () => {
  let printers: SimPrinter[] = [];
  let h: Harness;
  beforeAll(async () => {
    printers = [await bambuSim('x1c-a', 'X1C #01'), await bambuSim('x1c-b', 'X1C #02'), await bambuSim('a1-a', 'A1 #01', 'A1')];
    h = await startService(queueServiceOptions);
    await addPrinters(h, printers);
    // Slow uploads: the claimed printers stay idle (nothing reported changes) while the claims stand.
    for (const p of printers) await control(p.control, 'faults', { transfer_bytes_per_sec: 20_000 });
  });
  afterAll(async () => {
    await h?.close();
    await Promise.all(printers.map((p) => p.close()));
  });

  test('three X1C copies, two X1C printers and an A1: the third copy waits for a busy printer', async () => {
    const file = await upload(h, 'Bracket.gcode.3mf', bambu3mf({ model: 'X1C' }));
    const { body } = await h.post('/api/v1/queue', { file_id: file, copies: 3 });
    const claimed = await itemUntil(h, body.id, (i) => i.dispatches.length === 2 && i.waiting_reason !== null, 'two copies claimed');
    expect(new Set(claimed.dispatches.map((d: { printer_id: string }) => d.printer_id))).toEqual(new Set(['x1c-a', 'x1c-b']));
    expect(claimed).toMatchObject({ status: 'queued', remaining: 1, waiting_reason: 'all compatible printers busy' });
  });
});
