/**
 * How many statements a listener of the bus runs for a burst of job ends, on a real store (SQLite and
 * PostgreSQL), each listener alone on its bus so that every statement counted is its own: the notifier needs
 * none per job when the events carry the job's name (one read of the printer's name for the burst), and a
 * burst's ideas move in a few statements (the completions waiting together), none when the jobs' usage follows.
 */
import pino from 'pino';
import type { Store } from '../../service/db';
import { EventBus, type JobUpdateEvent } from '../../service/events';
import { IdeaService } from '../../service/ideas/service';
import type { Notification } from '../../service/notify/kinds';
import { Notifier } from '../../service/notify/notifier';
import { SettingsService } from '../../service/settings';
import { nowIso } from '../../service/util/time';
import { dialectStore } from '../helpers/dialect-store';
import { describeDialects } from '../helpers/dialects';

// A burst's work takes 7 to 11 s alone and several times that beside the rest of the suite on two cores: its
// own waits are bounded (60 s at most), the test's limit is above them.
jest.setTimeout(90_000);

const log = pino({ level: 'silent' });
const N = 200;

/** Statements run on `store` from now on, by their text (a statement is told once it ran). */
function countStatements(store: Store) {
  const texts: string[] = [];
  const listener = (sql: string) => void texts.push(sql);
  store.connection.queryListeners.add(listener);
  return { texts, stop: () => store.connection.queryListeners.delete(listener) };
}

async function seed(store: Store, n: number): Promise<{ ids: number[]; ideaIds: number[] }> {
  const at = nowIso();
  await store.printers.insert({
    id: 'mk4-01', name: 'MK4 by the window', type: 'prusa_core', model: 'MK4', ip_address: '127.0.0.1', serial_number: null, access_code: null, is_active: false,
    status: 'offline', connection_status: 'disconnected', status_message: null, firmware_version: null, last_seen: null, created_at: at, updated_at: at,
    mqtt_port: null, ftps_port: null, http_port: null, power_watts: null, auth_method: null,
  });
  const ids: number[] = [];
  const ideaIds: number[] = [];
  for (let i = 0; i < n; i++) {
    const id = await store.jobs.insert({ printer_id: 'mk4-01', job_name: `Part ${i}`, status: 'completed', created_at: at, updated_at: at });
    ids.push(id);
    const idea = { title: `Idea ${i}`, creator_name: null, source_platform: 'manual', source_url: null, model_id: null, thumbnail_url: null, description: null, file_info: null, notes: null };
    const state = { tags: [], is_business: false, status: 'printing', job_id: id, metadata_refresh_needed: false, metadata_fetched_at: null, metadata_attempted_at: null };
    ideaIds.push(await store.ideas.insert({ ...idea, ...state, status_changed_at: at, created_at: at, updated_at: at }));
  }
  return { ids, ideaIds };
}

/** A job's end as the job tracker publishes it (with the job's name unless `named` is false). */
const ended = (id: number, named = true): JobUpdateEvent => ({ id, job_id: id, printer_id: 'mk4-01', change: 'status', status: 'completed', progress: 100, ...(named ? { job_name: `Part ${id}` } : {}) });

