/**
 * Background work that listeners of the event bus start per event (a job's end: its notification, its filament
 * usage, the ideas that follow it), done at most `concurrency` tasks at a time, in arrival order. A bus event is
 * published synchronously and a burst of them (10 000 jobs ending at once) used to start all of their database
 * work in one turn of the event loop: tens of thousands of statements waited for the one SQLite connection (or
 * PostgreSQL's pool) at once, and a request that needed the database waited behind all of them. Here only a
 * few statements per module wait at a time, so a request queues behind those few, not behind the burst.
 *
 * Tasks of one `key` run one after the other (a job's plan before its settlement), and a task pushed with a
 * `once` name that is still waiting is not queued twice (the waiting one will see the newest state anyway).
 * The backlog is bounded: beyond `maxBacklog` waiting tasks a push is refused (false) and the owner says what
 * happens instead; `catchUp`, when given, then runs once after the backlog has drained, to redo from the
 * database what was refused (so that a refusal loses nothing).
 */
import type { Logger } from 'pino';

export interface WorkQueueOptions {
  /** Named in the logs. */
  name: string;
  /** Tasks running at once. */
  concurrency: number;
  /** Tasks waiting at most; a push beyond is refused. */
  maxBacklog: number;
  log: Logger;
  /** Redoes what refused pushes would have done; runs once the backlog has drained after a refusal. */
  catchUp?: () => Promise<void>;
  /** What happens to a refused push, in the log's words (the owner's overflow policy). */
  whenFull: string;
}

export interface PushOptions {
  /** Tasks of one key never run side by side, and start in the order pushed. */
  key?: string | number;
  /** A task of this name still waiting makes this push a no-op (true: the work is queued). */
  once?: string;
}

interface Entry {
  task: () => Promise<void>;
  key?: string | number;
  once?: string;
}

export class WorkQueue {
  private readonly waiting: Entry[] = [];
  private head = 0;
  /** Keys with a task running, and the tasks of the key that reached the head meanwhile (oldest first). */
  private readonly busy = new Map<string | number, Entry[]>();
  /** Parked tasks whose key came free: they are older than anything in `waiting`, so they start first. */
  private readonly freed: Entry[] = [];
  private readonly onceWaiting = new Set<string>();
  private parked = 0;
  private active = 0;
  private refused = 0;
  private catchUpDue = false;
  private closed = false;
  private idleWaiters: (() => void)[] = [];
  /** Most tasks waiting at once since the last reset (tests, metrics). */
  mostWaiting = 0;

  constructor(private readonly options: WorkQueueOptions) {}

  /** Tasks waiting to start. */
  get pending(): number {
    return this.waiting.length - this.head + this.parked + this.freed.length;
  }

  /** Tasks running now. */
  get running(): number {
    return this.active;
  }

  /** Queues `task`; false when the backlog is full (the task is not run) or the queue is closed. */
  push(task: () => Promise<void>, options: PushOptions = {}): boolean {
    if (this.closed) return false;
    if (options.once !== undefined && this.onceWaiting.has(options.once)) return true;
    if (this.pending >= this.options.maxBacklog) {
      this.refuse();
      return false;
    }
    if (options.once !== undefined) this.onceWaiting.add(options.once);
    this.waiting.push({ task, key: options.key, once: options.once });
    this.mostWaiting = Math.max(this.mostWaiting, this.pending);
    this.pump();
    return true;
  }

  /** Resolves once nothing waits or runs (the catch-up included). Bounded by the tasks' own bounds. */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Drops what waits (said in the log) and waits for the tasks running. */
  async close(): Promise<void> {
    this.closed = true;
    const dropped = this.pending;
    this.waiting.length = this.head = this.parked = 0;
    this.freed.length = 0;
    for (const [key] of this.busy) this.busy.set(key, []);
    this.onceWaiting.clear();
    this.catchUpDue = false;
    if (dropped) this.options.log.warn({ queue: this.options.name, dropped }, 'stopping: background work not started is dropped');
    await this.idle();
  }

  private refuse(): void {
    // Said once per overflow (its count when it ends): a burst refused task by task would flood the log.
    if (this.refused++ === 0) {
      this.options.log.warn({ queue: this.options.name, max_backlog: this.options.maxBacklog }, `background work backlog full: ${this.options.whenFull}`);
    }
    if (this.options.catchUp) this.catchUpDue = true;
  }

  private pump(): void {
    while (this.active < this.options.concurrency) {
      const entry = this.next();
      if (!entry) break;
      this.start(entry);
    }
    if (this.active === 0 && this.pending === 0) this.drained();
  }

  /** The oldest task that may start now; tasks whose key is busy are parked behind that key. */
  private next(): Entry | undefined {
    if (this.freed.length) return this.freed.shift();
    while (this.head < this.waiting.length) {
      const entry = this.waiting[this.head];
      this.waiting[this.head++] = undefined as never;
      // The array is cut once its consumed head is large, so that a long burst does not keep it whole.
      if (this.head >= 1024 && this.head * 2 >= this.waiting.length) {
        this.waiting.splice(0, this.head);
        this.head = 0;
      }
      const parkedBehind = entry.key === undefined ? undefined : this.busy.get(entry.key);
      if (!parkedBehind) return entry;
      parkedBehind.push(entry);
      this.parked++;
    }
    return undefined;
  }

  private start(entry: Entry): void {
    if (entry.once !== undefined) this.onceWaiting.delete(entry.once);
    if (entry.key !== undefined && !this.busy.has(entry.key)) this.busy.set(entry.key, []);
    this.active++;
    let work: Promise<void>;
    try {
      work = entry.task();
    } catch (err) {
      work = Promise.reject(err);
    }
    work
      .catch((err) => this.options.log.error({ err, queue: this.options.name, key: entry.key }, 'background work failed'))
      .finally(() => this.finish(entry));
  }

  private finish(entry: Entry): void {
    this.active--;
    if (entry.key !== undefined) {
      const behind = this.busy.get(entry.key);
      const following = behind?.shift();
      if (following) {
        this.parked--;
        this.freed.push(following);
        // The key stays busy: its next task starts from the freed list, before anything younger.
      } else this.busy.delete(entry.key);
    }
    this.pump();
  }

  private drained(): void {
    if (this.refused) {
      this.options.log.warn({ queue: this.options.name, refused: this.refused }, 'background work backlog drained');
      this.refused = 0;
    }
    if (this.catchUpDue && !this.closed && this.options.catchUp) {
      this.catchUpDue = false;
      this.active++;
      const catchUp = this.options.catchUp;
      Promise.resolve()
        .then(catchUp)
        .catch((err) => this.options.log.error({ err, queue: this.options.name }, 'background catch-up failed'))
        .finally(() => {
          this.active--;
          this.pump();
        });
      return;
    }
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  private isIdle(): boolean {
    return this.active === 0 && this.pending === 0 && !this.catchUpDue;
  }
}
