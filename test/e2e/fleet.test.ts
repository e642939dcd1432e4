/**
 * The service against simulated printers over their real protocols (MQTT over
 * TLS + implicit FTPS, PrusaLink HTTP with Digest): connection tests, live
 * state in the API and on /ws, alerts, commands, and printers that go away.
 */
import { driverFactory } from '../../service/printers/drivers';
import { startFarm, type SimulatedFarm } from '../../service/simulators';
import { startService, type Harness } from '../helpers/service';
import { connectWs, type WsClient } from '../helpers/ws';
import { control, simState, until } from '../helpers/farm';


describe('fleet against simulated printers', () => {
  let farm: SimulatedFarm;
  let h: Harness;
  let ws: WsClient;

  beforeEach(async () => {
    farm = await startFarm({ bambu: 1, prusa: 1, speed: 200 });
    h = await startService({
      driverFactory: driverFactory({ backoffBaseMs: 100, backoffMaxMs: 1000 }),
      fleet: { watchdogMs: 1500, commandTimeoutMs: 3000, pollMs: 200, connectTimeoutMs: 4000 },
    });
    ws = await connectWs(h.base);
  });
  afterEach(async () => {
    await ws.close();
    await h.close();
    await farm.close();
  });

  const printerStatus = async (id: string) => (await h.get(`/api/v1/printers/${id}`)).body;

  test.each([0, 1])('a new printer (%#) is tested and comes online with live data', async (index) => {
    const { printer } = farm.printers[index];
    const created = await h.post('/api/v1/printers', printer);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ status: 'configuring', connection_status: 'testing' });
    const detail = await until(async () => {
      const d = await printerStatus(printer.id);
      return d.connection_status === 'connected' && d.firmware_version ? d : null;
    }, 'online');
    expect(detail.status).toBe('online');
    expect(detail.last_seen).not.toBeNull();
    expect(detail.temperatures.nozzle).toEqual(expect.any(Number));
    await ws.next((f) => f.type === 'printer_status' && f.data.printer_id === printer.id && f.data.status === 'online');
  });

  test.each([0, 1])('a print (%#) shows as printing with progress, then online again', async (index) => {
    const { printer, control_url } = farm.printers[index];
    await h.post('/api/v1/printers', printer);
    await until(async () => (await printerStatus(printer.id)).connection_status === 'connected', 'connected');
    const file = (await simState(control_url)).files.find((f) => /gcode/.test(f))!;
    await control(control_url, 'print', { file });
    await ws.next((f) => f.type === 'printer_status' && f.data.printer_id === printer.id && f.data.status === 'printing', 10_000);
    const printing = await until(async () => {
      const d = await printerStatus(printer.id);
      return d.status === 'printing' && d.temperatures.nozzle_target > 0 ? d : null;
    }, 'printing with targets');
    expect(printing.temperatures.nozzle_target).toBeGreaterThan(0);
    await control(control_url, 'finish');
    await until(async () => (await printerStatus(printer.id)).status === 'online', 'online after finish');
  });

  test.each([0, 1])('pause, resume and stop (%#) reach the printer; a refused command is 409 PRINTER_BUSY', async (index) => {
    const { printer, control_url } = farm.printers[index];
    await h.post('/api/v1/printers', printer);
    await until(async () => (await printerStatus(printer.id)).connection_status === 'connected', 'connected');
    const file = (await simState(control_url)).files.find((f) => /gcode/.test(f))!;
    await control(control_url, 'print', { file });
    await until(async () => (await printerStatus(printer.id)).status === 'printing', 'printing');

    const paused = await h.post(`/api/v1/printers/${printer.id}/pause`);
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ id: printer.id, action: 'pause', success: true });
    await until(async () => (await simState(control_url)).status.toLowerCase().includes('pause'), 'simulator paused');
    expect((await h.post(`/api/v1/printers/${printer.id}/resume`)).status).toBe(200);

    await control(control_url, 'faults', { reject_commands: true });
    const refused = await h.post(`/api/v1/printers/${printer.id}/pause`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('PRINTER_BUSY');
    await control(control_url, 'faults', { reject_commands: false });

    expect((await h.post(`/api/v1/printers/${printer.id}/stop`)).status).toBe(200);
    await until(async () => !/print|pause|prepare|running/i.test((await simState(control_url)).status), 'simulator stopped');
  });

  test.each([0, 1])('a printer that drops off (%#) goes offline with an alert, and comes back', async (index) => {
    const { printer, control_url } = farm.printers[index];
    await h.post('/api/v1/printers', printer);
    await until(async () => (await printerStatus(printer.id)).connection_status === 'connected', 'connected');
    await control(control_url, 'offline');
    await until(async () => (await printerStatus(printer.id)).status === 'offline', 'offline');
    const alert = await ws.next((f) => f.type === 'system_alert' && f.data.printer_id === printer.id);
    expect(alert.data).toMatchObject({ level: 'warning', status: 'offline' });
    const refused = await h.post(`/api/v1/printers/${printer.id}/pause`);
    expect(refused.status).toBe(502);
    expect(refused.body.error.code).toBe('PRINTER_OFFLINE');
    await control(control_url, 'online');
    await until(async () => (await printerStatus(printer.id)).connection_status === 'connected', 'back online', 15_000);
    await ws.next((f) => f.type === 'system_alert' && f.data.printer_id === printer.id && /back online/.test(String(f.data.message)));
  });

  test.each([0, 1])('after a restart, a printer (%#) the new service has not reached yet is not shown connected', async (index) => {
    const { printer, control_url } = farm.printers[index];
    await h.post('/api/v1/printers', printer);
    await until(async () => (await printerStatus(printer.id)).connection_status === 'connected', 'connected');
    await h.stop();
    // It answers nothing now: the new service's connection test runs until its deadline.
    await control(control_url, 'stall');
    h = await h.restart();
    // The record said 'connected' (the last process's link) until that test ended.
    expect(await printerStatus(printer.id)).toMatchObject({ connection_status: 'testing', status_message: null });
    await control(control_url, 'online');
    await until(async () => (await printerStatus(printer.id)).connection_status === 'connected', 'connected to the new service', 15_000);
  });

  test.each([0, 1])('a stalled printer (%#) is marked offline by the watchdog', async (index) => {
    const { printer, control_url } = farm.printers[index];
    await h.post('/api/v1/printers', printer);
    await until(async () => (await printerStatus(printer.id)).connection_status === 'connected', 'connected');
    await control(control_url, 'stall');
    await until(async () => (await printerStatus(printer.id)).status === 'offline', 'offline after stall');
    // The API stays responsive while the printer hangs.
    expect((await h.get('/api/v1/health')).status).toBe(200);
  });

  test.each([0, 1])('a wrong access code (%#) is an error with a clear message, not a crash loop', async (index) => {
    const { printer } = farm.printers[index];
    await h.post('/api/v1/printers', { ...printer, access_code: 'wrong-code' });
    const detail = await until(async () => {
      const d = await printerStatus(printer.id);
      return d.connection_status === 'error' ? d : null;
    }, 'error');
    expect(detail.status).toBe('error');
    expect(detail.status_message).toMatch(/access code/i);
    const fixed = await h.put(`/api/v1/printers/${printer.id}`, { access_code: printer.access_code });
    expect(fixed.status).toBe(200);
    await until(async () => (await printerStatus(printer.id)).connection_status === 'connected', 'connected after fixing the code');
  });

  test('test-connection answers for a reachable and an unreachable printer', async () => {
    const { printer, control_url } = farm.printers[1];
    await h.post('/api/v1/printers', printer);
    await until(async () => (await printerStatus(printer.id)).connection_status === 'connected', 'connected');
    const ok = await h.post(`/api/v1/printers/${printer.id}/test-connection`);
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ id: printer.id, success: true, connection_status: 'connected' });
    await control(control_url, 'offline');
    const down = await h.post(`/api/v1/printers/${printer.id}/test-connection`);
    expect(down.body).toMatchObject({ success: false, status: 'offline' });
  });

  test('deactivating and deleting a printer closes its connection', async () => {
    const { printer } = farm.printers[0];
    await h.post('/api/v1/printers', printer);
    await until(async () => (await printerStatus(printer.id)).connection_status === 'connected', 'connected');
    await h.put(`/api/v1/printers/${printer.id}`, { is_active: false });
    expect(h.service.context.fleet.stateOf(printer.id)).toBeUndefined();
    const detail = await printerStatus(printer.id);
    expect(detail).toMatchObject({ status: 'offline', connection_status: 'disconnected' });
    await h.put(`/api/v1/printers/${printer.id}`, { is_active: true });
    await until(async () => (await printerStatus(printer.id)).connection_status === 'connected', 'connected again');
    await h.del(`/api/v1/printers/${printer.id}`);
    expect(h.service.context.fleet.stateOf(printer.id)).toBeUndefined();
  });
});
