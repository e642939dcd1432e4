/**
 * A Bambu printer that answers pushall late (the simulator's pushall_delay_ms: a busy printer), so that the
 * periodic deltas of a new link come before its first full report: the reconnect race 38812b2 fixed for Klipper
 * (deltas merged into an empty status read as an idle printer and ended the job). On Bambu a delta merged into
 * an empty report has no job and no trays (subtask_name, gcode_file and ams come with the full report): a new
 * driver showed "printing" without the job and without its AMS until then. So a new link's state goes out from
 * its first full report on, or from its deltas after a bounded wait when that never comes. MQTT hands one link's
 * reports over in order, so the full report is never older than a delta before it. These hold that: one job,
 * followed, and completed once; no state without the print; the wait ends.
 */
import { driverFactory } from '../../service/printers/drivers';
import { startFarm, type SimulatedFarm } from '../../service/simulators';
import { BambuSimulator, type SimReportInfo } from '../../service/simulators/bambu';
import { closeAfterEach, startDriver, startSim, waitForState } from '../helpers/bambu-e2e';
import { control, simState, until } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';
import { connectWs, type WsClient } from '../helpers/ws';

/* eslint-disable @typescript-eslint/no-explicit-any */
const serviceOptions = {
  driverFactory: driverFactory({ backoffBaseMs: 100, backoffMaxMs: 1000 }),
  fleet: { watchdogMs: 1500, commandTimeoutMs: 3000, pollMs: 200, connectTimeoutMs: 4000 },
};
/** Late enough for several deltas (reports come every 100 ms at speed 20) before the full report. */
const LATE_MS = 1500;

closeAfterEach();

