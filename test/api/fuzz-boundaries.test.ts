/**
 * Schema-driven fuzzing, valid requests at the boundaries: every operation of
 * the service's own OpenAPI document gets requests the document allows, with
 * values at the edges of their schemas. New endpoints are covered as soon as
 * they are in the document: an operation that gets no cases fails the test.
 *
 * The promises checked: no 5xx (a 502 only where the operation documents it,
 * for a valid request to a printer that never answers); every error has the
 * error body; at least three quarters of the operations answer a 2xx (the
 * generator gets through validation); the database stays sound.
 *
 * Reproduce a failure with the seed it prints: FUZZ_SEED=<seed> npx jest test/api/fuzz-boundaries.test.ts
 */
import { describeDialects } from '../helpers/dialects';
import { sqliteIntegrity } from '../helpers/db-snapshot';
import { run, unhandled } from '../helpers/fuzz/check';
import { Rng, SEED } from '../helpers/fuzz/rng';
import type { Operation } from '../helpers/fuzz/schema';
import { connectionOf, useFuzzedService } from '../helpers/fuzz/seeded-service';
import { validCases } from '../helpers/fuzz/valid-cases';

describeDialects('schema-driven fuzzing of every operation in the OpenAPI document', (dialect) => {
  const fuzz = useFuzzedService(dialect);

  test('valid requests at the boundaries get a 2xx or a clear 4xx, and the database stays sound', async () => {
    const { h, ops, seed, fetched } = fuzz;
    const rng = new Rng(SEED + 1);
    const settingsSchema = ops.find((op) => op.key === 'PUT /api/v1/settings')?.body?.schema;
    const settingsBefore = (await h.get('/api/v1/settings')).body as Record<string, unknown>;
    const restoreSettings = Object.fromEntries(Object.entries(settingsBefore).filter(([k]) => settingsSchema?.properties?.[k]));
    // Deletions (and the cleanup, which deletes files) last, so that the other operations still find what they act on.
    const destructive = (op: Operation) => op.method === 'DELETE' || (op.method !== 'GET' && /cleanup|delete/.test(op.path));
    const ordered = [...ops.filter((op) => !destructive(op)), ...ops.filter(destructive)];
    let total = 0;
    const failures: string[] = [];
    const statuses = new Map<string, Set<number>>();
    for (const op of ordered) {
      const cases = validCases(op, seed, rng);
      expect([op.key, cases.length > 0]).toEqual([op.key, true]);
      total += cases.length;
      failures.push(...(await run(h, cases, statuses)));
      // Settings are global: put them back, so that one operation's boundary values do not change how the next behaves.
      if (op.key === 'PUT /api/v1/settings') expect((await h.put('/api/v1/settings', restoreSettings)).status).toBe(200);
    }
    expect(failures.slice(0, 15)).toEqual([]);
    // The generator must keep making requests that get through validation, not only ones that bounce off it.
    const succeeded = ops.filter((op) => [...(statuses.get(op.key) ?? [])].some((s) => s >= 200 && s < 300));
    const never = ops.filter((op) => !succeeded.includes(op)).map((op) => `${op.key} ${[...(statuses.get(op.key) ?? [])].sort()}`);
    console.log(`fuzz: ${succeeded.length} of ${ops.length} operations answered 2xx; never: ${never.join(', ')}`);
    expect(succeeded.length / ops.length).toBeGreaterThanOrEqual(0.75);
    expect(sqliteIntegrity(connectionOf(h))).toBe(dialect.name === 'sqlite' ? 'ok' : null);
    expect((await h.get('/api/v1/health')).status).toBe(200);
    expect(unhandled(h)).toEqual([]);
    // The importer was asked for pages, and none of them went out (the injected fetch refuses them).
    expect(fetched.every((u) => u.startsWith('http'))).toBe(true);
    console.log(`fuzz: ${total} valid boundary requests over ${ops.length} operations`);
  }, 120_000);
});
