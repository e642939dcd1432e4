/**
 * What a request costs the database, counted instead of timed: a list or a
 * dashboard's poll must send as many statements for a farm of 25 printers (and
 * 25 jobs, spools, files, queue items) as for one of 5. A statement per row (a
 * queued item's file read on its own, a printer's job asked one by one) is what
 * makes a page slow at hundreds of printers and millions of jobs, and shows
 * here as a count that grows.
 */
import type { Fleet } from '../../service/printers/fleet';
import { FactsCache } from '../../service/queue/facts-cache';
import { newDispatch } from '../../service/queue/queued-start';
import { QueueSchedule } from '../../service/queue/schedule-service';
import { bambu3mf } from '../../service/simulators/seed-files';
import { describeDialects } from '../helpers/dialects';
import { bambu, startService, uploadFile, type Harness } from '../helpers/service';

const SMALL = 5;
const LARGE = 25;

/**
 * The GET requests a dashboard or an automation makes (p-0 exists at both sizes). Settings are answered from
 * memory, the statistics overview and the filament statistics on the reader's own connection
 * (service/db/read-worker.ts): not counted here.
 */
const REQUESTS = [
  '/api/v1/attention',
  '/api/v1/printers',
  '/api/v1/printers/p-0',
  '/api/v1/printers/p-0/maintenance',
  '/api/v1/jobs',
  '/api/v1/jobs?limit=100&status=printing',
  '/api/v1/files',
  '/api/v1/files/cleanup/candidates',
  '/api/v1/queue',
  '/api/v1/queue?limit=100',
  '/api/v1/queue/schedule',
  '/api/v1/spools',
  '/api/v1/statistics/printers/p-0',
  '/api/v1/health',
  '/api/v1/system/info',
  '/api/v1/usage-stats/local',
];

describeDialects('the statements of a request do not grow with the farm', (db) => {
  let h: Harness;
  let made = 0;
  /** Per request: the statements it sent at SMALL and at LARGE rows. */
  const sent = new Map<string, string[][]>();
  /** The dispatcher's pass over the queue at SMALL and at LARGE items. */
  const pass: string[][] = [];
  /** A move of the last queued item to the top (the dashboard's drag and drop) at SMALL and at LARGE items. */
  const moves: string[][] = [];

  /** The SQL `run` makes the store send, once the dispatcher has no pass under way (its statements are not the request's). */
  async function statementsOf(run: () => Promise<unknown>): Promise<string[]> {
    await h.service.context.dispatcher.idle();
    const seen: string[] = [];
    // The ids of an `in (...)` are one list however long: the same statement at 5 rows and at 25.
    const listener = (sql: string) => seen.push(sql.replace(/\((?:\?|\$\d+)(?:, (?:\?|\$\d+))*\)/g, '(...)'));
    h.service.context.store.connection.queryListeners.add(listener);
    try {
      await run();
    } finally {
      h.service.context.store.connection.queryListeners.delete(listener);
    }
    // Statements sent at once (Promise.all) come in either order.
    return seen.sort();
  }

  /** n printers, each with a job, a spool and a queued item of a file of its own. */
  async function grow(n: number) {
    for (let i = made; i < n; i++) {
      const pid = `p-${i}`;
      expect((await h.post('/api/v1/printers', bambu(pid, { is_active: false, serial_number: `01S00A00000${String(i).padStart(4, '0')}` }))).status).toBe(201);
      const job = { printer_id: pid, job_name: `Part ${i}`, filename: `part_${i}.3mf`, status: i % 2 ? 'printing' : 'queued', start_time: '2026-03-11T08:00:00Z' };
      expect((await h.post('/api/v1/jobs', job)).status).toBe(201);
      expect((await h.post('/api/v1/spools', { material: 'PLA', name: `Spool ${i}`, remaining_weight_g: 500 })).status).toBe(201);
      const file = await uploadFile(h.base, `Part ${i}.gcode.3mf`, bambu3mf({ model: 'X1C' }));
      expect((await h.post('/api/v1/queue', { file_id: file, copies: 1 })).status).toBe(201);
    }
    made = n;
  }

  async function measure() {
    for (const url of REQUESTS) {
      const seen = await statementsOf(async () => expect((await h.get(url)).status).toBe(200));
      sent.set(url, [...(sent.get(url) ?? []), seen]);
    }
    pass.push(
      await statementsOf(async () => {
        h.service.context.dispatcher.wake('test');
        await h.service.context.dispatcher.idle();
      }),
    );
    // The store's move itself: the request's wake of the dispatcher starts a pass that is not the move's.
    const { store } = h.service.context;
    const last = (await store.queue.itemsIn(['queued'])).at(-1)!;
    moves.push(await statementsOf(() => store.queue.moveItem(last.id, last.priority, () => 0, new Date().toISOString())));
  }

  beforeAll(async () => {
    // No timers of their own that write meanwhile (the trending cache's refresh, the ideas' metadata retry).
    h = await startService({ ideas: { metadataRetryMs: 0, trending: { checkEveryMs: 0 } }, ...(await db.options()) });
    await grow(SMALL);
    await measure();
    await grow(LARGE);
    await measure();
  }, 120_000);
  afterAll(() => h.close());

  test.each(REQUESTS)('GET %s', (url) => {
    const [small, large] = sent.get(url)!;
    expect(small.length).toBeGreaterThan(0);
    expect({ url, count: large.length, statements: large }).toEqual({ url, count: small.length, statements: small });
  });

  test("the filament statistics aggregate the period's usage off the main connection (the SQLite one holds the event loop)", async () => {
    for (const period of ['week', 'year']) {
      const seen = await statementsOf(async () => expect((await h.get(`/api/v1/statistics/filament?period=${period}`)).status).toBe(200));
      expect(seen.filter((sql) => /from "filament_usage"/.test(sql))).toEqual([]);
    }
  });

  test('a dispatcher pass reads the queued items\' files in one statement, not one per item', () => {
    const [small, large] = pass;
    expect(small.filter((sql) => /from "files"/.test(sql))).toHaveLength(1);
    expect({ count: large.length, statements: large }).toEqual({ count: small.length, statements: small });
  });

  test('a move writes the new order of its priority in one statement, not one per item', () => {
    const [small, large] = moves;
    expect(large.filter((sql) => /^update "queue_items"/.test(sql))).toHaveLength(1);
    expect(large.length).toBe(small.length);
  });
});

