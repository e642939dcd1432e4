/**
 * The queue's nozzle check holds for a Klipper printer as for the others: the nozzle diameter comes from
 * Klipper's configuration (configfile `[extruder] nozzle_diameter`, over the simulated Moonraker's JSON-RPC), and
 * a G-code sliced for the printer's model but another nozzle waits with the reason instead of printing.
 */
import { klipperGcode } from '../../service/simulators/seed-files';
import { startService, type Harness } from '../helpers/service';
import { addPrinters, itemUntil, klipperSim, queueServiceOptions, simState, upload, type SimPrinter } from './queue-helpers';

describe('a Klipper printer with another nozzle', () => {
  let printer: SimPrinter;
  let h: Harness;
  afterEach(async () => {
    await h?.close();
    await printer?.close();
  });

  test('a G-code for its model sliced for a 0.4 mm nozzle waits on a 0.6 mm Voron, with the reason', async () => {
    printer = await klipperSim('voron-06', 'Voron 0.6', 'Voron 2.4 350', 20, { nozzleDiameter: 0.6 });
    h = await startService(queueServiceOptions);
    await addPrinters(h, [printer]);
    expect((await h.get(`/api/v1/printers/${printer.id}`)).body.nozzle_diameter).toBe(0.6);
    const file = await upload(h, 'Bracket.gcode', klipperGcode('Voron 2.4 350'));
    const item = (await h.post('/api/v1/queue', { file_id: file })).body;
    const waiting = await itemUntil(h, item.id, (i) => i.waiting_reason !== null, 'a waiting reason');
    expect(waiting.waiting_reason).toBe('Voron 0.6 has a 0.6 mm nozzle, the file needs 0.4 mm');
    expect(waiting.dispatches).toEqual([]);
    expect((await simState(printer)).prints_started).toBe(0);
  }, 60_000);
});
