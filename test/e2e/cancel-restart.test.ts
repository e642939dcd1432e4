/**
 * A print cancelled by its user, then the service restarted (an update, a crash) while the printer still shows
 * that cancelled print: after the restart the printer shows what it showed before (stopped: status `online`, no
 * error), not a failure. A Bambu printer says "cancelled" (print_error 50348044) only for a few seconds and then
 * stays FAILED with print_error 0 until the next print, so only the service's own record of the job can tell;
 * PrusaLink (STOPPED) and Moonraker (`cancelled`) keep saying it themselves.
 */
import { BambuSimulator, type SimReportInfo } from '../../service/simulators/bambu';
import { control, quickDrivers, simState, until } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';
import { connectWs, type WsClient } from '../helpers/ws';
import { klipperSim, prusaSim, type SimPrinter } from './queue-helpers';

/* eslint-disable @typescript-eslint/no-explicit-any */
describe('a cancelled print and a service restart', () => {
  let h: Harness | undefined;
  let ws: WsClient | undefined;
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await ws?.close();
    await h?.close();
    for (const close of closers.splice(0)) await close();
    ws = h = undefined;
  });

  const printerOf = async (id: string) => (await h!.get(`/api/v1/printers/${id}`)).body as Record<string, any>;
  const jobsOf = async (id: string) => (await h!.get(`/api/v1/jobs?printer_id=${id}`)).body.jobs as Record<string, any>[];
  /** The printer_status frames of the printer while connected, as their status words. */
  const statusesOf = (id: string) => ws!.frames.filter((f) => f.type === 'printer_status' && f.data.printer_id === id && f.data.connection_status === 'connected').map((f) => f.data.status);

  /** Prints, cancels at the printer and waits until the service shows the cancel (job cancelled, printer online). */
  async function printAndCancel(id: string, url: string, file: string) {
    await control(url, 'print', { file });
    const job = await until(async () => (await jobsOf(id)).find((j) => j.status === 'printing'), 'job printing', 15_000);
    await control(url, 'cancel');
    await until(async () => (await jobsOf(id)).find((j) => j.id === job.id && j.status === 'cancelled'), 'job cancelled', 15_000);
    await until(async () => (await printerOf(id)).status === 'online', 'printer online after the cancel', 10_000);
    return job;
  }

  /** Restarts the service on the same database, with a /ws reader from its start on; `at`: when it started. */
  async function restart(options: Parameters<typeof startService>[0]) {
    await ws!.close();
    await h!.stop();
    const at = new Date().toISOString();
    h = await h!.restart(options);
    ws = await connectWs(h.base);
    return at;
  }

  /** What the restarted service shows of the printer, and every status it recorded since `at`. */
  async function shownAfter(id: string, at: string) {
    const history = await h!.service.context.store.statusHistory.list(id, { from: at });
    return { printer: await printerOf(id), state: h!.service.context.fleet.stateOf(id)?.state, recorded: history.map((r) => r.status) };
  }

  test('Bambu: the cancelled run, its print_error cleared, is stopped after the restart, not failed', async () => {
    const sent: SimReportInfo[] = [];
    /** Waits until the simulator has sent a full report after report `since` and `more` reports after it. */
    const pastFullReport = (since: number, more: number) =>
      until(() => {
        const full = sent.findIndex((r, i) => i >= since && r.full);
        return full >= 0 && sent.length - full > more;
      }, `the full report and ${more} more`, 10_000);
    const sim = await BambuSimulator.start({ speed: 20, onReport: (r) => sent.push(r) });
    closers.push(() => sim.close());
    const printer = sim.printerConfig();
    h = await startService(quickDrivers());
    ws = await connectWs(h.base);
    expect((await h.post('/api/v1/printers', printer)).status).toBe(201);
    await until(async () => (await printerOf(printer.id)).connection_status === 'connected', 'connected', 15_000);
    const job = await printAndCancel(printer.id, sim.controlUrl, '/Cube_PLA.gcode.3mf');
    // The cancel's print_error is gone; the printer stays FAILED with the same run until its next print.
    await until(async () => ((await simState(sim.controlUrl)) as any).print_error === 0, 'print_error cleared');
    expect(await simState(sim.controlUrl)).toMatchObject({ status: 'stopped' });

    const at = await restart(quickDrivers());
    const since = sent.length;
    await until(async () => (await printerOf(printer.id)).connection_status === 'connected', 'connected after the restart', 15_000);
    // The new driver's full report (FAILED, print_error 0) and a few reports after it.
    await pastFullReport(since, 3);
    await until(() => h!.service.context.fleet.stateOf(printer.id), 'a state after the restart');
    const shown = await shownAfter(printer.id, at);
    expect(shown.printer).toMatchObject({ status: 'online', connection_status: 'connected', status_message: null });
    expect(shown.state).toBe('stopped');
    expect(shown.recorded).not.toContain('error');
    expect(statusesOf(printer.id).filter((s) => s !== 'online')).toEqual([]);
    // The job stays the one cancelled job: the FAILED run is no new print.
    expect((await jobsOf(printer.id)).map((j) => [j.id, j.status])).toEqual([[job.id, 'cancelled']]);

    // A connection test starts a new driver too: the same run stays stopped.
    const before = sent.length;
    const tested = await h!.post(`/api/v1/printers/${printer.id}/test-connection`);
    expect(tested.body).toMatchObject({ success: true, connection_status: 'connected' });
    await pastFullReport(before, 3);
    await until(() => h!.service.context.fleet.stateOf(printer.id), 'the new driver\'s state');
    expect((await shownAfter(printer.id, at)).state).toBe('stopped');
    expect((await printerOf(printer.id)).status).toBe('online');
    expect(statusesOf(printer.id).filter((s) => s !== 'online')).toEqual([]);
  }, 60_000);

  /** Prusa and Klipper printers say themselves that the print was cancelled: checked the same way. */
  async function selfReporting(p: SimPrinter, file: string) {
    closers.push(() => p.close());
    const options = quickDrivers();
    h = await startService(options);
    ws = await connectWs(h.base);
    expect((await h.post('/api/v1/printers', p.body)).status).toBe(201);
    await until(async () => (await printerOf(p.id)).connection_status === 'connected', 'connected', 15_000);
    const job = await printAndCancel(p.id, p.control, file);
    const at = await restart(options);
    await until(async () => (await printerOf(p.id)).connection_status === 'connected', 'connected after the restart', 15_000);
    await until(() => h!.service.context.fleet.stateOf(p.id), 'a state after the restart');
    const shown = await shownAfter(p.id, at);
    expect(shown.printer).toMatchObject({ status: 'online', connection_status: 'connected', status_message: null });
    expect(shown.state).toBe('stopped');
    expect(shown.recorded).not.toContain('error');
    expect(statusesOf(p.id).filter((s) => s !== 'online')).toEqual([]);
    expect((await jobsOf(p.id)).map((j) => [j.id, j.status])).toEqual([[job.id, 'cancelled']]);
  }

  test('Prusa: a STOPPED printer is stopped after the restart', async () => {
    await selfReporting(await prusaSim('mk4s-cr', 'MK4S cancel restart'), 'cube_0.2mm_PLA_MK4S_12m.bgcode');
  }, 60_000);

  test('Klipper: a cancelled print_stats is stopped after the restart', async () => {
    await selfReporting(await klipperSim('voron-cr', 'Voron cancel restart'), 'cube_0.2mm_PLA_12m.gcode');
  }, 60_000);
});
