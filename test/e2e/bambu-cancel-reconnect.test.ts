/**
 * A Bambu printer shows a user's cancel only for a few seconds (print_error 50348044, then 0 while gcode_state
 * stays FAILED), so the driver remembers that the FAILED run was a cancel. Across a dropped link that memory
 * must hold only for the same run: a print that was started and failed for a real reason while the service could
 * not see the printer is `failed` (the API's `error`, with the reason), not `stopped` (`online`: the user
 * cancelled); the same cancelled run seen again on the new link stays `stopped`.
 */
import { BambuSimulator, type SimReportInfo } from '../../service/simulators/bambu';
import { control, quickDrivers, simState, until } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';
import { connectWs, type WsClient } from '../helpers/ws';

/* eslint-disable @typescript-eslint/no-explicit-any */
describe('a cancelled Bambu print and a dropped link', () => {
  let sim: BambuSimulator | undefined;
  let h: Harness | undefined;
  let ws: WsClient | undefined;
  /** Every report the simulator sent, in order. */
  let sent: SimReportInfo[] = [];
  afterEach(async () => {
    await ws?.close();
    await h?.close();
    await sim?.close();
    ws = h = sim = undefined;
    sent = [];
  });

  const printerOf = async (id: string) => (await h!.get(`/api/v1/printers/${id}`)).body as Record<string, any>;
  const jobsOf = async (id: string) => (await h!.get(`/api/v1/jobs?printer_id=${id}`)).body.jobs as Record<string, any>[];
  /** The printer_status frames since frame `from` while connected, as their status words (the first: the link-up frame). */
  const statusesSince = (id: string, from: number) =>
    ws!.frames.slice(from).filter((f) => f.type === 'printer_status' && f.data.printer_id === id && f.data.connection_status === 'connected').map((f) => f.data.status);
  /** Waits until the simulator has sent the new link's full report and `more` reports after it (MQTT keeps their order). */
  const pastFullReport = (since: number, more: number) =>
    until(() => {
      const at = sent.findIndex((r, i) => i >= since && r.full);
      return at >= 0 && sent.length - at > more;
    }, `the full report and ${more} more`, 10_000);

  /** A print cancelled by the user (the service saw it), then the link dropped. */
  async function cancelledThenDropped() {
    sim = await BambuSimulator.start({ speed: 20, onReport: (r) => sent.push(r) });
    const url = sim.controlUrl;
    const printer = sim.printerConfig();
    h = await startService(quickDrivers());
    ws = await connectWs(h.base);
    expect((await h.post('/api/v1/printers', printer)).status).toBe(201);
    await until(async () => (await printerOf(printer.id)).connection_status === 'connected', 'connected', 15_000);
    await control(url, 'print', { file: '/Cube_PLA.gcode.3mf' });
    const job = await until(async () => (await jobsOf(printer.id)).find((j) => j.status === 'printing'), 'job printing');
    await control(url, 'cancel');
    await until(async () => (await jobsOf(printer.id)).find((j) => j.id === job.id && j.status === 'cancelled'), 'job cancelled');
    // The cancel's print_error is gone after a few reports; the printer still shows the FAILED run, and no error.
    await until(async () => ((await simState(url)) as any).print_error === 0, 'print_error cleared');
    await pastFullReport(0, 0);
    expect(await printerOf(printer.id)).toMatchObject({ status: 'online', status_message: null });
    await control(url, 'offline');
    await until(async () => (await printerOf(printer.id)).connection_status !== 'connected', 'link dropped');
    return { printer, url, job };
  }

  test('a print started and failed while the link was down shows failed, not the earlier cancel', async () => {
    const { printer, url, job } = await cancelledThenDropped();
    // At the printer's screen: a new print, which runs out of filament while the service cannot see it.
    await control(url, 'print', { file: '/Cube_PLA.gcode.3mf' });
    await control(url, 'fail');
    expect(((await simState(url)) as any).print_error).not.toBe(0);
    const from = ws!.frames.length;
    const since = sent.length;
    await control(url, 'online');
    await pastFullReport(since, 3);
    expect(await printerOf(printer.id)).toMatchObject({ status: 'error', connection_status: 'connected', status_message: expect.stringMatching(/filament/i) });
    // Never the earlier cancel once the new link's reports came in (the link-up frame itself repeats the last
    // status seen, as for every printer: docs/printers.md).
    const [linkUp, ...reported] = statusesSince(printer.id, from);
    expect(linkUp).toBe('online');
    expect(reported.length).toBeGreaterThan(0);
    expect(reported.filter((s) => s !== 'error')).toEqual([]);
    expect((await jobsOf(printer.id)).find((j) => j.id === job.id)!.status).toBe('cancelled');
  }, 45_000);

  test('the same cancelled run seen again on the new link stays stopped', async () => {
    const { printer, url, job } = await cancelledThenDropped();
    const from = ws!.frames.length;
    const since = sent.length;
    await control(url, 'online');
    // The full report of the new link (FAILED, print_error 0 by now) and a few deltas after it.
    await pastFullReport(since, 3);
    expect(await printerOf(printer.id)).toMatchObject({ status: 'online', connection_status: 'connected', status_message: null });
    expect(statusesSince(printer.id, from).length).toBeGreaterThan(0);
    expect(statusesSince(printer.id, from).filter((s) => s !== 'online')).toEqual([]);
    expect(statusesSince(printer.id, from).length).toBeGreaterThan(0);
    expect((await jobsOf(printer.id)).map((j) => [j.id, j.status])).toEqual([[job.id, 'cancelled']]);
  }, 45_000);
});
