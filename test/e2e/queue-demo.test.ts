/**
 * The demo shows the queue at work: two copies of a file sliced for the farm's
 * P1S; the first starts on that simulated printer, the second waits, and once
 * the first print is done it waits for the plate to be cleared.
 */
import { Writable } from 'node:stream';
import { startEmbedded, type EmbeddedService } from '../../service/embedded';
import { control, simState, until } from '../helpers/farm';
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

describe('demo printers kept busy', () => {
  let demo: EmbeddedService;
  afterAll(() => demo?.close());

  // The job tracker makes one new job per printer a minute and warns about the rest: the demo must not
  // start a printer again within that minute (npm run demo logged "... did not become a job" warnings).
  test('a printer that just finished is not started again at once', async () => {
    const logs: { msg?: string; printer_id?: string }[] = [];
    demo = await startEmbedded({
      ...queueServiceOptions,
      host: '127.0.0.1',
      port: 0,
      dataDir: tempDir(),
      env: {},
      logLevel: 'warn',
      logStream: new Writable({
        write: (c, _e, cb) => {
          for (const line of String(c).split('\n')) if (line.trim()) logs.push(JSON.parse(line));
          cb();
        },
      }),
      updateCheckUrl: 'http://127.0.0.1:9/unreachable',
      demo: true,
      demoRestartMs: 50,
    });
    const first = demo.farm!.printers[0];
    const api = demo.url.replace('localhost', '127.0.0.1');
    await until(async () => (await jsonRequest(api, 'GET', `/api/v1/printers/${first.printer.id}`)).body.status === 'printing', 'the first demo printer printing', 20_000);
    await control(first.control_url, 'finish');
    // Every 50 ms one printer is picked: in 3 s the finished one is picked about 10 times.
    await new Promise((r) => setTimeout(r, 3000));
    expect((await simState(first.control_url)).status).not.toMatch(/running|printing|prepare/i);
    expect(logs.filter((l) => /did not become a job/.test(l.msg ?? ''))).toEqual([]);
  }, 60_000);

  // A printing card that says "Plate needs clearing" (with its button) made the demo look broken.
  test('a printer started again has its plate cleared first, as a person would; the queue\'s printer waits for its plate', async () => {
    await demo?.close();
    demo = await startEmbedded({
      ...queueServiceOptions,
      host: '127.0.0.1',
      port: 0,
      dataDir: tempDir(),
      env: {},
      logStream: new Writable({ write: (_c, _e, cb) => cb() }),
      updateCheckUrl: 'http://127.0.0.1:9/unreachable',
      demo: true,
      // A restart round a second: the plate that needs clearing shows for up to that long before the demo clears
      // it (at 50 ms the state could come and go between two polls under load, ci82).
      demoRestartMs: 1000,
      demoRestMs: 0,
    });
    const api = demo.url.replace('localhost', '127.0.0.1');
    const printer = async (id: string) => (await jsonRequest(api, 'GET', `/api/v1/printers/${id}`)).body as { status: string; plate_state: string };
    const first = demo.farm!.printers[0];
    await until(async () => (await printer(first.printer.id)).status === 'printing', 'the first demo printer printing', 20_000);
    await control(first.control_url, 'finish');
    await until(async () => (await printer(first.printer.id)).plate_state === 'needs_clearing', 'its plate to need clearing', 20_000);
    await until(async () => (await printer(first.printer.id)).status === 'printing', 'the demo to start it again', 20_000);
    expect((await printer(first.printer.id)).plate_state).toBe('clear');

    // The queue's printer (the second Bambu) finishes its copy and keeps its plate for "Plate cleared".
    const target = demo.farm!.printers.filter((p) => p.printer.type === 'bambu_lab')[1];
    await until(async () => (await printer(target.printer.id)).status === 'printing', 'the queue\'s printer printing', 20_000);
    await control(target.control_url, 'finish');
    await until(async () => (await printer(target.printer.id)).plate_state === 'needs_clearing', 'the queue printer\'s plate to need clearing', 20_000);
    await new Promise((r) => setTimeout(r, 2000));
    expect(await printer(target.printer.id)).toMatchObject({ plate_state: 'needs_clearing' });
    expect((await printer(target.printer.id)).status).not.toBe('printing');
  }, 90_000);
});
