/**
 * The filament tables (migration 013) and their repositories give the same answers on SQLite and
 * PostgreSQL: ids as large as the API accepts (Spoolman's spool ids go up to 2^53 - 1 in the spec) are
 * stored on both, and the per-material and per-spool totals come in the same order.
 */
import type { NewUsage } from '../../service/db/repositories/filament-usage';
import { dialectStore } from '../helpers/dialect-store';
import { describeDialects } from '../helpers/dialects';

const NOW = '2026-11-27T12:00:00.000Z';

describeDialects('filament usage tables', (db) => {
  const store = dialectStore(db);

  const usage = (u: Partial<NewUsage> & Pick<NewUsage, 'slot' | 'grams'>): NewUsage => ({
    job_id: 1,
    printer_id: 'p1',
    source: null,
    spool_id: null,
    material: null,
    color: null,
    cost: null,
    ...u,
  });

  test('a Spoolman spool id beyond 32 bits is kept in its slot and in the usage of a print (64-bit like every integer)', async () => {
    const big = 2 ** 40 + 7;
    await store.spools.assignSpoolman(big, { printer_id: 'p1', slot: 3 }, NOW);
    expect(await store.spools.spoolmanSlots()).toEqual([{ printer_id: 'p1', slot: 3, spoolman_id: big }]);

    const job = 2 ** 33 + 1;
    await store.filamentUsage.savePlan({ job_id: job, printer_id: 'p1', entries: [], slots_seen: [3] }, NOW);
    const { written } = await store.filamentUsage.settle(job, [usage({ job_id: job, slot: 3, source: 'spoolman', spool_id: big, grams: 12.5 })], NOW);
    expect(written.map((w) => [w.job_id, w.spool_id, w.spoolman_state])).toEqual([[job, big, 'pending']]);
    expect((await store.filamentUsage.plan(job))?.settled_at).toBe(NOW);
  });

  test('the usage rows and the job\'s totals are written in one transaction: settled, the job has its grams and cost, and a second settle adds only the missing slot', async () => {
    const job = await store.jobs.insert({ printer_id: 'p1', job_name: 'Bracket', status: 'completed', progress: 100, created_at: NOW, updated_at: NOW });
    await store.filamentUsage.savePlan({ job_id: job, printer_id: 'p1', entries: [], slots_seen: [0, 1] }, NOW);
    const first = await store.filamentUsage.settle(job, [usage({ job_id: job, slot: 0, grams: 12.345, cost: 0.3 }), usage({ job_id: job, slot: 1, grams: 7.5, cost: 0.21 })], NOW);
    expect(first.written.map((w) => w.slot)).toEqual([0, 1]);
    expect(first.total).toBe(19.85);
    const settled = await store.jobs.get(job);
    expect([settled?.material_actual_usage, settled?.material_cost]).toEqual([19.85, 0.51]);
    // Slot 1 again (counted once) and slot 2 new: the totals are of all the job's rows.
    const again = await store.filamentUsage.settle(job, [usage({ job_id: job, slot: 1, grams: 7.5, cost: 0.21 }), usage({ job_id: job, slot: 2, grams: 1, cost: 0.02 })], NOW);
    expect(again.written.map((w) => w.slot)).toEqual([2]);
    expect(again.all.map((u) => u.slot)).toEqual([0, 1, 2]);
    const after = await store.jobs.get(job);
    expect([after?.material_actual_usage, after?.material_cost]).toEqual([20.85, 0.53]);
  });

  test('totals of equal grams come in the same order on both: by material name (no material last), by spool source and id', async () => {
    const rows = [
      usage({ job_id: 1, slot: 0, material: 'PLA', source: 'local', spool_id: 10, grams: 5 }),
      usage({ job_id: 1, slot: 1, material: null, source: 'spoolman', spool_id: 1, grams: 5 }),
      usage({ job_id: 2, slot: 0, material: 'petg', source: 'local', spool_id: 2, grams: 5 }),
      usage({ job_id: 2, slot: 1, material: 'ABS', source: 'local', spool_id: 9, grams: 5 }),
      usage({ job_id: 3, slot: 0, material: 'TPU', grams: 20 }),
    ];
    await store.filamentUsage.settle(1, rows.slice(0, 2), NOW);
    await store.filamentUsage.settle(2, rows.slice(2, 4), NOW);
    await store.filamentUsage.settle(3, rows.slice(4), NOW);
    expect((await store.filamentUsage.totals('material', null, null)).map((t) => t.key)).toEqual(['TPU', 'ABS', 'PLA', 'petg', 'unknown']);
    expect((await store.filamentUsage.totals('spool', null, null)).map((t) => t.key)).toEqual(['local:2', 'local:9', 'local:10', 'spoolman:1']);
  });
});
