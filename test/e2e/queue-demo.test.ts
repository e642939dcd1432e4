/**
 * The demo shows the queue at work: two copies of a file sliced for the farm's
 * P1S; the first starts on that simulated printer, the second waits, and once
 * the first print is done it waits for the plate to be cleared.
 */
import { Writable } from 'node:stream';
import { startEmbedded, type EmbeddedService } from '../../service/embedded';
import { control, until } from '../helpers/farm';
import { jsonRequest, tempDir } from '../helpers/service';
import { queueServiceOptions } from './queue-helpers';

describe('demo queue', () => {
  let demo: EmbeddedService;
  afterAll(() => demo?.close());

  test('a queued print goes to the free simulated printer; the next one waits for "plate cleared"', async () => {
    demo = await startEmbedded({
      ...queueServiceOptions,
      host: '127.0.0.1',
      port: 0,
      dataDir: tempDir(),
      env: {},
      logStream: new Writable({ write: (_c, _e, cb) => cb() }),
      updateCheckUrl: 'http://127.0.0.1:9/unreachable',
      demo: true,
      demoRestartMs: 0,
    });
    const get = async (p: string) => (await jsonRequest(demo.url.replace('localhost', '127.0.0.1'), 'GET', p)).body;
    const demoItem = async () => (await get('/api/v1/queue')).items[0];
    const first = await until(async () => {
      const i = await demoItem();
      return i?.dispatches.some((d: { state: string }) => d.state === 'printing') && i.waiting_reason ? i : null;
    }, 'the first copy printing', 30_000);
    const p1s = first.dispatches[0].printer_id;
    expect(first).toMatchObject({ name: 'Demo bracket', copies: 2, remaining: 1, waiting_reason: 'all compatible printers busy' });
    expect((await get(`/api/v1/printers/${p1s}`)).model).toBe('P1S');

    const sim = demo.farm!.printers.find((p) => p.printer.id === p1s)!;
    await control(sim.control_url, 'finish');
    const waiting = await until(async () => {
      const i = await demoItem();
      return i?.completed === 1 && i.waiting_reason?.startsWith('plate needs clearing') ? i : null;
    }, 'the second copy waiting for the plate', 20_000);
    expect(waiting.waiting_reason).toMatch(/^plate needs clearing on Bambu P1S/);
  }, 60_000);
});
