/**
 * `printfarm serve` SIGKILLed while it uploads a queued G-code to a Klipper
 * printer (Moonraker's multipart upload, throttled by the simulator): the cut
 * upload neither stores nor starts anything on the printer; after the restart
 * the unacknowledged start times out, the copy goes back, and it starts
 * exactly once. Needs `npm run build` (the child runs dist/).
 */
import { klipperGcode } from '../../service/simulators/seed-files';
import { killChildren, spawnService, type ChildService } from '../helpers/child-service';
import { control, until } from '../helpers/farm';
import { tempDir } from '../helpers/service';
import { klipperSim, simState, upload, type SimPrinter } from './queue-helpers';

const ENV = { QUEUE_START_TIMEOUT_S: '4' };

const itemOf = async (s: ChildService, id: string) => (await s.get(`/api/v1/queue/${id}`)).body as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('queue: a Klipper upload cut by a killed service', () => {
  let printer: SimPrinter | null = null;
  afterAll(async () => {
    await killChildren();
    await printer?.close();
  });

  test('killed mid-upload: nothing starts then, the copy starts exactly once after the restart', async () => {
    printer = await klipperSim('voron-r', 'Voron R', 'Voron 2.4 350', 5);
    const dir = tempDir();
    let s = await spawnService(dir, ENV);
    expect((await s.post('/api/v1/printers', printer.body)).status).toBe(201);
    await until(async () => (await s.get(`/api/v1/printers/${printer!.id}`)).body.connection_status === 'connected', 'connected', 20_000);

    // The ~9 kB G-code crawls to Moonraker at 1 kB/s.
    await control(printer.control, 'faults', { transfer_bytes_per_sec: 1000 });
    const file = await upload(s, 'Voron Clip.gcode', klipperGcode('Voron 2.4 350'));
    const item = (await s.post('/api/v1/queue', { file_id: file })).body;
    await until(async () => (await itemOf(s, item.id)).dispatches[0]?.state === 'starting', 'the upload under way', 20_000);
    await s.kill('SIGKILL');
    await control(printer.control, 'faults', { transfer_bytes_per_sec: 0 });
    const cut = await simState(printer);
    expect(cut).toMatchObject({ prints_started: 0, status: 'standby' });
    expect(cut.files).not.toContain('Voron_Clip.gcode');

    s = await spawnService(dir, ENV);
    const printing = await until(async () => {
      const i = await itemOf(s, item.id);
      return i.dispatches.some((d: { state: string }) => d.state === 'printing') ? i : null;
    }, 'the copy printing after the restart', 40_000);
    expect(printing.dispatches.filter((d: { state: string }) => d.state === 'printing')).toHaveLength(1);
    const st = await simState(printer);
    expect(st).toMatchObject({ prints_started: 1, status: 'printing', file: 'Voron_Clip.gcode', stats: { uploads: 1 } });
    await s.kill('SIGTERM');
  }, 120_000);
});
