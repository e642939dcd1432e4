/**
 * The setting monitoring_interval (spec 1, "polls printers every monitoring_interval seconds") applies to
 * printers already being monitored when it is changed through PUT /settings, not only to printers
 * connected after the change or after a restart.
 */
import { driverFactory } from '../../service/printers/drivers';
import { startFarm, type SimulatedFarm } from '../../service/simulators';
import { startService, type Harness } from '../helpers/service';
import { control, until } from '../helpers/farm';

describe('monitoring_interval changed at run time', () => {
  let farm: SimulatedFarm;
  let h: Harness;
  afterEach(async () => {
    await h?.close();
    await farm?.close();
  });

  test('a PrusaLink printer polled hourly is polled at the new interval as soon as the setting changes', async () => {
    farm = await startFarm({ bambu: 0, prusa: 1, speed: 20 });
    // No pollMs override: the poll cadence is the monitoring_interval setting.
    h = await startService({
      driverFactory: driverFactory({ backoffBaseMs: 100, backoffMaxMs: 1000 }),
      fleet: { commandTimeoutMs: 3000, connectTimeoutMs: 4000 },
    });
    expect((await h.put('/api/v1/settings', { monitoring_interval: 3600 })).status).toBe(200);
    const { printer, control_url } = farm.printers[0];
    expect((await h.post('/api/v1/printers', printer)).status).toBe(201);
    await until(async () => (await h.get(`/api/v1/printers/${printer.id}`)).body.status === 'online', 'printer online');

    // The printer starts a print; polled hourly, the service would not see it for an hour.
    const state = (await (await fetch(`${control_url}/state`)).json()) as { files: string[] };
    await control(control_url, 'print', { file: state.files.find((f) => /\.bgcode$/i.test(f)) });
    expect((await h.put('/api/v1/settings', { monitoring_interval: 5 })).status).toBe(200);
    const seen = await until(async () => {
      const body = (await h.get(`/api/v1/printers/${printer.id}`)).body;
      return body.status === 'printing' ? body : null;
    }, 'printing seen after the interval change');
    expect(seen.current_job).toMatchObject({ progress: expect.any(Number) });
  }, 30_000);
});
