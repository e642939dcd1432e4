/**
 * The config node's embedded service on a data directory another service
 * holds: a clear error on Catch nodes and the status (code DATA_DIR_LOCKED),
 * never a crash of Node-RED.
 */
import { startService } from '../helpers/service';
import { collect, flow, helper, NODES, statusOf, tempDir } from '../helpers/node-red';

describe('printfarm-server on a data directory in use', () => {
  beforeEach(async () => {
    await helper.startServer();
  });
  afterEach(async () => {
    await helper.unload();
    await helper.stopServer();
  });

  test('the embedded service is refused with DATA_DIR_LOCKED on Catch and status; the other service goes on', async () => {
    const dir = tempDir();
    const holder = await startService({}, dir);
    try {
      await helper.load(
        NODES,
        flow(
          [
            { id: 'a', type: 'printfarm-printer', server: 'srv', printer: '', register: false, wires: [] },
            { id: 'c1', type: 'catch', scope: null, uncaught: false, wires: [['caught']] },
            { id: 'caught', type: 'helper' },
          ],
          { dataDir: dir },
        ),
      );
      const err = await collect(helper.getNode('caught')).next();
      expect(err.error.message).toMatch(/^Printfarm service did not start: the data directory .* is in use by another Printfarm service \(pid \d+/);
      expect(err.payload).toMatchObject({ code: 'DATA_DIR_LOCKED' });
      expect(statusOf(helper.getNode('a'))).toEqual({ fill: 'red', shape: 'ring', text: 'error' });
      expect((await holder.get('/api/v1/health')).status).toBe(200);
    } finally {
      await holder.close();
    }
  });
});
