/**
 * Schema-driven fuzzing, invalid requests: every operation of the service's
 * own OpenAPI document gets generated requests that break it (wrong types,
 * bounds, unknown and missing fields, malformed JSON and multipart, path
 * tricks, ids that name nothing). New endpoints are covered as soon as they
 * are in the document: an operation that gets no cases fails the test.
 *
 * The promises checked: each one gets a 4xx with the error body, never a 5xx,
 * and changes nothing in the database (every row of every table) nor on disk.
 *
 * Reproduce a failure with the seed it prints: FUZZ_SEED=<seed> npx jest test/api/fuzz-invalid-requests.test.ts
 */
import { describeDialects } from '../helpers/dialects';
import { snapshotDb, sqliteIntegrity } from '../helpers/db-snapshot';
import { existingPathValues, fillPath, queryString, requiredQuery } from '../helpers/fuzz/cases';
import { run, unhandled } from '../helpers/fuzz/check';
import { invalidCases } from '../helpers/fuzz/invalid-cases';
import { Rng, SEED } from '../helpers/fuzz/rng';
import { connectionOf, listFiles, useFuzzedService } from '../helpers/fuzz/seeded-service';

describeDialects('schema-driven fuzzing of every operation in the OpenAPI document', (dialect) => {
  const fuzz = useFuzzedService(dialect);

  test('invalid requests get a 4xx with the error body and never change the database or the disk', async () => {
    const { h, ops, seed } = fuzz;
    const rng = new Rng(SEED);
    const cases = ops.flatMap((op) => invalidCases(op, seed, rng));
    const perOp = new Map(ops.map((op) => [op.key, cases.filter((c) => c.op === op).length]));
    // A new endpoint is fuzzed as soon as it is documented; one that gets no cases means the generator needs teaching.
    expect([...perOp].filter(([, n]) => n === 0).map(([key]) => key)).toEqual([]);
    expect(cases.length).toBeGreaterThan(2000);

    // Reads may fill caches (the trending list is read-through): one plain read of each first, so the snapshot holds them.
    // A read that reaches a printer (its camera) may be 502 where the operation documents it: the seeded printers are not connected.
    for (const op of ops.filter((o) => o.method === 'GET')) {
      const status = (await h.get(fillPath(op, existingPathValues(op, seed, rng)) + queryString(requiredQuery(op, rng)))).status;
      expect([op.key, status < 500 || (status === 502 && op.statuses.has(502))]).toEqual([op.key, true]);
    }
    const before = await snapshotDb(connectionOf(h));
    const filesBefore = listFiles(h.dataDir);
    expect(sqliteIntegrity(connectionOf(h))).toBe(dialect.name === 'sqlite' ? 'ok' : null);

    const failures = await run(h, rng.sample(cases, cases.length));
    expect(failures.slice(0, 15)).toEqual([]);

    const after = await snapshotDb(connectionOf(h));
    expect(sqliteIntegrity(connectionOf(h))).toBe(dialect.name === 'sqlite' ? 'ok' : null);
    expect(after.counts).toEqual(before.counts);
    for (const table of Object.keys(before.contents)) expect({ table, rows: after.contents[table] }).toEqual({ table, rows: before.contents[table] });
    // No file came or went (the db's WAL files stay the same names).
    expect(listFiles(h.dataDir)).toEqual(filesBefore);
    expect(unhandled(h)).toEqual([]);
    console.log(`fuzz: ${cases.length} invalid requests over ${ops.length} operations`);
  }, 120_000);
});