describeDialects('listeners of a burst of job ends', (db) => {
  const store = dialectStore(db);
  const closing: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const close of closing.splice(0)) await close();
  });

  test(`${N} job ends that carry their names: the notifier reads the printer's name once and no job; a rename announced is used without a read; an end without a name reads its job`, async () => {
    const { ids } = await seed(store, N);
    const bus = new EventBus();
    const settings = await SettingsService.load(store.settings, {});
    const told: Notification[] = [];
    bus.on('notification', (n) => told.push(n));
    const notifier = new Notifier({ bus, store, settings, log, attentionOf: () => [], attentionTexts: () => ({}), deliver: () => undefined });
    closing.push(() => notifier.close());
    // The second job was lost to a power loss: the job tracker kept why in its customer_info.
    await store.jobs.update(ids[1], { customer_info: { auto_created: true, end_reason: 'The print was interrupted' } });
    const statements = countStatements(store);
    try {
      for (const id of ids) bus.emit('job_update', ended(id));
      await notifier.idle();
      expect(told.map((n) => [n.data.job_id, n.data.job_name, n.printer_name])).toEqual(ids.map((id) => [id, `Part ${id}`, 'MK4 by the window']));
      expect(statements.texts).toHaveLength(1);
      expect(statements.texts[0]).toMatch(/from "printers"/);

      // The printer renamed (the registry's frame carries the name): the next notification says it, reading nothing.
      bus.emit('printer_status', { printer_id: 'mk4-01', change: 'updated', name: 'MK4 by the door', status: 'offline', connection_status: 'disconnected', progress: 0, temperatures: { nozzle: 0, bed: 0 } });
      const [first, second] = ids;
      bus.emit('job_update', { ...ended(first), status: 'failed' });
      await notifier.idle();
      expect(told[N]).toMatchObject({ kind: 'print_failed', printer_name: 'MK4 by the door', data: { job_id: first, job_name: `Part ${first}` } });
      expect(statements.texts).toHaveLength(1);

      // An event without the job's name (from elsewhere than the tracker or the jobs API) still reads it, and the reason kept.
      bus.emit('job_update', { ...ended(second, false), status: 'failed' });
      await notifier.idle();
      expect(told[N + 1]).toMatchObject({ kind: 'print_failed', message: 'Part 1 failed on MK4 by the door: The print was interrupted', data: { job_id: second, job_name: 'Part 1', end_reason: 'The print was interrupted' } });
      expect(statements.texts.slice(1)).toEqual([expect.stringMatching(/from "jobs"/)]);
    } finally {
      statements.stop();
    }
  });

  test("beyond the notifier's backlog: a printer whose name was announced is named by it (nothing read), one never announced by its id", async () => {
    await seed(store, 0);
    const bus = new EventBus();
    const settings = await SettingsService.load(store.settings, {});
    const logged: Array<{ msg?: string }> = [];
    const logs = pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line)) });
    const told: Notification[] = [];
    bus.on('notification', (n) => told.push(n));
    const notifier = new Notifier({ bus, store, settings, log: logs, attentionOf: () => [], attentionTexts: () => ({}), deliver: () => undefined, maxWaiting: 1 });
    closing.push(() => notifier.close());
    bus.emit('printer_status', { printer_id: 'mk4-01', change: 'created', name: 'MK4 by the window', status: 'offline', connection_status: 'disconnected', progress: 0, temperatures: { nozzle: 0, bed: 0 } });
    const ids = Array.from({ length: 10 }, (_, i) => i + 1);
    for (const id of ids) bus.emit('job_update', { ...ended(id), printer_id: id % 2 ? 'mk4-01' : 'mk4-02' });
    await notifier.idle();
    expect(logged.some((l) => l.msg?.startsWith('background work backlog full'))).toBe(true);
    expect(told.map((n) => [n.data.job_id, n.printer_name]).sort((a, b) => Number(a[0]) - Number(b[0]))).toEqual(ids.map((id) => [id, id % 2 ? 'MK4 by the window' : 'mk4-02']));
  });

  test(`${N} job ends, then their filament usage updates (as filament usage sends them once settled): the ideas move in a few statements, none for the usage updates`, async () => {
    const { ids, ideaIds } = await seed(store, N);
    const bus = new EventBus();
    const ideas = new IdeaService(store, bus, log, { metadataRetryMs: 0 });
    ideas.start();
    closing.push(() => ideas.close());
    const statements = countStatements(store);
    try {
      for (const id of ids) bus.emit('job_update', ended(id));
      await ideas.jobWork.idle();
      // Each job's usage is settled later, and announced with the job's status (completed) and its grams.
      for (const id of ids) bus.emit('job_update', { id, job_id: id, printer_id: 'mk4-01', change: 'updated', status: 'completed', progress: 100, filament_usage: [{ spool_id: null, slot: 0, material: 'PLA', color: null, grams: 10, cost: 0.2 }] });
      await ideas.jobWork.idle();
      // The two tasks that start at once follow their own job; the next one all the completions waiting with it.
      expect(statements.texts.filter((t) => /^update "ideas"/.test(t))).toHaveLength(3);
      expect(statements.texts).toHaveLength(3);
    } finally {
      statements.stop();
    }
    expect(new Set((await Promise.all(ideaIds.map((id) => store.ideas.get(id)))).map((i) => i?.status))).toEqual(new Set(['completed']));
  });
});