describe('a Bambu printer that answers pushall late', () => {
  let farm: SimulatedFarm | undefined;
  let sim: BambuSimulator | undefined;
  let h: Harness | undefined;
  let ws: WsClient | undefined;
  afterEach(async () => {
    await ws?.close();
    await h?.close();
    await farm?.close();
    await sim?.close();
    ws = h = farm = sim = undefined;
  });

  const jobsOf = async (printerId: string) => (await h!.get(`/api/v1/jobs?printer_id=${printerId}`)).body.jobs as Record<string, any>[];
  const connected = (printerId: string) => until(async () => (await h!.get(`/api/v1/printers/${printerId}`)).body.connection_status === 'connected', 'connected', 15_000);
  /** The job's end frames so far (its later filament updates are no end). */
  const ends = (jobId: number) => ws!.frames.filter((f) => f.type === 'job_update' && f.data.id === jobId && f.data.change !== 'updated' && ['completed', 'failed', 'cancelled'].includes(String(f.data.status)));

  test('restarted mid-print, then dropped while the print ends: one job, followed, completed once', async () => {
    farm = await startFarm({ bambu: 1, speed: 20 });
    const { printer, control_url } = farm.printers[0];
    h = await startService(serviceOptions);
    expect((await h.post('/api/v1/printers', printer)).status).toBe(201);
    await connected(printer.id);
    await control(control_url, 'print', { file: '/Cube_PLA.gcode.3mf' });
    const job = await until(async () => (await jobsOf(printer.id)).find((j) => j.status === 'printing'), 'job printing');
    await until(async () => (await simState(control_url)).status === 'printing', 'past preparing');

    // A new service (no report yet): its first reports are deltas without the print's name.
    await h.stop();
    await control(control_url, 'faults', { pushall_delay_ms: LATE_MS });
    h = await h.restart();
    ws = await connectWs(h.base);
    await connected(printer.id);
    const progress = (await simState(control_url)).progress;
    await until(async () => (await jobsOf(printer.id))[0].progress >= progress + 1, 'the job follows the print', 15_000);
    expect((await jobsOf(printer.id)).map((j) => [j.id, j.status])).toEqual([[job.id, 'printing']]);

    // Dropped, and the print ends meanwhile: the new link's deltas merge into the last link's report.
    await control(control_url, 'offline');
    await until(async () => (await h!.get(`/api/v1/printers/${printer.id}`)).body.status === 'offline', 'offline');
    await control(control_url, 'finish');
    await control(control_url, 'online');
    await connected(printer.id);
    const done = await until(async () => (await jobsOf(printer.id)).find((j) => j.status === 'completed'), 'completed', 15_000);
    expect(done).toMatchObject({ id: job.id, progress: 100 });
    await h.service.context.tracker.idle();
    expect((await jobsOf(printer.id)).map((j) => [j.id, j.status])).toEqual([[job.id, 'completed']]);
    expect(ends(job.id).map((f) => f.data.status)).toEqual(['completed']);
    expect(ws.frames.filter((f) => f.type === 'job_auto_created')).toEqual([]);
    expect((await simState(control_url) as any).stats.pushall_requests).toBeGreaterThanOrEqual(3);
  }, 45_000);

  test('added while it prints: no state without the print before its full report, then the print with its job and trays', async () => {
    const sent: SimReportInfo[] = [];
    /** How many /ws frames had come when the simulator sent the new link's full report. */
    let framesAtFull = -1;
    let mark = Infinity;
    sim = await BambuSimulator.start({
      speed: 20,
      onReport: (r) => {
        sent.push(r);
        if (r.full && sent.length > mark && framesAtFull < 0) framesAtFull = ws!.frames.length;
      },
    });
    h = await startService(serviceOptions);
    ws = await connectWs(h.base);
    const printer = sim.printerConfig();
    await control(sim.controlUrl, 'print', { file: '/Cube_PLA.gcode.3mf' });
    await until(async () => (await simState(sim!.controlUrl)).status === 'printing', 'past preparing');
    await control(sim.controlUrl, 'faults', { pushall_delay_ms: LATE_MS });

    mark = sent.length;
    expect((await h.post('/api/v1/printers', printer)).status).toBe(201);
    // What GET shows meanwhile, until the full report and a few deltas after it are in (MQTT keeps their order).
    const shown: Record<string, any>[] = [];
    await until(
      async () => {
        shown.push((await h!.get(`/api/v1/printers/${printer.id}`)).body);
        const at = sent.findIndex((r, i) => i >= mark && r.full);
        return at >= 0 && sent.length - at > 3;
      },
      'the full report and three deltas after it',
      15_000,
    );
    const before = ws.frames.slice(0, framesAtFull).filter((f) => f.type === 'printer_status' && f.data.printer_id === printer.id);
    // Deltas did come meanwhile (at 100 ms), and none of them made a state: the printer is not yet known to print.
    expect(sent.slice(mark).findIndex((r) => r.full)).toBeGreaterThanOrEqual(5);
    expect(before.length).toBeGreaterThan(0);
    expect(before.filter((f) => f.data.status === 'printing')).toEqual([]);
    // Then the print, named, with the trays the printer has (never an AMS printer without its AMS).
    const printing = ws.frames.filter((f) => f.type === 'printer_status' && f.data.printer_id === printer.id && f.data.status === 'printing');
    expect(printing.length).toBeGreaterThan(0);
    expect(printing.filter((f) => f.data.job_name !== 'Cube_PLA')).toEqual([]);
    expect(shown.filter((p) => p.capabilities.has_ams !== true)).toEqual([]);
    expect(shown.filter((p) => p.status === 'printing' && p.materials.length === 0)).toEqual([]);
    const job = await until(async () => (await jobsOf(printer.id)).find((j) => j.status === 'printing'), 'the print as a job');
    expect(job).toMatchObject({ job_name: 'Cube_PLA' });
    expect(await h.get(`/api/v1/printers/${printer.id}`)).toMatchObject({ body: { status: 'printing', current_job: { id: job.id, name: 'Cube_PLA' }, firmware_version: '01.08.02.00' } });
  }, 45_000);
});

describe('a Bambu printer that never answers pushall', () => {
  test('is shown from its deltas after the bounded wait', async () => {
    const sent: SimReportInfo[] = [];
    const sim = await startSim({ speed: 20, onReport: (r) => sent.push(r) });
    expect(sim.startPrint('/Cube_PLA.gcode.3mf')).toEqual({ ok: true });
    await until(() => sim.status === 'printing', 'past preparing');
    // Beyond the test: as a P1P that takes pushall only once per five minutes.
    sim.setFaults({ pushall_delay_ms: 60_000 });
    const { driver, states } = startDriver(sim, {}, { firstReportWaitMs: 800 });
    await driver.connect();
    const since = sent.length;
    const state = await waitForState(driver, (s) => s.state === 'printing', 'printing, from the deltas', 5000);
    // Held while the deltas came (every 100 ms), then shown: the print's progress, though not its name.
    expect(sent.length - since).toBeGreaterThanOrEqual(4);
    expect(sent.slice(since).filter((r) => r.full)).toEqual([]);
    expect(states[0]).toBe(state);
    expect(state).toMatchObject({ raw_state: 'RUNNING', job: null });
    expect(sim.stats.pushall_requests).toBe(1);
  });
});
