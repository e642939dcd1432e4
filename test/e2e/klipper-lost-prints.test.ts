/**
 * A Klipper print lost to a Klipper shutdown, a Klipper crash or a host power loss ends its job failed, not
 * cancelled: Moonraker's job history (server.history.list on the next link, notify_history_changed while
 * watched) says how the print ended when print_stats, back in standby, no longer does. A user's cancel stays
 * cancelled; a Moonraker without the history component keeps the old rule. Over the simulated Moonraker's real
 * JSON-RPC WebSocket, through the service.
 */
import type { Notification } from '../../service/notify/kinds';
import { KlipperSimulator, type KlipperSimulatorOptions } from '../../service/simulators/klipper';
import { klipperGcode } from '../../service/simulators/seed-files';
import { control, until } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';
import { addPrinters, itemUntil, queueServiceOptions, upload, type SimPrinter } from './queue-helpers';

const GCODE = 'cube_0.2mm_PLA_12m.gcode';

describe('a Klipper print lost to a crash or a power loss', () => {
  let sim: KlipperSimulator;
  let printer: SimPrinter;
  let h: Harness;
  const start = async (options: KlipperSimulatorOptions = {}) => {
    sim = await KlipperSimulator.start({ id: 'voron-lost', name: 'Voron Lost', speed: 20, apiKey: 'moonraker-key', ...options });
    printer = { id: 'voron-lost', name: 'Voron Lost', control: sim.controlUrl, body: sim.printerConfig() as unknown as Record<string, unknown>, close: () => sim.close() };
    h = await startService(queueServiceOptions);
    await addPrinters(h, [printer]);
  };
  afterEach(async () => {
    await h?.close();
    await sim?.close();
  });

  const jobs = async () => (await h.get(`/api/v1/jobs?printer_id=${printer.id}`)).body.jobs as Record<string, any>[]; // eslint-disable-line @typescript-eslint/no-explicit-any
  const connected = async (yes: boolean) => until(async () => ((await h.get(`/api/v1/printers/${printer.id}`)).body.connection_status === 'connected') === yes, yes ? 'connected' : 'not connected', 15_000);
  const printing = async () => {
    await control(printer.control, 'print', { file: GCODE });
    return until(async () => (await jobs()).find((j) => j.status === 'printing'), 'job printing', 10_000);
  };
  const ended = async () => {
    const job = await until(async () => (await jobs()).find((j) => j.status !== 'printing' && j.status !== 'paused'), 'job ended', 15_000);
    await h.service.context.tracker.idle();
    expect(await jobs()).toHaveLength(1);
    return job;
  };

  test('a Klipper shutdown mid-print, fixed with FIRMWARE_RESTART while the service was away: failed, with the reason', async () => {
    await start();
    await printing();
    await control(printer.control, 'offline');
    await connected(false);
    await control(printer.control, 'shutdown', { message: "MCU 'mcu' shutdown: Timer too close" });
    await control(printer.control, 'restart');
    // The service is back after the restart: print_stats is in standby, only the history knows.
    await control(printer.control, 'online');
    const job = await ended();
    expect(job).toMatchObject({ status: 'failed' });
    expect((await h.get(`/api/v1/jobs/${job.id}`)).body.customer_info.end_reason).toMatch(/Klipper shut down/);
  }, 60_000);

  test('Klipper crashes (Klippy disconnects) mid-print and restarts while watched: failed', async () => {
    await start();
    await printing();
    await control(printer.control, 'klippy-disconnect');
    await connected(false);
    await control(printer.control, 'restart');
    const job = await ended();
    expect(job).toMatchObject({ status: 'failed' });
    expect((await h.get(`/api/v1/jobs/${job.id}`)).body.customer_info.end_reason).toMatch(/Klipper stopped during the print/);
  }, 60_000);

  test('the host loses power mid-print and comes back (the history says interrupted): failed', async () => {
    await start();
    const job = await printing();
    await control(printer.control, 'power-loss');
    await connected(false);
    await control(printer.control, 'online');
    const done = await ended();
    expect(done).toMatchObject({ id: job.id, status: 'failed' });
    expect((await h.get(`/api/v1/jobs/${job.id}`)).body.customer_info.end_reason).toMatch(/interrupted/);
    // The reason is the tracker's note of the run: new customer data keeps it, as it keeps auto_created.
    expect((await h.put(`/api/v1/jobs/${job.id}`, { customer_info: { order_id: 'A-17' } })).status).toBe(200);
    expect((await h.get(`/api/v1/jobs/${job.id}`)).body.customer_info).toMatchObject({ order_id: 'A-17', auto_created: true, end_reason: expect.stringMatching(/interrupted/) });
    expect(sim.history.list({ limit: 1 }).jobs[0]).toMatchObject({ filename: GCODE, status: 'interrupted' });
  }, 60_000);

  test('the print_failed notification of a print lost to a power loss says why (the attention is empty again by then)', async () => {
    await start();
    const told: Notification[] = [];
    const off = h.service.context.bus.on('notification', (n) => void told.push(n));
    try {
      const job = await printing();
      await control(printer.control, 'power-loss');
      await connected(false);
      await control(printer.control, 'online');
      await ended();
      const failed = await until(async () => told.find((n) => n.kind === 'print_failed'), 'print_failed notification', 10_000);
      expect(failed).toMatchObject({ printer_name: 'Voron Lost', data: { job_id: job.id, end_reason: expect.stringMatching(/interrupted/) } });
      expect(failed.message).toMatch(/failed on Voron Lost: The print was interrupted/);
      expect(failed.texts.de.message).toMatch(/interrupted/);
    } finally {
      off();
    }
  }, 60_000);

  test("a queued copy lost to a power loss: its dispatch fails with the reason, as its job does (one rule)", async () => {
    await start();
    const file = await upload(h, 'Voron Clip.gcode', klipperGcode('Voron 2.4 350'));
    const item = (await h.post('/api/v1/queue', { file_id: file })).body;
    await itemUntil(h, item.id, (i) => i.dispatches.some((x: { state: string }) => x.state === 'printing'), 'the copy printing');
    await until(async () => (await jobs()).find((j) => j.status === 'printing' && j.queue_item_id === item.id), 'its job printing', 10_000);
    await control(printer.control, 'power-loss');
    await connected(false);
    await control(printer.control, 'online');
    const lost = await itemUntil(h, item.id, (i) => i.dispatches.some((x: { state: string }) => x.state !== 'printing'), 'the copy ended');
    expect(lost.dispatches[0]).toMatchObject({ state: 'failed', error: expect.stringMatching(/interrupted/) });
    await until(async () => (await jobs()).find((j) => j.queue_item_id === item.id && j.status === 'failed'), 'its job failed', 10_000);
  }, 60_000);

  test('a user cancel near the end, seen only after the printer went back to standby: cancelled, not completed', async () => {
    await start();
    await printing();
    await control(printer.control, 'pause');
    // Paused at 99.5 %: ended without an end state, the old rule took it as completed.
    sim.machine.printDuration = 597;
    await until(async () => (await jobs()).find((j) => j.progress >= 99), 'job at 99 %', 10_000);
    await control(printer.control, 'offline');
    await connected(false);
    await control(printer.control, 'cancel');
    await control(printer.control, 'idle'); // SDCARD_RESET_FILE: standby
    await control(printer.control, 'online');
    expect(await ended()).toMatchObject({ status: 'cancelled' });
  }, 60_000);

  test('a Moonraker without the history component: a print lost to a power loss ends as before (cancelled below 99 %)', async () => {
    await start({ noHistory: true });
    await printing();
    await control(printer.control, 'power-loss');
    await connected(false);
    await control(printer.control, 'online');
    expect(await ended()).toMatchObject({ status: 'cancelled' });
  }, 60_000);
});
