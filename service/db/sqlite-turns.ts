/**
 * SQLite has one connection, and kysely's SqliteDriver guards it with a mutex whose every waiter awaits the
 * same promise: each release wakes all of them, one wins, the rest wait again. N queries pending at once
 * (a burst of 10 000 job_update events: the notifier, ideas and filament usage each query per event) cost
 * N²/2 wake-ups, all microtasks: 10 000 completions held the event loop for over four minutes, past every
 * keep-alive (the next request on a kept-alive connection was reset, ECONNRESET) and /ws heartbeat.
 * better-sqlite3 answers synchronously, so even a fair queue drains in microtasks alone, without the loop
 * ever reading a socket or firing a timer. Here the connection passes in arrival order, and after a slice
 * of work (TURN_GRANTS uses of the connection or TURN_MS) the next one waits for the loop to turn once.
 */
import { performance } from 'node:perf_hooks';
import { setImmediate } from 'node:timers';
import { SqliteDialect, SqliteDriver, type DatabaseConnection, type Driver, type SqliteDialectConfig } from 'kysely';

/** Most uses of the connection (a statement, or a whole transaction) between two turns of the event loop. */
export const TURN_GRANTS = 256;
/** Most milliseconds the connection is handed on without the event loop turning. */
export const TURN_MS = 10;

/**
 * A first-come first-served lock that lets the event loop turn after a slice of work. A transaction holds
 * the lock from its begin to its commit, so a slice never splits one. `node:timers` and `node:perf_hooks`
 * are the real ones even under a test's fake timers, which replace the globals only.
 */
export class TurnTaking {
  private held = false;
  private readonly waiting: (() => void)[] = [];
  private head = 0;
  /** A grant waits for the loop to turn (setImmediate): newcomers queue behind it. */
  private yielding = false;
  private grants = 0;
  private sliceStart = -1;
  /** Uses of the lock that waited for the loop to turn (tests). */
  yields = 0;
  /** Most uses waiting at once since it was last set to 0 (tests: a burst's listeners keep it small). */
  mostWaiting = 0;

  /** Uses of the lock waiting now. */
  get pending(): number {
    return this.waiting.length - this.head;
  }

  /** Resolves when the caller holds the lock. */
  take(): Promise<void> {
    if (!this.held && !this.yielding && this.head === this.waiting.length) {
      if (!this.sliceSpent()) {
        this.grant();
        return Promise.resolve();
      }
    }
    const turn = new Promise<void>((resolve) => this.waiting.push(resolve));
    if (this.pending > this.mostWaiting) this.mostWaiting = this.pending;
    if (!this.held && !this.yielding) this.passOn();
    return turn;
  }

  /** Gives the lock to the next waiter, or frees it. */
  release(): void {
    this.held = false;
    this.passOn();
  }

  private passOn(): void {
    if (this.head === this.waiting.length) return;
    if (!this.sliceSpent()) return this.grantNext();
    this.yielding = true;
    this.yields++;
    setImmediate(() => {
      this.yielding = false;
      this.grantNext();
    });
  }

  private grantNext(): void {
    const next = this.waiting[this.head];
    this.waiting[this.head++] = undefined as never;
    // The array is cut when its consumed head is large, so a long burst does not keep it whole.
    if (this.head >= 1024 && this.head * 2 >= this.waiting.length) {
      this.waiting.splice(0, this.head);
      this.head = 0;
    }
    this.grant();
    next();
  }

  private grant(): void {
    this.held = true;
    if (this.sliceStart < 0) {
      this.sliceStart = performance.now();
      // The loop reached its check phase: sockets were read and timers fired, a new slice begins.
      setImmediate(() => {
        this.sliceStart = -1;
        this.grants = 0;
      });
    }
    this.grants++;
  }

  private sliceSpent(): boolean {
    return this.sliceStart >= 0 && (this.grants >= TURN_GRANTS || performance.now() - this.sliceStart >= TURN_MS);
  }
}

/** kysely's SqliteDriver with TurnTaking in front of its mutex, which then never has more than one waiter. */
class TurnTakingSqliteDriver extends SqliteDriver {
  readonly turns = new TurnTaking();

  override async acquireConnection(): Promise<DatabaseConnection> {
    await this.turns.take();
    try {
      return await super.acquireConnection();
    } catch (err) {
      this.turns.release();
      throw err;
    }
  }

  override async releaseConnection(): Promise<void> {
    try {
      await super.releaseConnection();
    } finally {
      this.turns.release();
    }
  }
}

/** SqliteDialect whose driver takes turns (see TurnTaking); `drivers` sees each driver made (tests). */
export class TurnTakingSqliteDialect extends SqliteDialect {
  constructor(
    private readonly settings: SqliteDialectConfig,
    private readonly drivers?: (turns: TurnTaking) => void,
  ) {
    super(settings);
  }

  override createDriver(): Driver {
    const driver = new TurnTakingSqliteDriver(this.settings);
    this.drivers?.(driver.turns);
    return driver;
  }
}
