/**
 * The file of a print is the file the printer prints, not another variant of the same name: a Prusa
 * holding cube.gcode and cube.bgcode that prints the .gcode gets a job whose file_info names the .gcode
 * (spec 2, Job file_info), only the .gcode lists it in related_jobs (spec 2, File), and POST /files/download
 * {printer_id} fetches the .gcode (spec 4.4).
 */
import { startFarm, type SimulatedFarm } from '../../service/simulators';
import { startService, type Harness } from '../helpers/service';
import { control, quickDrivers, simState, until } from '../helpers/farm';

interface CatalogFile {
  id: string;
  filename: string;
  file_size: number;
  printer_path: string;
}

describe('the printed file among variants of one name', () => {
  let farm: SimulatedFarm;
  let h: Harness;
  afterEach(async () => {
    await h?.close();
    await farm?.close();
  });

  test('a Prusa printing the .gcode: its job and its current-job download name the .gcode, not the .bgcode', async () => {
    farm = await startFarm({ bambu: 0, prusa: 1, speed: 20 });
    h = await startService({
      ...quickDrivers(),
      downloads: { attempts: 2, retryDelayMs: 100, frameIntervalMs: 50 },
    });
    const { printer, control_url } = farm.printers[0];
    await h.post('/api/v1/printers', printer);
    const files = await until(async () => {
      const list = (await h.get(`/api/v1/files?printer_id=${printer.id}`)).body.files as CatalogFile[];
      return list.some((f) => f.filename.endsWith('.gcode')) && list.some((f) => f.filename.endsWith('.bgcode')) ? list : null;
    }, 'both variants listed');
    const gcode = files.find((f) => f.filename.endsWith('.gcode'))!;
    const bgcode = files.find((f) => f.filename.endsWith('.bgcode'))!;
    expect(gcode.filename.replace(/\.gcode$/, '')).toBe(bgcode.filename.replace(/\.bgcode$/, ''));
    expect(gcode.file_size).not.toBe(bgcode.file_size);

    await control(control_url, 'print', { file: (await simState(control_url)).files.find((f) => /\.gcode$/i.test(f)) });
    const job = await until(async () => (await h.get(`/api/v1/jobs?printer_id=${printer.id}`)).body.jobs[0], 'job');
    const detail = (await h.get(`/api/v1/jobs/${job.id}`)).body;
    expect(detail.file_info).toMatchObject({ path: gcode.printer_path, size: gcode.file_size, filename: gcode.filename });
    // The file detail's related_jobs: the job printed the .gcode, not the .bgcode.
    expect((await h.get(`/api/v1/files/${gcode.id}`)).body.related_jobs.map((j: { id: number }) => j.id)).toEqual([job.id]);
    expect((await h.get(`/api/v1/files/${bgcode.id}`)).body.related_jobs).toEqual([]);

    const fetched = await h.post('/api/v1/files/download', { printer_id: printer.id });
    expect(fetched.status).toBe(200);
    expect(fetched.body).toMatchObject({ status: 'success', file_id: gcode.id, filename: gcode.filename });
  }, 30_000);
});
