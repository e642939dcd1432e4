/**
 * A Bambu printer that answers pushall late (the simulator's pushall_delay_ms: a busy printer), so that the
 * periodic deltas of a new link come before its first full report: the reconnect race 38812b2 fixed for Klipper
 * (deltas merged into an empty status read as an idle printer and ended the job). On Bambu a delta merged into
 * an empty report has no job (subtask_name and gcode_file come with the full report), one merged into the last
 * link's report keeps that print, and MQTT hands one link's reports over in order, so the full report is never
 * older than a delta before it. These hold that: one job, followed, and completed once.
 */
import { driverFactory } from '../../service/printers/drivers';
import { startFarm, type SimulatedFarm } from '../../service/simulators';
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

describe('a Bambu printer that answers pushall late', () => {
  let farm: SimulatedFarm | undefined;
  let h: Harness | undefined;
  let ws: WsClient | undefined;
  afterEach(async () => {
    await ws?.close();
    await h?.close();
    await farm?.close();
    ws = h = farm = undefined;
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
});
