/**
 * Usage counters marked as submitted while events keep being counted (SQLite and PostgreSQL): what was
 * sent is marked, what arrived meanwhile stays open for the next submission, nothing is lost. On SQLite
 * the marking and the count take turns on the one connection; on PostgreSQL they run side by side, and
 * the test makes the count land exactly between the marking's read and its write (a second connection
 * holds the count uncommitted until the marking waits for it).
 */
import { databaseUrlOf, dialectStore } from '../helpers/dialect-store';
import { commitWhileBlocked, describeDialects } from '../helpers/dialects';

const AT = '2026-11-27T10:15:00.000Z';

describeDialects('usage counters', (db) => {
  const store = dialectStore(db);

  test('an event counted while a submission is being marked stays open for the next one', async () => {
    await store.usage.add('job_created', 5, AT);
    const captured = (await store.usage.pending()).map((e) => ({ id: e.id, count: e.count }));
    expect(captured).toHaveLength(1);

    const url = databaseUrlOf(store);
    if (url === undefined) {
      await Promise.all([store.usage.markSubmitted(captured, AT), store.usage.add('job_created', 1, AT)]);
    } else {
      await commitWhileBlocked(
        url,
        [{ sql: 'UPDATE usage_events SET count = count + 1, last_at = $1 WHERE id = $2', params: [AT, captured[0].id] }],
        () => store.usage.markSubmitted(captured, AT),
        'the marking never waited for the counted row',
      );
    }

    const all = await store.usage.all();
    expect(all.filter((e) => e.submitted).map((e) => e.count)).toEqual([5]);
    expect((await store.usage.pending()).map((e) => [e.type, e.count])).toEqual([['job_created', 1]]);
  });
});
