/**
 * A printer's current_job (spec 2, Printer) is the job of the print the printer runs: not a job of another
 * file that still shows printing (one made by hand), and none while a connected printer prints nothing.
 */
import { startFarm, type SimulatedFarm } from '../../service/simulators';
import { startService, type Harness } from '../helpers/service';
import { control, quickDrivers, simState, until } from '../helpers/farm';

describe('current_job of a printer', () => {
  let farm: SimulatedFarm;
  let h: Harness;
  afterEach(async () => {
    await h?.close();
    await farm?.close();
  });

  test('shows the running print, not a newer job of another file; a connected idle printer has none', async () => {
    farm = await startFarm({ bambu: 0, prusa: 1, speed: 20 });
    h = await startService(quickDrivers());
    const { printer, control_url } = farm.printers[0];
    await h.post('/api/v1/printers', printer);
    await until(async () => (await h.get(`/api/v1/printers/${printer.id}`)).body.status === 'online', 'online');
    const detail = async () => (await h.get(`/api/v1/printers/${printer.id}`)).body;
    const listed = async () => (await h.get('/api/v1/printers')).body.printers.find((p: { id: string }) => p.id === printer.id);

    // Idle and connected, with a job made by hand that says printing: nothing runs on the printer.
    const other = (await h.post('/api/v1/jobs', { printer_id: printer.id, job_name: 'Bracket', filename: 'bracket_v2.gcode', status: 'printing' })).body;
    expect((await detail()).current_job).toBeNull();
    expect((await listed()).current_job).toBeNull();

    await control(control_url, 'print', { file: (await simState(control_url)).files.find((f) => /\.bgcode$/i.test(f)) });
    const running = await until(async () => {
      const jobs = (await h.get(`/api/v1/jobs?printer_id=${printer.id}`)).body.jobs as { id: number; customer_info: { auto_created?: boolean } | null }[];
      return jobs.find((j) => j.customer_info?.auto_created === true);
    }, 'auto-created job');
    await until(async () => (await detail()).status === 'printing', 'printing');
    // A newer job of another file, made by hand while the print runs.
    const newer = (await h.post('/api/v1/jobs', { printer_id: printer.id, job_name: 'Hinge', filename: 'hinge.gcode', status: 'printing' })).body;
    expect(newer.id).toBeGreaterThan(running.id);
    expect((await detail()).current_job).toMatchObject({ id: running.id, status: 'printing' });
    expect((await listed()).current_job).toMatchObject({ id: running.id });
    expect(other.id).not.toBe(running.id);
  }, 30_000);
});
