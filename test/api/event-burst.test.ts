/**
 * Bursts of events on the in-process bus, published in one turn of the event loop as the job tracker
 * publishes them: the API keeps answering on a kept-alive connection (a request sent on one while the event
 * loop was held past keepAliveTimeout, 5 s, was reset: ECONNRESET), and /ws clients get every frame in order.
 */
import type { JobUpdateEvent, PrinterStatusEvent } from '../../service/events';
import { nowIso } from '../../service/util/time';
import { prusa, startService, type Harness } from '../helpers/service';
import { connectWs, type Frame, type WsClient } from '../helpers/ws';
import { answeredMidBurst, burstReady, keptAlive, seedEndedJobs, watchBurst } from './event-burst-fixtures';

// A burst's work takes 7 to 11 s alone and several times that beside the rest of the suite on two cores: its
// own waits are bounded (60 s at most), the test's limit is above them.
jest.setTimeout(90_000);

/** The frames of `ws` that match, once there are `count` of them (counted as they come: a burst is 20 000 frames). */
function framesOf(ws: WsClient, match: (f: Frame) => boolean, count: number, ms = 20_000): Promise<Frame[]> {
  const have = () => ws.frames.filter(match);
  let n = have().length;
  if (n >= count) return Promise.resolve(have());
  return new Promise<Frame[]>((resolve, reject) => {
    // Registered after the helper's own listener: the frame just received is the last of ws.frames.
    const onMessage = () => {
      if (!match(ws.frames[ws.frames.length - 1]) || ++n < count) return;
      off();
      resolve(have());
    };
    const timer = setTimeout(() => {
      off();
      reject(new Error(`${n} of ${count} frames within ${ms} ms`));
    }, ms);
    const off = () => {
      clearTimeout(timer);
      ws.socket.off('message', onMessage);
    };
    ws.socket.on('message', onMessage);
  });
}

