/**
 * The one SQLite connection is taken in turns (service/db/sqlite-turns.ts): in arrival order, and with the
 * event loop turning after a slice of work, so that thousands of queries pending at once neither cost
 * N² wake-ups nor hold the loop until the last one is done.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openStore, type Store } from '../../service/db';
import { TURN_GRANTS, TurnTaking } from '../../service/db/sqlite-turns';
import { nowIso } from '../../service/util/time';

const turned = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('TurnTaking', () => {
  it('hands the lock on in arrival order, one holder at a time', async () => {
    const turns = new TurnTaking();
    const order: number[] = [];
    let holders = 0;
    let most = 0;
    await Promise.all(
      [...Array(2000).keys()].map(async (i) => {
        await turns.take();
        holders++;
        most = Math.max(most, holders);
        order.push(i);
        // Some holders keep the lock across a microtask or a turn of the loop, as a transaction does.
        if (i % 7 === 0) await Promise.resolve();
        if (i % 500 === 0) await turned();
        holders--;
        turns.release();
      }),
    );
    expect(most).toBe(1);
    expect(order).toEqual([...Array(2000).keys()]);
  });

  it('lets the event loop turn after a slice of work, and newcomers wait behind those already waiting', async () => {
    const turns = new TurnTaking();
    const held: number[] = [];
    let atTurn = -1;
    const work = [...Array(TURN_GRANTS * 3).keys()].map(async (i) => {
      await turns.take();
      held.push(i);
      turns.release();
    });
    void turned().then(() => (atTurn = held.length));
    // Taken while others wait (or wait for the loop): comes last.
    const late = turns.take().then(() => {
      held.push(-1);
      turns.release();
    });
    await Promise.all([...work, late]);
    expect(atTurn).toBeGreaterThan(0);
    expect(atTurn).toBeLessThanOrEqual(TURN_GRANTS);
    expect(turns.yields).toBeGreaterThanOrEqual(2);
    expect(held).toEqual([...Array(TURN_GRANTS * 3).keys(), -1]);
  });
});

describe('SQLite store under a burst of queries', () => {
  let dir: string;
  let store: Store;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-turns-'));
    store = await openStore(dir);
  });
  afterAll(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('5 000 reads issued at once all answer, in order, and the event loop turns before the last one', async () => {
    await store.settings.setMany({ language: 'de' }, nowIso());
    const answered: number[] = [];
    let atTurn = -1;
    const reads = [...Array(5000).keys()].map((i) => store.settings.all().then((all) => answered.push(all.language === 'de' ? i : -1)));
    void turned().then(() => (atTurn = answered.length));
    await Promise.all(reads);
    expect(answered).toEqual([...Array(5000).keys()]);
    // With kysely's own mutex all 5 000 ran in microtasks first (12.5 million wake-ups, seconds).
    expect(atTurn).toBeGreaterThanOrEqual(0);
    expect(atTurn).toBeLessThan(5000);
  });
});
