/**
 * The queue that listeners of the event bus do their per-event work through (service/util/work-queue.ts): a
 * few tasks at a time in arrival order, one key's tasks one after the other, a bounded backlog whose refusals
 * are caught up once it drains.
 */
import pino from 'pino';
import { WorkQueue } from '../../service/util/work-queue';

const log = pino({ level: 'silent' });

/** A task that runs until `release()`; `started` says whether it began. */
function gate() {
  let release!: () => void;
  const done = new Promise<void>((resolve) => (release = resolve));
  const g = { started: false, release, task: () => ((g.started = true), done) };
  return g;
}

describe('WorkQueue', () => {
  it('runs at most `concurrency` tasks at once, starting them in the order pushed', async () => {
    const q = new WorkQueue({ name: 't', concurrency: 3, maxBacklog: 1000, log, whenFull: 'refused' });
    const started: number[] = [];
    let running = 0;
    let most = 0;
    for (let i = 0; i < 200; i++) {
      q.push(async () => {
        started.push(i);
        most = Math.max(most, ++running);
        // Some finish at once, others after a turn of the loop: the order of starts stays the order pushed.
        if (i % 3) await new Promise<void>((r) => setImmediate(r));
        running--;
      });
    }
    expect(q.running).toBe(3);
    expect(q.pending).toBe(197);
    await q.idle();
    expect(most).toBe(3);
    expect(started).toEqual([...Array(200).keys()]);
  });

  it("runs one key's tasks one after the other, in order, while other keys go past", async () => {
    const q = new WorkQueue({ name: 't', concurrency: 4, maxBacklog: 100, log, whenFull: 'refused' });
    const order: string[] = [];
    const first = gate();
    q.push(() => first.task().then(() => void order.push('a1')), { key: 'a' });
    q.push(async () => void order.push('a2'), { key: 'a' });
    q.push(async () => void order.push('b1'), { key: 'b' });
    q.push(async () => void order.push('a3'), { key: 'a' });
    await new Promise<void>((r) => setImmediate(r));
    // a2 and a3 wait behind a1; b1 did not wait for them.
    expect(order).toEqual(['b1']);
    first.release();
    await q.idle();
    expect(order).toEqual(['b1', 'a1', 'a2', 'a3']);
  });

  it('queues a task named `once` a single time while it waits, and again once it started', async () => {
    const q = new WorkQueue({ name: 't', concurrency: 1, maxBacklog: 100, log, whenFull: 'refused' });
    const blocker = gate();
    const ran: string[] = [];
    q.push(blocker.task);
    expect(q.push(async () => void ran.push('x1'), { once: 'x' })).toBe(true);
    expect(q.push(async () => void ran.push('x2'), { once: 'x' })).toBe(true);
    expect(q.pending).toBe(1);
    blocker.release();
    await q.idle();
    expect(q.push(async () => void ran.push('x3'), { once: 'x' })).toBe(true);
    await q.idle();
    expect(ran).toEqual(['x1', 'x3']);
  });

  it('refuses pushes beyond the backlog, says so once, and runs the catch-up once after the backlog drained', async () => {
    const lines: { msg: string; refused?: number }[] = [];
    const sink = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const events: string[] = [];
    const q = new WorkQueue({
      name: 't',
      concurrency: 1,
      maxBacklog: 2,
      log: sink,
      catchUp: async () => void events.push('catch-up'),
      whenFull: 'caught up later',
    });
    const blocker = gate();
    q.push(blocker.task);
    const accepted = [1, 2, 3, 4].map((i) => q.push(async () => void events.push(`task ${i}`)));
    expect(accepted).toEqual([true, true, false, false]);
    blocker.release();
    await q.idle();
    expect(events).toEqual(['task 1', 'task 2', 'catch-up']);
    expect(lines.map((l) => l.msg)).toEqual(['background work backlog full: caught up later', 'background work backlog drained']);
    expect(lines[1].refused).toBe(2);
  });

  it('keeps working after a task fails, and close() drops what waits and waits for what runs', async () => {
    const q = new WorkQueue({ name: 't', concurrency: 1, maxBacklog: 100, log, whenFull: 'refused' });
    const ran: number[] = [];
    q.push(async () => {
      throw new Error('boom');
    });
    q.push(async () => void ran.push(1));
    await q.idle();
    expect(ran).toEqual([1]);
    const running = gate();
    q.push(running.task);
    q.push(async () => void ran.push(2));
    let closed = false;
    const closing = q.close().then(() => (closed = true));
    await new Promise<void>((r) => setImmediate(r));
    expect(closed).toBe(false);
    running.release();
    await closing;
    expect(ran).toEqual([1]);
    expect(q.push(async () => void ran.push(3))).toBe(false);
  });
});