describe('event bursts on the bus', () => {
  let h: Harness;
  const opened: WsClient[] = [];
  let agent: ReturnType<typeof keptAlive> | undefined;
  afterEach(async () => {
    agent?.close();
    agent = undefined;
    for (const ws of opened.splice(0)) await ws.close();
    await h.close();
  });

  test('10 000 job progress updates and 2 000 printer reports in one turn: the API answers on its kept-alive connection, /ws readers get every frame in order', async () => {
    h = await startService();
    await h.post('/api/v1/printers', prusa('mk4-01', { is_active: false }));
    await h.post('/api/v1/printers', prusa('mk4-02', { is_active: false }));
    const job = await h.post('/api/v1/jobs', { printer_id: 'mk4-01', job_name: 'Gear', status: 'printing' });
    const everything = await connectWs(h.base);
    const following = await connectWs(h.base);
    const elsewhere = await connectWs(h.base);
    const stalled = await connectWs(h.base);
    opened.push(everything, following, elsewhere, stalled);
    following.send({ type: 'subscribe', printer_ids: ['mk4-01'] });
    elsewhere.send({ type: 'subscribe', printer_ids: ['mk4-02'] });
    await following.next((f) => f.type === 'subscribed');
    await elsewhere.next((f) => f.type === 'subscribed');
    // A dashboard that stopped reading: its frames wait in the kernel and the server's queue. The burst is about
    // 2.3 MB, under the 4 MiB a client may keep queued, so the stalled client is not dropped and gets every
    // frame once it reads again (a client kept over the limit is dropped: realtime.test.ts, ws-backlog.test.ts).
    const tcp = (stalled.socket as unknown as { _socket: { pause(): void; resume(): void } })._socket;
    tcp.pause();
    agent = keptAlive(h.base);
    expect((await agent.get('/api/v1/health')).status).toBe(200);

    const N = 10_000;
    const bus = h.service.context.bus;
    for (let i = 0; i < N; i++) {
      const progress = Math.floor((i * 100) / N);
      const update: JobUpdateEvent = { id: job.body.id, job_id: job.body.id, printer_id: 'mk4-01', change: 'progress', status: 'printing', progress, sequence: i };
      bus.emit('job_update', update);
      if (i % 5) continue;
      const report: PrinterStatusEvent = { printer_id: 'mk4-01', change: 'state', status: 'printing', connection_status: 'connected', progress, temperatures: { nozzle: 215, bed: 60 }, sequence: i };
      bus.emit('printer_status', report, true);
    }
    const after = await agent.get(`/api/v1/jobs/${job.body.id}`);
    expect(after).toMatchObject({ status: 200, reused: true });
    expect(JSON.parse(after.body)).toMatchObject({ id: job.body.id, status: 'printing' });

    const sequence = (type: string) => (f: Frame) => f.type === type && typeof f.data.sequence === 'number';
    const inOrder = [...Array(N).keys()];
    const everyFifth = inOrder.filter((i) => i % 5 === 0);
    for (const ws of [everything, following]) {
      expect((await framesOf(ws, sequence('job_update'), N)).map((f) => f.data.sequence)).toEqual(inOrder);
      expect((await framesOf(ws, sequence('printer_status'), N / 5)).map((f) => f.data.sequence)).toEqual(everyFifth);
    }
    tcp.resume();
    expect((await framesOf(stalled, sequence('job_update'), N)).map((f) => f.data.sequence)).toEqual(inOrder);
    expect((await framesOf(stalled, sequence('printer_status'), N / 5)).map((f) => f.data.sequence)).toEqual(everyFifth);
    // The client following the other printer got none of them, and still answers.
    elsewhere.send({ type: 'ping' });
    await elsewhere.next((f) => f.type === 'pong');
    expect(elsewhere.frames.filter((f) => f.data?.printer_id === 'mk4-01')).toEqual([]);
    expect(h.logs.some((l) => l.msg === 'dropping a /ws client that stopped reading')).toBe(false);
  });

  test('1 000 jobs completing in one turn (each read by notifications, filament usage and ideas): the event loop keeps turning, a /ws ping is answered mid-burst, the kept-alive connection still answers', async () => {
    h = await startService();
    await h.post('/api/v1/printers', prusa('mk4-01', { is_active: false }));
    const N = 1000;
    const ids: number[] = [];
    for (let i = 0; i < N; i++) {
      const at = nowIso();
      ids.push(await h.service.context.store.jobs.insert({ printer_id: 'mk4-01', job_name: `Part ${i}`, status: 'printing', created_at: at, updated_at: at }));
    }
    const ws = await connectWs(h.base);
    opened.push(ws);
    agent = keptAlive(h.base);
    expect((await agent.get('/api/v1/health')).status).toBe(200);

    // The ping is on its way to the service before the burst; the service reads it when its event loop turns.
    ws.send({ type: 'ping' });
    const bus = h.service.context.bus;
    for (const id of ids) bus.emit('job_update', { id, job_id: id, printer_id: 'mk4-01', change: 'status', status: 'completed', progress: 100 });
    const after = await agent.get('/api/v1/health');
    expect(after).toMatchObject({ status: 200, reused: true });

    // One print_finished notification per job, each once.
    const finished = (f: Frame) => f.type === 'notification' && f.data.kind === 'print_finished';
    const told = await framesOf(ws, finished, N, 60_000);
    expect(new Set(told.map((f) => (f.data.data as { job_id: number }).job_id))).toEqual(new Set(ids));
    // The database work of the burst took turns with the sockets: the pong left before the last notification
    // (with kysely's own mutex all of it ran first, in microtasks: the pong came after all 1 000).
    const pong = ws.frames.findIndex((f) => f.type === 'pong');
    expect(pong).toBeGreaterThanOrEqual(0);
    expect(ws.frames.slice(0, pong).filter(finished).length).toBeLessThan(N);
    expect((await agent.get('/api/v1/jobs?limit=1')).status).toBe(200);
  });

  test('1 000 jobs completing in one turn, each with a filament plan and an idea: a few statements wait for the database at a time, a request sent mid-burst is answered before the burst\'s work ends, and every notification, usage and idea happens once', async () => {
    h = await startService();
    const N = 1000;
    const ready = await burstReady(h, N);
    const seeded = ready.seeded;
    agent = ready.agent;
    const connection = h.service.context.store.connection;
    if (connection.dialect !== 'sqlite') throw new Error('this test reads the SQLite turns');
    const burst = watchBurst(h);
    try {
      connection.turns.mostWaiting = 0;
      await answeredMidBurst(burst, agent, seeded.ids);
      // The listeners kept a few statements waiting for the connection at a time, not one per job and listener.
      expect(connection.turns.mostWaiting).toBeLessThanOrEqual(16);
    } finally {
      burst.stop();
    }
    await burst.expectEachOnce(seeded);
  });

  test('a burst beyond the listeners\' backlogs loses nothing: the refused filament ends and ideas are caught up from the database, the refused notifications go out at once with the names their event carries and the printer name kept', async () => {
    h = await startService({ eventBacklogs: { notifications: 3, filamentUsage: 3, ideas: 3 } });
    await h.post('/api/v1/printers', prusa('mk4-01', { name: 'MK4 by the window', is_active: false }));
    const N = 40;
    const seeded = await seedEndedJobs(h, N);
    const burst = watchBurst(h);
    const names = new Map<number, string | null>();
    const offNames = h.service.context.bus.on('notification', (n) => names.set(Number(n.data.job_id), n.printer_name));
    try {
      burst.emit(seeded.ids);
      await burst.done(N);
    } finally {
      offNames();
      burst.stop();
    }
    await burst.expectEachOnce(seeded, true);
    // Each queue said it was full, once, and that it drained.
    for (const queue of ['notifications', 'filament usage', 'ideas following jobs']) {
      expect(h.logs.filter((l) => l.queue === queue && typeof l.msg === 'string' && l.msg.startsWith('background work backlog full'))).toHaveLength(1);
      expect(h.logs.filter((l) => l.queue === queue && l.msg === 'background work backlog drained')).toHaveLength(1);
    }
    // The first (one running, three waiting) and the rest alike name the printer: its name is kept from its
    // created frame, so those that may not read the database still have it (they named it by its id).
    expect(seeded.ids.map((id) => names.get(id))).toEqual(seeded.ids.map(() => 'MK4 by the window'));
  });

  test('ideas beyond their backlog are completed by the catch-up once it drained (no usage update follows their jobs to hear them again)', async () => {
    h = await startService({ eventBacklogs: { ideas: 3 } });
    await h.post('/api/v1/printers', prusa('mk4-01', { is_active: false }));
    const { ideaIds, ids } = await seedEndedJobs(h, 40, false);
    // Two run and three wait: 35 of the 40 completions are refused.
    for (const id of ids) h.service.context.bus.emit('job_update', { id, job_id: id, printer_id: 'mk4-01', change: 'status', status: 'completed', progress: 100 });
    await h.service.context.ideas.jobWork.idle();
    const moved = h.logs.filter((l) => l.msg === 'ideas: completed with their job').flatMap((l) => l.idea_ids as number[]);
    expect(moved.sort((a, b) => a - b)).toEqual(ideaIds);
    expect(h.logs.filter((l) => l.queue === 'ideas following jobs' && l.msg === 'background work backlog drained')).toMatchObject([{ refused: 35 }]);
  });
});
