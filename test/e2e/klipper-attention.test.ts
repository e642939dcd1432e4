/**
 * What a Klipper printer needs from a person reaches the operator as it does for the other families: a
 * Klippy shutdown (an MCU fault, a heater that does not heat) and a print error (print_stats error) become
 * attention entries with Klipper's own words, and so does a print its runout sensor paused, in the printer detail, GET /attention, the printer_attention
 * frame on /ws and an `attention` webhook; a FIRMWARE_RESTART clears them. Over the simulated Moonraker's
 * real JSON-RPC WebSocket.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { control, until } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';
import { connectWs } from '../helpers/ws';
import { addPrinters, klipperSim, queueServiceOptions, type SimPrinter } from './queue-helpers';

const GCODE = 'cube_0.2mm_PLA_12m.gcode';

/** A webhook receiver that keeps what it is sent. */
async function receiver(): Promise<{ url: string; got: Record<string, any>[]; close(): Promise<void> }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const got: Record<string, any>[] = []; // eslint-disable-line @typescript-eslint/no-explicit-any
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      got.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    got,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

describe("a Klipper printer's attention", () => {
  let printer: SimPrinter;
  let h: Harness;
  let hook: Awaited<ReturnType<typeof receiver>>;
  beforeEach(async () => {
    printer = await klipperSim('voron-att', 'Voron Att', 'Voron 2.4 350', 20, { runoutSensor: true });
    hook = await receiver();
    h = await startService({ ...queueServiceOptions, webhooks: { timeoutMs: 2000, retries: 1, backoffMs: 50 } });
    expect((await h.put('/api/v1/settings', { notify_webhooks: [{ url: hook.url, kinds: ['attention'] }] })).status).toBe(200);
  });
  afterEach(async () => {
    await h?.close();
    await printer?.close();
    await hook?.close();
  });

  const attention = async () => (await h.get(`/api/v1/printers/${printer.id}`)).body.attention as Record<string, unknown>[];

  test("a Klippy shutdown is a fatal entry in Klipper's words, told once, cleared by a FIRMWARE_RESTART", async () => {
    await addPrinters(h, [printer]);
    const ws = await connectWs(h.base);
    try {
      await control(printer.control, 'print', { file: GCODE });
      await control(printer.control, 'shutdown', { message: 'Heater extruder not heating at expected rate' });
      const [entry] = await until(async () => {
        const a = await attention();
        return a.length > 0 && a;
      }, 'attention entry', 10_000);
      // Klipper's first line says what is wrong, the lines after it (its own advice) what to do.
      expect(entry).toMatchObject({
        code: 'KLIPPY_SHUTDOWN',
        severity: 'fatal',
        source: 'klipper',
        message: 'Klipper shut down: Heater extruder not heating at expected rate',
        action: expect.stringContaining('FIRMWARE_RESTART'),
      });
      expect(entry.action).not.toContain('Printer is shutdown');
      const farm = (await h.get('/api/v1/attention')).body;
      expect(farm.attention).toEqual([expect.objectContaining({ printer_id: printer.id, code: 'KLIPPY_SHUTDOWN', source: 'klipper' })]);
      const appeared = await ws.next((f) => f.type === 'printer_attention' && f.data.printer_id === printer.id, 10_000);
      expect((appeared.data.appeared as { code: string }[]).map((e) => e.code)).toEqual(['KLIPPY_SHUTDOWN']);
      const told = await until(async () => hook.got.find((n) => n.kind === 'attention'), 'attention webhook', 10_000);
      expect(told).toMatchObject({ printer_id: printer.id, severity: 'fatal', title: 'Voron Att needs attention' });
      expect(told.message).toContain('Heater extruder not heating at expected rate');
      // The print it stopped ended failed.
      await until(async () => (await h.get(`/api/v1/jobs?printer_id=${printer.id}`)).body.jobs[0]?.status === 'failed', 'job failed', 10_000);

      await control(printer.control, 'restart');
      await until(async () => (await attention()).length === 0, 'cleared', 10_000);
      const cleared = await ws.next((f) => f.type === 'printer_attention' && f.data.printer_id === printer.id && (f.data.cleared as unknown[]).length > 0, 10_000);
      expect((cleared.data.cleared as { code: string }[]).map((e) => e.code)).toEqual(['KLIPPY_SHUTDOWN']);
      expect(hook.got.filter((n) => n.kind === 'attention')).toHaveLength(1);
    } finally {
      await ws.close();
    }
  }, 60_000);

  test("a print error is a serious entry with print_stats' message until the next print clears it", async () => {
    await addPrinters(h, [printer]);
    await control(printer.control, 'print', { file: GCODE });
    await until(async () => (await h.get(`/api/v1/printers/${printer.id}`)).body.status === 'printing', 'printing', 10_000);
    await control(printer.control, 'fail', { message: 'Move out of range: 0.000 400.000 0.200 [0.000]' });
    const [entry] = await until(async () => {
      const a = await attention();
      return a.length > 0 && a;
    }, 'attention entry', 10_000);
    expect(entry).toMatchObject({ code: 'PRINT_ERROR', severity: 'serious', source: 'klipper', message: 'Print error: Move out of range: 0.000 400.000 0.200 [0.000]' });
    expect(typeof entry.action).toBe('string');
    await until(async () => hook.got.some((n) => n.kind === 'attention' && n.severity === 'serious'), 'attention webhook', 10_000);

    await control(printer.control, 'idle'); // SDCARD_RESET_FILE
    await until(async () => (await attention()).length === 0, 'cleared', 10_000);
  }, 60_000);

  test('a print paused by its runout sensor is a serious entry naming the sensor, cleared once filament is back and the print resumes', async () => {
    await addPrinters(h, [printer]);
    await control(printer.control, 'print', { file: GCODE });
    await until(async () => (await h.get(`/api/v1/printers/${printer.id}`)).body.status === 'printing', 'printing', 10_000);
    await control(printer.control, 'runout', { detected: false });
    const [entry] = await until(async () => {
      const a = await attention();
      return a.length > 0 && a;
    }, 'attention entry', 10_000);
    expect(entry).toMatchObject({ code: 'FILAMENT_RUNOUT', severity: 'serious', source: 'klipper', message: 'Filament ran out (sensor runout): the print is paused' });
    expect(entry.action).toMatch(/RESUME/);
    expect((await h.get(`/api/v1/printers/${printer.id}`)).body.status).toBe('paused');
    const told = await until(async () => hook.got.find((n) => n.kind === 'attention'), 'attention webhook', 10_000);
    expect(told.message).toContain('Filament ran out');

    await control(printer.control, 'runout', { detected: true });
    await control(printer.control, 'resume');
    await until(async () => (await attention()).length === 0, 'cleared', 10_000);
    expect((await h.get(`/api/v1/printers/${printer.id}`)).body.status).toBe('printing');
  }, 60_000);
});
