/**
 * The service the fuzz tests run against, one per test file and dialect:
 * started with every outside address pointing at a closed local port, seeded
 * with something for each kind of path id to find (a printer of each type, a
 * job, an idea, a local file, a maintenance event, a held queue item), and settled (the silent
 * printers' connection tests have given up), so that from then on nothing
 * writes by itself. Also the database and the disk as seen from outside.
 */
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import type { AnyConnection } from '../../../service/db/connection';
import type { DialectUnderTest } from '../dialects';
import { bambu, prusa, startService, type Harness } from '../service';
import { SEED } from './rng';
import { operationsOf, type Operation } from './schema';
import { GCODE, multipart, type Seeded } from './cases';

/** The store's connection (the service's own kysely: reads see what it committed). */
export const connectionOf = (h: Harness) => h.service.context.store.connection as AnyConnection<unknown>;

/** Every file under `dir`, relative to it. */
export function listFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(path.relative(dir, p));
    }
  };
  walk(dir);
  return out.sort();
}

export interface FuzzedService {
  h: Harness;
  /** The operations of the service's own OpenAPI document. */
  ops: Operation[];
  seed: Seeded;
  /** URLs the idea importer tried to fetch: nothing leaves the machine, the fetch refuses them all. */
  fetched: string[];
}

/** Starts the seeded service before the enclosing block's tests (beforeAll) and closes it after them. */
export function useFuzzedService(dialect: DialectUnderTest): FuzzedService {
  // h and ops are set in beforeAll, before any test reads them.
  const fuzz: FuzzedService = { h: null as unknown as Harness, ops: [], seed: { printers: [], jobs: [], ideas: [], files: [], queue: [] }, fetched: [] };
  const { seed, fetched } = fuzz;

  beforeAll(async () => {
    const h = (fuzz.h = await startService({
      ...(await dialect.options()),
      // Every outside address the service could reach points at a closed local port.
      env: { USAGE_STATS_ENDPOINT: 'https://127.0.0.1:9/submit', USAGE_STATS_RETRY_COUNT: '0' },
      ideas: {
        fetch: async (url) => {
          fetched.push(String(url));
          throw new TypeError('fetch failed');
        },
        metadataRetryMs: 0,
      },
      // A silent printer gives up its connection test quickly (test-connection answers, and the fleet is quiet afterwards).
      fleet: { connectTimeoutMs: 100 },
      downloads: { attempts: 1, retryDelayMs: 1 },
    }));
    console.log(`fuzz seed ${SEED} (set FUZZ_SEED to reproduce)`);

    // Things for path ids to find: a printer of each type, a job, an idea, a local file, a maintenance event.
    for (const p of [bambu('x1c-01'), prusa('mk4-01')]) {
      const res = await h.post('/api/v1/printers', p);
      expect(res.status).toBe(201);
      seed.printers.push(res.body.id);
    }
    const job = await h.post('/api/v1/jobs', { printer_id: 'x1c-01', job_name: 'Benchy', notes: 'seed' });
    expect(job.status).toBe(201);
    seed.jobs.push(job.body.id);
    const idea = await h.post('/api/v1/ideas', { title: 'Desk organizer', tags: ['desk'] });
    expect(idea.status).toBe(201);
    seed.ideas.push(idea.body.id);
    const upload = await h.request('POST', '/api/v1/files/upload', multipart('b', 'file', 'cube.gcode', GCODE), { 'content-type': 'multipart/form-data; boundary=b' });
    expect(upload.status).toBe(201);
    seed.files.push(upload.body.id);
    expect((await h.post('/api/v1/printers/mk4-01/maintenance', { kind: 'cleaning' })).status).toBe(201);
    // A print-queue item of that file, held: nothing dispatches it while the fuzzer runs.
    const item = await h.post('/api/v1/queue', { file_id: upload.body.id, copies: 2 });
    expect(item.status).toBe(201);
    expect((await h.post(`/api/v1/queue/${item.body.id}/hold`)).status).toBe(200);
    seed.queue.push(item.body.id);

    // Wait until both connection tests gave up and their status changes are stored: from then on nothing writes by itself.
    const deadline = Date.now() + 10_000;
    const settled = async () => {
      const { rows } = await sql<{ printer_id: string }>`SELECT DISTINCT printer_id FROM printer_status_history WHERE connection_status = 'disconnected'`.execute(
        connectionOf(h).db,
      );
      return seed.printers.every((id) => rows.some((r) => r.printer_id === id));
    };
    while (!(await settled())) {
      if (Date.now() > deadline) throw new Error('the silent printers never went offline');
      await new Promise((resolve) => setImmediate(resolve));
    }

    const doc = await h.get('/api/v1/openapi.json');
    expect(doc.status).toBe(200);
    fuzz.ops = operationsOf(doc.body);
    expect(fuzz.ops.length).toBeGreaterThan(50);
  });

  afterAll(() => fuzz.h?.close());
  return fuzz;
}
