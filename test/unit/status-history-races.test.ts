/**
 * The status history keeps one row per change even when the same change is recorded twice at once: the
 * registry and the fleet both record a deactivated printer's offline/disconnected. On PostgreSQL the two
 * statements ran on two connections, neither saw the other's insert, and both wrote a row (one extra entry
 * in the history). On both databases.
 */
import { sql } from 'kysely';
import { describeDialects } from '../helpers/dialects';
import { dialectStore } from '../helpers/dialect-store';

describeDialects('status history: the same change recorded at once', (db) => {
  const store = dialectStore(db);

  test('ten records of one change at once write one row, round after round; another printer has its own rows', async () => {
    // Ten connections open in the pool first, so that the ten statements of a round run side by side.
    if (db.name === 'postgres') await Promise.all(Array.from({ length: 10 }, () => sql`SELECT pg_sleep(0.1)`.execute(store.connection.db)));
    const base = Date.parse('2026-03-01T00:00:00.000Z');
    const written: number[] = [];
    // One round rarely meets the race; sixty alternating changes met it every time without the fix.
    for (let round = 0; round < 60; round++) {
      const at = new Date(base + round * 1000).toISOString();
      const [status, connection] = round % 2 ? ['online', 'connected'] : ['offline', 'disconnected'];
      const results = await Promise.all(Array.from({ length: 10 }, () => store.statusHistory.record('p1', status, connection, at)));
      written.push(results.filter(Boolean).length);
    }
    expect(written.filter((n) => n !== 1)).toEqual([]);
    expect(await store.statusHistory.list('p1')).toHaveLength(60);
    expect(await store.statusHistory.record('p2', 'offline', 'disconnected', new Date(base).toISOString())).toBe(true);
    expect(await store.statusHistory.list('p2')).toHaveLength(1);
  });
});
