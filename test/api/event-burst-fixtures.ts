/**
 * What the burst tests share: a kept-alive HTTP connection, jobs that ended with a filament plan and an idea
 * each (so that the notifier, filament usage and ideas all have work per job), and the checks that every
 * notification, usage and idea move of a burst happened exactly once.
 */
import http from 'node:http';
import { nowIso } from '../../service/util/time';
import { until } from '../helpers/farm';
import { prusa, type Harness } from '../helpers/service';

/** GETs over one kept-alive connection: the answer, and whether the connection was one used before. */
export function keptAlive(base: string) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const get = (path: string) =>
    new Promise<{ status: number; body: string; reused: boolean }>((resolve, reject) => {
      const req = http.get(base + path, { agent, timeout: 30_000 }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, reused: req.reusedSocket }));
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new Error(`GET ${path}: no answer within 30 s`)));
      req.on('error', reject);
    });
  return { get, close: () => agent.destroy() };
}

export interface Seeded {
  ids: number[];
  ideaIds: number[];
}

/** `n` completed jobs of printer mk4-01, each with a plan of 10 g from slot 0 (unless not `plans`) and a printing idea following it. */
export async function seedEndedJobs(h: Harness, n: number, plans = true): Promise<Seeded> {
  const { store } = h.service.context;
  const seeded: Seeded = { ids: [], ideaIds: [] };
  for (let i = 0; i < n; i++) {
    const at = nowIso();
    const id = await store.jobs.insert({ printer_id: 'mk4-01', job_name: `Part ${i}`, status: 'completed', progress: 100, created_at: at, updated_at: at });
    seeded.ids.push(id);
    if (plans) await store.filamentUsage.savePlan({ job_id: id, printer_id: 'mk4-01', entries: [{ filament: 1, slot: 0, grams: 10, material: 'PLA', color: null }], slots_seen: [0] }, at);
    const idea = { title: `Idea ${i}`, creator_name: null, source_platform: 'manual', source_url: null, model_id: null, thumbnail_url: null, description: null, file_info: null, notes: null };
    const state = { tags: [], is_business: false, status: 'printing', job_id: id, metadata_refresh_needed: false, metadata_fetched_at: null, metadata_attempted_at: null };
    seeded.ideaIds.push(await store.ideas.insert({ ...idea, ...state, status_changed_at: at, created_at: at, updated_at: at }));
  }
  return seeded;
}

/** Printer mk4-01 with `n` ended jobs (seedEndedJobs), and a kept-alive connection that has answered once. */
export async function burstReady(h: Harness, n: number): Promise<{ seeded: Seeded; agent: ReturnType<typeof keptAlive> }> {
  const posted = await h.post('/api/v1/printers', prusa('mk4-01', { is_active: false }));
  if (posted.status !== 201) throw new Error(`adding the printer answered ${posted.status}`);
  const seeded = await seedEndedJobs(h, n);
  const agent = keptAlive(h.base);
  expect((await agent.get('/api/v1/health')).status).toBe(200);
  return { seeded, agent };
}

/**
 * Emits a burst of job ends and sends a request at once: it reaches the service the next time the event loop
 * reads its sockets, mid-burst, and is answered on its kept-alive connection while most of the burst's filament
 * usage is still to be recorded (with one chain of database work per event, all their statements were queued
 * before the request's, and ran first). Then waits for the burst's end: the ideas moved in a few statements.
 */
export async function answeredMidBurst(burst: ReturnType<typeof watchBurst>, agent: ReturnType<typeof keptAlive>, ids: number[]): Promise<void> {
  burst.emit(ids);
  const answer = await agent.get('/api/v1/jobs?limit=1');
  const usageBeforeAnswer = burst.usageRecorded();
  expect(answer).toMatchObject({ status: 200, reused: true });
  expect(JSON.parse(answer.body).jobs).toHaveLength(1);
  expect(usageBeforeAnswer).toBeLessThan(ids.length / 2);
  await burst.done(ids.length);
  // The two tasks that start at once follow their own job; each next one the completions waiting (500 at most).
  expect(burst.ideaUpdates()).toBeLessThanOrEqual(2 + Math.ceil(ids.length / 500));
}

/** Counts what a burst of job ends brings about: statements moving ideas, notifications, usage frames. */
export function watchBurst(h: Harness) {
  const { store, bus, filament, ideas } = h.service.context;
  let ideaUpdates = 0;
  // The statements moving ideas (a statement is told once it ran).
  const counting = (text: string) => {
    if (/^update "ideas"/.test(text)) ideaUpdates++;
  };
  store.connection.queryListeners.add(counting);
  const told = new Map<number, number>();
  const jobNames = new Map<number, unknown>();
  const usageTold = new Map<number, number>();
  const add = (map: Map<number, number>, id: number) => map.set(id, (map.get(id) ?? 0) + 1);
  const offBus = [
    bus.on('notification', (n) => {
      if (n.kind !== 'print_finished') return;
      add(told, Number(n.data.job_id));
      jobNames.set(Number(n.data.job_id), n.data.job_name);
    }),
    bus.on('job_update', (e) => e.change === 'updated' && Array.isArray(e.filament_usage) && add(usageTold, e.job_id)),
  ];
  return {
    ideaUpdates: () => ideaUpdates,
    /** Jobs whose filament usage was recorded so far. */
    usageRecorded: () => usageTold.size,
    /** The job ends of seedEndedJobs' `ids`, in one turn of the event loop, as the job tracker publishes them (with their names). */
    emit(ids: number[]) {
      ids.forEach((id, i) => bus.emit('job_update', { id, job_id: id, printer_id: 'mk4-01', change: 'status', status: 'completed', progress: 100, job_name: `Part ${i}` }));
    },
    /** Waits until the burst's work is done. */
    async done(n: number) {
      await until(() => told.size === n, `${n} print_finished notifications`, 60_000);
      await filament.idle();
      await ideas.jobWork.idle();
    },
    stop() {
      store.connection.queryListeners.delete(counting);
      for (const off of offBus) off();
    },
    /** Once each: the notification, the usage (its row, the job's grams, its frame), the idea's move. */
    async expectEachOnce({ ids, ideaIds }: Seeded, overflowed = false) {
      expect([...told.keys()].sort((a, b) => a - b)).toEqual(ids);
      expect([...told.values()].every((n) => n === 1)).toBe(true);
      expect(ids.map((id) => jobNames.get(id))).toEqual(ids.map((_, i) => `Part ${i}`));
      expect([...usageTold.keys()].sort((a, b) => a - b)).toEqual(ids);
      expect([...usageTold.values()].every((n) => n === 1)).toBe(true);
      const usage = await store.filamentUsage.usageOf(ids);
      for (const id of ids) expect(usage.get(id)?.map((u) => [u.slot, u.grams])).toEqual([[0, 10]]);
      expect(new Set((await Promise.all(ids.map((id) => store.jobs.get(id)))).map((j) => j?.material_actual_usage))).toEqual(new Set([10]));
      const moved = h.logs.filter((l) => l.msg === 'ideas: completed with their job').flatMap((l) => l.idea_ids as number[]);
      expect(moved.sort((a, b) => a - b)).toEqual(ideaIds);
      expect(new Set((await Promise.all(ideaIds.map((id) => store.ideas.get(id)))).map((i) => i?.status))).toEqual(new Set(['completed']));
      expect(h.logs.some((l) => typeof l.msg === 'string' && l.msg.startsWith('background work backlog full'))).toBe(overflowed);
    },
  };
}
