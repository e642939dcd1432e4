/**
 * After a queued print the dispatcher removes the file it uploaded from the
 * printer. A file that is already gone (deleted on the printer, or a demo
 * printer that restarted empty) is what the clean-up wanted: no warning.
 */
import { BambuSimulator } from '../../service/simulators/bambu';
import { bambu3mf } from '../../service/simulators/seed-files';
import { control, until } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';
import { addPrinters, itemUntil, queueServiceOptions, upload } from './queue-helpers';

describe('queue: the printed file is cleaned up', () => {
  let h: Harness;
  let sim: BambuSimulator;
  afterAll(async () => {
    await h?.close();
    await sim?.close();
  });

  test('removed after the print; one already gone leaves no warning', async () => {
    h = await startService(queueServiceOptions);
    sim = await BambuSimulator.start({ id: 'clean-x1c', name: 'X1C clean', model: 'X1C', speed: 20 });
    const printer = { id: 'clean-x1c', name: 'X1C clean', control: sim.controlUrl, body: sim.printerConfig() as unknown as Record<string, unknown>, close: () => sim.close() };
    await addPrinters(h, [printer]);
    const onPrinter = () => sim.storage.list('/').filter((f) => !f.dir).map((f) => f.name);
    const seeded = onPrinter();

    /** Queues one copy, waits until it prints; the name of the file it put on the printer. */
    const printOne = async (name: string): Promise<string> => {
      const fileId = await upload(h, name, bambu3mf({ model: 'X1C' }));
      const res = await h.post('/api/v1/queue', { file_id: fileId, copies: 1 });
      expect(res.status).toBe(201);
      await itemUntil(h, res.body.id, (i) => i.dispatches.some((d: { state: string }) => d.state === 'printing'), `${name} printing`);
      return until(() => onPrinter().find((f) => !seeded.includes(f)), `${name} on the printer`);
    };
    const warned = () => h.logs.filter((l) => /printed queue file/.test(String(l.msg)));

    // The usual case: the print ends and its file goes.
    const first = await printOne('Clean_A.gcode.3mf');
    await control(sim.controlUrl, 'finish');
    await until(() => !onPrinter().includes(first), 'the first file removed', 15_000);
    await h.post('/api/v1/printers/clean-x1c/plate-cleared');

    // Gone before the print ends: nothing to remove, nothing to warn about.
    const second = await printOne('Clean_B.gcode.3mf');
    expect(sim.storage.delete(`/${second}`)).toBe(true);
    await control(sim.controlUrl, 'finish');
    // The item is done once the print has ended; the clean-up follows at once.
    await until(async () => (await h.get('/api/v1/printers/clean-x1c')).body.status !== 'printing', 'the second print ended', 15_000);
    await new Promise((r) => setTimeout(r, 1500));
    expect(warned()).toEqual([]);
  }, 60_000);
});
