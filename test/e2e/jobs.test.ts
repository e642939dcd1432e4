/**
 * Jobs follow real (simulated) prints: created once when a print starts,
 * through pause and resume, to completed / failed / cancelled, across
 * service restarts.
 */
import { driverFactory } from '../../service/printers/drivers';
import { startFarm, type SimulatedFarm } from '../../service/simulators';
import { startService, tempDir, type Harness } from '../helpers/service';
import { connectWs } from '../helpers/ws';
import { control, until } from '../helpers/farm';

const files = async (url: string) => ((await (await fetch(`${url}/state`)).json()) as { files: string[] }).files;

const serviceOptions = {
  driverFactory: driverFactory({ backoffBaseMs: 100, backoffMaxMs: 1000 }),
  fleet: { watchdogMs: 1500, commandTimeoutMs: 3000, pollMs: 200, connectTimeoutMs: 4000 },
};

describe('jobs follow simulated prints', () => {
  let farm: SimulatedFarm;
  let h: Harness;
  beforeEach(async () => {
    // Slow enough that a print lasts through restarts (600 printer-seconds at speed 20 = 30 s).
    farm = await startFarm({ bambu: 1, prusa: 1, speed: 20 });
  });
  afterEach(async () => {
    await h?.close();
    await farm.close();
  });

  const jobsOf = async (printerId: string) => (await h.get(`/api/v1/jobs?printer_id=${printerId}`)).body.jobs as Record<string, any>[]; // eslint-disable-line @typescript-eslint/no-explicit-any
  const connected = (id: string) => until(async () => (await h.get(`/api/v1/printers/${id}`)).body.connection_status === 'connected', `${id} connected`);

  test.each([0, 1])('a print (%#) gets exactly one job with its metadata; finishing completes it', async (index) => {
    const { printer, control_url } = farm.printers[index];
    h = await startService(serviceOptions);
    const ws = await connectWs(h.base);
    await h.post('/api/v1/printers', printer);
    await connected(printer.id);
    const file = (await files(control_url)).find((f) => (index === 0 ? /\.3mf$/i : /\.bgcode$/i).test(f))!;
    await control(control_url, 'print', { file });

    const created = await ws.next((f) => f.type === 'job_auto_created', 10_000);
    expect(created.data).toEqual({
      id: expect.any(String),
      printer_id: printer.id,
      job_name: expect.any(String),
      filename: expect.stringMatching(/cube/i),
      status: 'running',
      start_time: expect.any(String),
      customer_info: { auto_created: true, discovery_time: expect.any(String), discovered_on_startup: false, ...(index === 0 ? { printer_start_time: expect.any(String) } : { printer_start_time: expect.any(String) }) },
    });
    const jobs = await jobsOf(printer.id);
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({ id: Number(created.data.id), status: 'printing' });
    const detail = (await h.get(`/api/v1/printers/${printer.id}`)).body;
    expect(detail.current_job).toMatchObject({ id: jobs[0].id, status: 'printing', progress: expect.any(Number) });

    await control(control_url, 'finish');
    const done = await until(async () => (await jobsOf(printer.id)).find((j) => j.status === 'completed'), 'completed');
    expect(done).toMatchObject({ progress: 100, end_time: expect.any(String), actual_duration: expect.any(Number) });
    expect(await jobsOf(printer.id)).toHaveLength(1);
    const stats = (await h.get(`/api/v1/printers/${printer.id}`)).body.statistics;
    expect(stats).toMatchObject({ total_jobs: 1, successful_jobs: 1, failed_jobs: 0 });
    expect(ws.frames.filter((f) => f.type === 'job_auto_created')).toHaveLength(1);
    await ws.close();
  });

  test.each([0, 1])('pause/resume keep the job (%#); a failed print fails it', async (index) => {
    const { printer, control_url } = farm.printers[index];
    h = await startService(serviceOptions);
    await h.post('/api/v1/printers', printer);
    await connected(printer.id);
    const file = (await files(control_url)).find((f) => (index === 0 ? /\.3mf$/i : /\.bgcode$/i).test(f))!;
    await control(control_url, 'print', { file });
    await until(async () => (await jobsOf(printer.id)).length === 1, 'job');
    await until(async () => (await jobsOf(printer.id))[0].status === 'printing' && (await h.get(`/api/v1/printers/${printer.id}`)).body.status === 'printing', 'printing');
    await control(control_url, 'pause');
    await until(async () => (await jobsOf(printer.id))[0].status === 'paused', 'paused');
    await control(control_url, 'resume');
    await until(async () => (await jobsOf(printer.id))[0].status === 'printing', 'printing again');
    await control(control_url, 'fail');
    await until(async () => (await jobsOf(printer.id))[0].status === 'failed', 'failed');
    expect(await jobsOf(printer.id)).toHaveLength(1);
  });

  test('cancelling the job stops the printer; an unreachable printer is 502 and the job stays', async () => {
    const { printer, control_url } = farm.printers[0];
    h = await startService(serviceOptions);
    await h.post('/api/v1/printers', printer);
    await connected(printer.id);
    await control(control_url, 'print', { file: (await files(control_url)).find((f) => /\.3mf$/i.test(f)) });
    const job = await until(async () => (await jobsOf(printer.id))[0], 'job');
    await until(async () => (await h.get(`/api/v1/printers/${printer.id}`)).body.status === 'printing', 'printing');

    await control(control_url, 'offline');
    await until(async () => (await h.get(`/api/v1/printers/${printer.id}`)).body.status === 'offline', 'offline');
    const refused = await h.post(`/api/v1/jobs/${job.id}/cancel`);
    expect(refused.status).toBe(502);
    expect(refused.body.error.code).toBe('PRINTER_OFFLINE');
    expect((await h.get(`/api/v1/jobs/${job.id}`)).body.status).toBe('printing');

    await control(control_url, 'online');
    await connected(printer.id);
    const cancelled = await h.post(`/api/v1/jobs/${job.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ id: job.id, status: 'cancelled', cancelled_at: expect.any(String) });
    await until(async () => {
      const s = (await (await fetch(`${control_url}/state`)).json()) as { status: string };
      return !/print|prepar|paus/i.test(s.status);
    }, 'printer stopped');
    expect((await jobsOf(printer.id)).map((j) => j.status)).toEqual(['cancelled']);
  });

  test('restarting the service three times mid-print keeps one job; a print found at start is marked discovered_on_startup', async () => {
    const { printer, control_url } = farm.printers[0];
    const dataDir = tempDir();
    h = await startService(serviceOptions, dataDir);
    await h.post('/api/v1/printers', printer);
    await connected(printer.id);
    await h.stop();
    // The print starts while the service is down: it is found at start.
    await control(control_url, 'print', { file: (await files(control_url)).find((f) => /\.3mf$/i.test(f)) });
    for (let i = 0; i < 3; i++) {
      h = await startService(serviceOptions, dataDir);
      await until(async () => (await jobsOf(printer.id)).length > 0, 'job after restart');
      await h.stop();
    }
    h = await startService(serviceOptions, dataDir);
    await until(async () => (await jobsOf(printer.id))[0]?.progress > 0, 'progress').catch(async (e) => {
      console.log(JSON.stringify(await jobsOf(printer.id)), JSON.stringify(await (await fetch(`${control_url}/state`)).json()).slice(0, 600));
      throw e;
    });
    const jobs = await jobsOf(printer.id);
    expect(jobs).toHaveLength(1);
    expect(jobs[0].customer_info).toMatchObject({ auto_created: true, discovered_on_startup: true });
  });
});