describeDialects('the schedule of a farm whose printers each have a copy on its way', (db) => {
  let h: Harness;
  afterAll(() => h.close());

  /**
   * GET /queue/schedule's statements with n printers, each connected (as the schedule sees it) and sent a copy
   * that it does not report printing yet: the schedule reads that copy's item and file to know when it is free.
   */
  async function scheduleStatements(n: number): Promise<string[]> {
    const { store, settings, dispatcher } = h.service.context;
    const ids: string[] = [];
    for (let i = ids.length; i < n; i++) {
      const id = `sent-${n}-${i}`;
      expect((await h.post('/api/v1/printers', bambu(id, { is_active: true, serial_number: `01S00B${String(n).padStart(3, '0')}${String(i).padStart(4, '0')}` }))).status).toBe(201);
      const file = await uploadFile(h.base, `Sent ${n} ${i}.gcode.3mf`, bambu3mf({ model: 'X1C' }));
      const item = (await h.post('/api/v1/queue', { file_id: file, copies: 1 })).body;
      const stored = (await store.queue.getItem(item.id))!;
      expect(await store.queue.claim(newDispatch(stored, { id, type: 'bambu_lab' }, 'Sent.gcode.3mf', { file_id: file, plate: 1 }, 1))).toBe(true);
      ids.push(id);
    }
    // The service's printers never answer here: this fleet says they are connected and idle.
    const fleet = { connectedPrinters: () => ids, stateOf: () => undefined } as unknown as Fleet;
    const schedule = new QueueSchedule(store, fleet, settings, new FactsCache(), dispatcher);
    await dispatcher.idle();
    const seen: string[] = [];
    const listener = (sql: string) => seen.push(sql.replace(/\((?:\?|\$\d+)(?:, (?:\?|\$\d+))*\)/g, '(...)'));
    store.connection.queryListeners.add(listener);
    try {
      const built = await schedule.build();
      expect(built.printers.filter((p) => ids.includes(p.id))).toHaveLength(n);
    } finally {
      store.connection.queryListeners.delete(listener);
    }
    // Each test's printers are removed again: the next size starts from none.
    for (const id of ids) expect((await h.del(`/api/v1/printers/${id}`)).status).toBe(200);
    return seen.sort();
  }

  test("reads the copies' items and files in one statement each, not one per printer", async () => {
    h = await startService({ ideas: { metadataRetryMs: 0, trending: { checkEveryMs: 0 } }, ...(await db.options()) });
    const small = await scheduleStatements(SMALL);
    const large = await scheduleStatements(LARGE);
    expect({ count: large.length, statements: large }).toEqual({ count: small.length, statements: small });
  }, 120_000);
});
