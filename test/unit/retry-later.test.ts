/**
 * RetryLater (service/util/retry-later.ts): the timer that retries a printer's failed update when no report
 * comes. Real timers with short waits.
 */
import { RetryLater } from '../../service/util/retry-later';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('RetryLater', () => {
  let retries: RetryLater;
  afterEach(() => retries.close());

  test('retries after the first wait, then after a doubled one, until done', async () => {
    retries = new RetryLater({ firstMs: 40, maxMs: 1000 });
    const at: number[] = [];
    const start = Date.now();
    const fail = () => retries.failed('p1', () => (at.push(Date.now() - start), at.length < 2 ? fail() : retries.done('p1')));
    fail();
    expect(retries.has('p1')).toBe(true);
    await sleep(250);
    expect(at).toHaveLength(2);
    expect(at[0]).toBeGreaterThanOrEqual(35);
    // The second wait (80 ms) follows the first retry's failure.
    expect(at[1] - at[0]).toBeGreaterThanOrEqual(75);
    expect(retries.has('p1')).toBe(false);
  });

  test('done() before the wait ends: no retry', async () => {
    retries = new RetryLater({ firstMs: 20 });
    let ran = 0;
    retries.failed('p1', () => ran++);
    retries.done('p1');
    await sleep(60);
    expect(ran).toBe(0);
    expect(retries.has('p1')).toBe(false);
  });

  test('a second failure replaces the waiting retry: the newest update is retried, once', async () => {
    retries = new RetryLater({ firstMs: 20, maxMs: 20 });
    const ran: string[] = [];
    retries.failed('p1', () => ran.push('old'));
    retries.failed('p1', () => ran.push('new'));
    await sleep(80);
    expect(ran).toEqual(['new']);
  });

  test('after `attempts` failures the timer stops; the key still waits for a report', async () => {
    retries = new RetryLater({ firstMs: 10, maxMs: 10, attempts: 2 });
    let ran = 0;
    const fail = () => retries.failed('p1', () => (ran++, fail()));
    fail();
    await sleep(120);
    expect(ran).toBe(2);
    expect(retries.has('p1')).toBe(true);
  });

  test('close() clears every waiting retry and schedules no more', async () => {
    retries = new RetryLater({ firstMs: 20 });
    let ran = 0;
    retries.failed('p1', () => ran++);
    retries.failed('p2', () => ran++);
    retries.close();
    retries.failed('p3', () => ran++);
    await sleep(60);
    expect(ran).toBe(0);
  });
});
