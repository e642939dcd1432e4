/**
 * POST /jobs/{job_id}/cancel (spec 3: an active job becomes cancelled) stops the printer only when the job is
 * the print the printer is running: cancelling an older job of the same printer that still shows printing
 * (one made by hand for another file) must not stop the print that runs now.
 */
import { startFarm, type SimulatedFarm } from '../../service/simulators';
import { startService, type Harness } from '../helpers/service';
import { control, quickDrivers, simState, until } from '../helpers/farm';

describe('cancelling a job that is not the running print', () => {
  let farm: SimulatedFarm;
  let h: Harness;
  afterEach(async () => {
    await h?.close();
    await farm?.close();
  });

  test('a stale job of another file is cancelled and the print goes on; cancelling the running job stops it', async () => {
    farm = await startFarm({ bambu: 0, prusa: 1, speed: 20 });
    h = await startService(quickDrivers());
    const { printer, control_url } = farm.printers[0];
    await h.post('/api/v1/printers', printer);
    await until(async () => (await h.get(`/api/v1/printers/${printer.id}`)).body.connection_status === 'connected', 'connected');
    const stale = (await h.post('/api/v1/jobs', { printer_id: printer.id, job_name: 'Bracket', filename: 'bracket_v2.gcode', status: 'printing' })).body;

    await control(control_url, 'print', { file: (await simState(control_url)).files.find((f) => /\.bgcode$/i.test(f)) });
    const running = await until(async () => {
      const jobs = (await h.get(`/api/v1/jobs?printer_id=${printer.id}`)).body.jobs as { id: number; customer_info: { auto_created?: boolean } | null }[];
      return jobs.find((j) => j.customer_info?.auto_created === true);
    }, 'auto-created job');
    await until(async () => (await h.get(`/api/v1/printers/${printer.id}`)).body.status === 'printing', 'printing');

    const cancelled = await h.post(`/api/v1/jobs/${stale.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe('cancelled');
    expect((await simState(control_url)).status).toMatch(/print/i);
    expect((await h.get(`/api/v1/jobs/${running.id}`)).body.status).toBe('printing');

    expect((await h.post(`/api/v1/jobs/${running.id}/cancel`)).status).toBe(200);
    await until(async () => !/print|prepar|paus/i.test((await simState(control_url)).status), 'printer stopped');
  }, 30_000);
});
