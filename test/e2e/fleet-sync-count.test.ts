/**
 * One printer change brings its driver in line once. A deactivation used to ask the fleet to sync twice (once
 * before storing "deactivated", again at the end of every edit): the second sync re-read the record and could
 * act on a change made in between by another request (stop or start the driver a second time). Counted through
 * the real fleet (its sync called through) and a real driver per start against a simulated printer.
 */
import type { DriverFactory } from '../../service/printers/fleet';
import { startService, type Harness } from '../helpers/service';
import { until } from '../helpers/farm';
import { bambuSim, queueServiceOptions, type SimPrinter } from './queue-helpers';

describe('fleet: one sync per printer change', () => {
  let printer: SimPrinter;
  let h: Harness;
  afterEach(async () => {
    await h?.close();
    await printer?.close();
  });

  test('deactivating a printer syncs the fleet once and stops its driver once; reactivating starts one', async () => {
    printer = await bambuSim('x1c-s1', 'X1C #S1');
    const real = queueServiceOptions.driverFactory as DriverFactory;
    const drivers = { started: 0, closed: 0 };
    const counting: DriverFactory = (type, config) => {
      const driver = real(type, config);
      drivers.started++;
      const close = driver.close.bind(driver);
      driver.close = () => {
        drivers.closed++;
        return close();
      };
      return driver;
    };
    h = await startService({ ...queueServiceOptions, driverFactory: counting });
    expect((await h.post('/api/v1/printers', printer.body)).status).toBe(201);
    await until(async () => (await h.get('/api/v1/printers/x1c-s1')).body.connection_status === 'connected', 'connected');

    const fleet = h.service.context.fleet;
    const sync = fleet.sync.bind(fleet);
    const synced: string[] = [];
    fleet.sync = (id) => {
      synced.push(id);
      return sync(id);
    };
    expect((await h.put('/api/v1/printers/x1c-s1', { is_active: false })).status).toBe(200);
    expect(synced).toEqual(['x1c-s1']);
    expect(drivers).toEqual({ started: 1, closed: 1 });
    expect((await h.get('/api/v1/printers/x1c-s1')).body).toMatchObject({ is_active: false, status: 'offline', connection_status: 'disconnected' });

    expect((await h.put('/api/v1/printers/x1c-s1', { is_active: true })).status).toBe(200);
    expect(synced).toEqual(['x1c-s1', 'x1c-s1']);
    await until(async () => (await h.get('/api/v1/printers/x1c-s1')).body.connection_status === 'connected', 'connected again');
    expect(drivers).toEqual({ started: 2, closed: 1 });
  });
});
