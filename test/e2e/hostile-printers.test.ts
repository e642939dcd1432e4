/**
 * Printers that send hostile or broken data over the real protocol (MQTT over
 * TLS): the service stays up, the faulty printer is marked `error` with the
 * reason and one system_alert, and the rest of the farm carries on.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { driverFactory } from '../../service/printers/drivers';
import { startFarm, type SimulatedFarm } from '../../service/simulators';
import { control, simState, until } from '../helpers/farm';
import { deepReport, startHostileBambu, type HostileBambu } from '../helpers/hostile-bambu';
import { startService, type Harness } from '../helpers/service';
import { connectWs, type WsClient } from '../helpers/ws';

/* eslint-disable @typescript-eslint/no-explicit-any */
const serviceOptions = {
  driverFactory: driverFactory({ backoffBaseMs: 100, backoffMaxMs: 1000 }),
  fleet: { watchdogMs: 3000, commandTimeoutMs: 3000, pollMs: 200, connectTimeoutMs: 4000 },
};

describe('hostile printers', () => {
  let farm: SimulatedFarm | undefined;
  let peer: HostileBambu | undefined;
  let h: Harness | undefined;
  let ws: WsClient | undefined;
  afterEach(async () => {
    await ws?.close();
    await h?.close();
    await peer?.close();
    await farm?.close();
    ws = h = peer = farm = undefined;
  });

  const printer = async (id: string) => (await h!.get(`/api/v1/printers/${id}`)).body as Record<string, any>;
  const connected = (id: string) => until(async () => (await printer(id)).connection_status === 'connected', `${id} connected`, 15_000);

  test('a report nested 3000 deep is dropped: the service lives, the printer is error with the reason, one alert, the farm carries on', async () => {
    farm = await startFarm({ bambu: 1, prusa: 1, speed: 20 });
    peer = await startHostileBambu('hostile-01');
    h = await startService(serviceOptions);
    ws = await connectWs(h.base);
    for (const p of [peer.printer, ...farm.printers.map((f) => f.printer)]) expect((await h.post('/api/v1/printers', p)).status).toBe(201);
    await connected('hostile-01');
    await Promise.all(farm.printers.map((f) => connected(f.printer.id)));

    const report = deepReport(3000);
    expect(report.length).toBeGreaterThan(15_000);
    expect(report.length).toBeLessThan(20_000);
    await peer.raw(report);

    const alert = await ws.next((f) => f.type === 'system_alert' && f.data.printer_id === 'hostile-01' && /nested deeper/.test(String(f.data.message)), 10_000);
    expect(alert.data).toMatchObject({ printer_id: 'hostile-01', status: 'error', reason: expect.stringMatching(/report dropped: report nested deeper than 32 levels/) });
    const hostile = await until(async () => {
      const p = await printer('hostile-01');
      return p.status === 'error' && p;
    }, 'hostile printer in error');
    expect(hostile).toMatchObject({ status: 'error', connection_status: 'error', status_message: expect.stringMatching(/nested deeper than 32 levels/) });

    // The service answers and the other printers still report.
    expect((await h.get('/api/v1/health')).status).toBe(200);
    for (const f of farm.printers) expect(await printer(f.printer.id)).toMatchObject({ connection_status: 'connected' });
    const sim = farm.printers[0];
    const file = (await simState(sim.control_url)).files.find((f) => /\.3mf$/i.test(f));
    await control(sim.control_url, 'print', { file });
    await until(async () => (await printer(sim.printer.id)).status === 'printing', 'the other printer prints');
    const alerts = ws.frames.filter((f) => f.type === 'system_alert' && f.data.printer_id === 'hostile-01' && /nested deeper/.test(String(f.data.message)));
    expect(alerts).toHaveLength(1);
    const driver = h.service.context.fleet.driverStats('hostile-01');
    expect(driver).toMatchObject({ dropped_reports: 1 });
  });

  test('an MQTT packet over 1 MB is refused by its header: the printer is error, the service lives', async () => {
    peer = await startHostileBambu('hostile-02');
    h = await startService(serviceOptions);
    await h.post('/api/v1/printers', peer.printer);
    await connected('hostile-02');
    await peer.raw(Buffer.alloc(1024 * 1024 + 10, 0x20));
    const p = await until(async () => {
      const p = await printer('hostile-02');
      return p.status === 'error' && p;
    }, 'oversized packet refused');
    expect(p.status_message).toMatch(/MQTT packet of \d+ bytes \(limit 1048576\)/);
    expect((await h.get('/api/v1/health')).status).toBe(200);
  });

  test('a PrusaLink answer the service cannot handle marks that printer error with the reason; the service lives', async () => {
    // Answers like PrusaLink, except for a status message that is a number where text belongs.
    const fake = http.createServer((req, res) => {
      const body =
        req.url === '/api/version'
          ? { api: '2.0.0', server: '2.1.2', text: 'PrusaLink', hostname: 'fake' }
          : req.url === '/api/v1/status'
            ? { printer: { state: 'ERROR', temp_nozzle: 20, temp_bed: 20, status_printer: { ok: false, message: 5 } } }
            : null;
      if (req.url === '/api/v1/job') return void res.writeHead(204).end();
      res.writeHead(body ? 200 : 404, { 'content-type': 'application/json' });
      res.end(body ? JSON.stringify(body) : '');
    });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    try {
      h = await startService(serviceOptions);
      const port = (fake.address() as AddressInfo).port;
      await h.post('/api/v1/printers', { id: 'odd-prusa', name: 'Odd', type: 'prusa_core', model: 'MK4S', ip_address: '127.0.0.1', http_port: port, access_code: 'pw' });
      const p = await until(async () => {
        const p = await printer('odd-prusa');
        return p.status === 'error' && p;
      }, 'prusa printer in error').catch(async (e) => {
        console.log(JSON.stringify(await printer('odd-prusa')));
        throw e;
      });
      expect(p).toMatchObject({ connection_status: 'error', status_message: expect.stringMatching(/could not handle what the printer sent/) });
      expect((await h.get('/api/v1/health')).status).toBe(200);
    } finally {
      await h?.close();
      h = undefined;
      fake.closeAllConnections();
      await new Promise((resolve) => fake.close(resolve));
    }
  });

  test('a report flood with invented keys and a changing job name makes one job; the rest is refused with an alert; the printer stays online', async () => {
    peer = await startHostileBambu('flooder-01');
    h = await startService(serviceOptions);
    ws = await connectWs(h.base);
    await h.post('/api/v1/printers', peer.printer);
    await connected('flooder-01');
    // The pushall answer first: a new link's state goes out from its full report on, and this peer's is a fixed
    // idle one, which would end the flood's print were it to come after it. The monitoring driver's own state:
    // the printer's view may show the answer to the connection test's driver, before monitoring has subscribed.
    await until(async () => h!.service.context.fleet.stateOf('flooder-01')?.temperatures.nozzle === 24, 'the pushall answer');
    const junk = (r: number) => Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`key_${r}_${i}`, i]));
    for (let r = 0; r < 200; r++) {
      await peer.report({ gcode_state: 'RUNNING', mc_percent: 10, subtask_name: `flood-${r}`, gcode_file: `/data/flood-${r}.gcode`, gcode_start_time: '1795000000', ...junk(r) });
    }
    const alert = await ws.next((f) => f.type === 'system_alert' && f.data.printer_id === 'flooder-01' && f.data.reason === 'no_start', 10_000);
    expect(alert.data).toMatchObject({ level: 'warning', refused_jobs: expect.any(Number), message: expect.stringMatching(/did not become a job/) });
    await h.service.context.tracker.idle();
    const jobs = (await h.get('/api/v1/jobs?printer_id=flooder-01')).body.jobs as Record<string, any>[];
    expect(jobs).toHaveLength(1);
    expect(jobs[0].job_name).toMatch(/^flood-\d+$/);
    expect(await printer('flooder-01')).toMatchObject({ status: 'printing', connection_status: 'connected' });
    expect((await h.get('/api/v1/health')).status).toBe(200);
  });
});
