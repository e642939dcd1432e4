/**
 * job_tallies (migration 016): the running totals per printer, status and
 * business flag that GET /jobs' total and summary and the printer detail read
 * instead of counting the whole history. They must always equal a count of
 * the jobs: backfilled by the migration, then kept by triggers through
 * inserts, updates and deletes, one row at a time and in bulk.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql, type Kysely } from 'kysely';
import { DB_FILENAME, openStore, type Store } from '../../service/db';
import { openTarget } from '../../service/db/connection';
import { MIGRATIONS } from '../../service/db/migrations';
import type { DB } from '../../service/db/schema';
import { describeDialects } from '../helpers/dialects';

const NOW = '2026-11-20T10:00:00.000Z';

type Tally = { key: string; jobs: number; print_time: number; used_grams: number };

/** The tallies as stored (keys with no job left aside), and as a count of the jobs gives them. */
async function bothWays(db: Kysely<DB>): Promise<{ stored: Tally[]; counted: Tally[] }> {
  const shape = (rows: Record<string, unknown>[]) =>
    rows
      .map((r) => ({
        key: `${r.printer_id}/${r.status}/${r.is_business}`,
        jobs: Number(r.jobs),
        print_time: Number(r.print_time),
        used_grams: Math.round(Number(r.used_grams) * 1e6) / 1e6,
      }))
      .sort((a, b) => (a.key < b.key ? -1 : 1));
  const stored = await sql<Record<string, unknown>>`SELECT * FROM job_tallies WHERE jobs <> 0`.execute(db);
  const counted = await sql<Record<string, unknown>>`
    SELECT printer_id, status, is_business, count(*) AS jobs, coalesce(sum(actual_duration), 0) AS print_time,
      coalesce(sum(coalesce(material_actual_usage, CASE WHEN status = 'completed' THEN material_estimated_usage END)), 0) AS used_grams
    FROM jobs GROUP BY printer_id, status, is_business`.execute(db);
  return { stored: shape(stored.rows), counted: shape(counted.rows) };
}

async function expectTalliesMatch(db: Kysely<DB>): Promise<void> {
  const { stored, counted } = await bothWays(db);
  expect(counted.length).toBeGreaterThan(0);
  expect(stored).toEqual(counted);
}

/** Jobs written in one statement, as an import or a bulk load does. */
function bulkJobs(n: number, printer: string) {
  return Array.from({ length: n }, (_, i) => ({
    printer_id: printer,
    job_name: `bulk ${i}`,
    progress: 0,
    status: ['completed', 'failed', 'queued'][i % 3],
    actual_duration: i % 3 === 2 ? null : 60 * i,
    material_estimated_usage: 1.25 * i,
    material_actual_usage: i % 4 ? null : 0.5 * i,
    is_business: i % 2,
    created_at: NOW,
    updated_at: NOW,
  }));
}

describeDialects('job tallies (migration 016)', (dialect) => {
  let dir: string;
  let store: Store;
  afterEach(async () => {
    await store?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('are backfilled from the jobs a database already holds, and the index they replace is gone', async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'printfarm-tallies-'));
    const url = await dialect.url();
    // The database as it was before 016, with a history in it.
    const before = Object.fromEntries(Object.entries(MIGRATIONS).filter(([name]) => name < '016'));
    const old = await openTarget<DB>({ file: path.join(dir, DB_FILENAME), url }, before);
    await old.db.insertInto('jobs').values(bulkJobs(30, 'p1')).execute();
    await old.db.insertInto('jobs').values(bulkJobs(7, 'p2')).execute();
    await old.close();

    store = await openStore(dir, { databaseUrl: url });
    const db = store.connection.db;
    await expectTalliesMatch(db);
    expect(await store.jobs.count()).toBe(37);
    const indexes =
      store.connection.dialect === 'sqlite'
        ? await sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'jobs'`.execute(db)
        : await sql<{ name: string }>`SELECT indexname AS name FROM pg_indexes WHERE tablename = 'jobs'`.execute(db);
    expect(indexes.rows.map((r) => r.name)).not.toContain('jobs_printer_totals');
  });

  test('follow every insert, update and delete, one row at a time and in bulk', async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'printfarm-tallies-'));
    store = await openStore(dir, { databaseUrl: await dialect.url() });
    const { jobs } = store;
    const db = store.connection.db;

    const ids: number[] = [];
    for (let i = 0; i < 6; i++) {
      ids.push(
        await jobs.insert({ printer_id: i % 2 ? 'a' : 'b', job_name: `job ${i}`, status: 'printing', material_estimated_usage: 10 + i, created_at: NOW, updated_at: NOW }),
      );
    }
    await expectTalliesMatch(db);

    // A progress report changes no counted column; a finished print changes status, duration and grams.
    await jobs.update(ids[0], { progress: 42, layer_current: 7, updated_at: NOW });
    await jobs.update(ids[0], { status: 'completed', actual_duration: 3600, end_time: NOW, updated_at: NOW });
    await jobs.update(ids[1], { status: 'failed', actual_duration: 120, material_actual_usage: 2.5, updated_at: NOW });
    expect(await jobs.transition(ids[2], ['printing', 'paused'], { status: 'cancelled', updated_at: NOW })).toBe(true);
    await jobs.update(ids[3], { is_business: true, updated_at: NOW });
    await jobs.update(ids[4], { printer_id: 'c', updated_at: NOW });
    await jobs.update(ids[0], { material_actual_usage: 9.75, updated_at: NOW });
    await expectTalliesMatch(db);

    await jobs.delete(ids[5]);
    await db.insertInto('jobs').values(bulkJobs(50, 'a')).execute();
    await db.updateTable('jobs').set({ status: 'cancelled' }).where('status', '=', 'queued').execute();
    await db.deleteFrom('jobs').where('job_name', 'like', 'bulk 1%').execute();
    await expectTalliesMatch(db);

    // What the API reads from them agrees with counting the jobs.
    const everything = { page: 1, limit: 5, order_by: 'created_at', order_dir: 'desc' } as const;
    const counted = { ...everything, from: '0000-01-01T00:00:00.000Z' };
    for (const filter of [{}, { printer_id: 'a' }, { statuses: ['completed', 'failed'] }, { is_business: true }, { printer_id: 'a', statuses: ['cancelled'] }]) {
      const [fromTallies, fromJobs] = [await jobs.list({ ...everything, ...filter }), await jobs.list({ ...counted, ...filter })];
      expect([filter, fromTallies.total]).toEqual([filter, fromJobs.total]);
      expect(fromTallies.total).toBeGreaterThan(0);
    }
    const totals = await jobs.printerTotals('a');
    const { rows } = await sql<{ n: number; done: number }>`
      SELECT count(*) AS n, coalesce(sum(CASE WHEN status = 'completed' THEN 1 ELSE 0 END), 0) AS done FROM jobs WHERE printer_id = 'a'`.execute(db);
    expect([totals.total_jobs, totals.successful_jobs]).toEqual([Number(rows[0].n), Number(rows[0].done)]);
    const summary = await jobs.summary(undefined, NOW);
    expect([summary.active_jobs, summary.queued_jobs]).toEqual([2, 0]);
    expect(await jobs.countByStatus(['printing', 'cancelled', 'paused'])).toEqual({ printing: 2, cancelled: expect.any(Number), paused: 0 });
  });
});
