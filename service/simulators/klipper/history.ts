/**
 * The simulated Moonraker's job history (its `history` component): one job per print, added when print_stats
 * starts printing and finished when the print ends, with Moonraker's statuses: completed, cancelled, error,
 * klippy_shutdown and klippy_disconnect (Klippy went away mid-print), server_exit, and interrupted (a job still
 * in progress when Moonraker starts again: the host lost power). Each change is told as `notify_history_changed`
 * ([{action: "added"|"finished", job}]). Bounded: the newest MAX_JOBS jobs are kept.
 */
import type { KlipperMachine, PrintStatsState } from './machine';

export type HistoryStatus = 'in_progress' | 'completed' | 'cancelled' | 'error' | 'klippy_shutdown' | 'klippy_disconnect' | 'server_exit' | 'interrupted';

export interface HistoryJob {
  job_id: string;
  user: string;
  filename: string;
  status: HistoryStatus;
  /** Unix seconds, as Moonraker keeps them. */
  start_time: number;
  end_time: number | null;
  print_duration: number;
  total_duration: number;
  filament_used: number;
  metadata: Record<string, unknown>;
  auxiliary_data: unknown[];
  exists: boolean;
}

const MAX_JOBS = 200;
const RUNNING: readonly PrintStatsState[] = ['printing', 'paused'];

export class SimHistory {
  private readonly jobs: HistoryJob[] = [];
  private nextId = 1;
  private current: HistoryJob | null = null;
  private lastState: PrintStatsState = 'standby';

  /** `notify` tells the clients (notify_history_changed). */
  constructor(private readonly notify: (action: 'added' | 'finished', job: HistoryJob) => void) {}

  /** Follows print_stats as Moonraker's job_state does: a start adds a job, an end state finishes it. */
  observe(m: KlipperMachine): void {
    const state = m.state;
    if (state === this.lastState) return;
    const was = this.lastState;
    this.lastState = state;
    if (state === 'printing' && !RUNNING.includes(was)) {
      if (this.current) this.finish('cancelled', m);
      this.add(m);
    } else if (state === 'complete') this.finish('completed', m);
    else if (state === 'error') this.finish('error', m);
    else if (state === 'cancelled' || state === 'standby') this.finish('cancelled', m);
  }

  /** Klippy shut down or went away mid-print: Moonraker ends the job with that status before print_stats says more. */
  klippyLost(status: 'klippy_shutdown' | 'klippy_disconnect', m: KlipperMachine): void {
    this.finish(status, m);
  }

  /** Moonraker comes back after its host lost power: the job left in progress is marked interrupted, untold. */
  restarted(m: KlipperMachine): void {
    if (this.current) this.current.status = 'interrupted';
    this.current = null;
    this.lastState = m.state;
  }

  /** server.history.list: newest first by default; `limit` 0 is all (Moonraker's own rule), 50 unless given. */
  list(params: Record<string, unknown>): { count: number; jobs: HistoryJob[] } {
    const int = (v: unknown, d: number) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : d);
    const order = typeof params.order === 'string' ? params.order.toLowerCase() : 'desc';
    if (order !== 'asc' && order !== 'desc') throw new Error(`Invalid \`order\` value: ${String(params.order).toUpperCase()}`);
    const sorted = order === 'desc' ? [...this.jobs].reverse() : [...this.jobs];
    const start = int(params.start, 0);
    const limit = int(params.limit, 50);
    const jobs = (limit > 0 ? sorted.slice(start, start + limit) : sorted).map((j) => ({ ...j }));
    return { count: jobs.length, jobs };
  }

  get(uid: unknown): HistoryJob | null {
    const job = this.jobs.find((j) => j.job_id === String(uid).toUpperCase().padStart(6, '0'));
    return job ? { ...job } : null;
  }

  private add(m: KlipperMachine): void {
    const job: HistoryJob = {
      job_id: (this.nextId++).toString(16).toUpperCase().padStart(6, '0'),
      user: 'No User',
      filename: m.filename,
      status: 'in_progress',
      start_time: Date.now() / 1000 - m.totalDuration,
      end_time: null,
      print_duration: 0,
      total_duration: 0,
      filament_used: 0,
      metadata: {},
      auxiliary_data: [],
      exists: true,
    };
    this.jobs.push(job);
    if (this.jobs.length > MAX_JOBS) this.jobs.splice(0, this.jobs.length - MAX_JOBS);
    this.current = job;
    this.notify('added', { ...job });
  }

  private finish(status: HistoryStatus, m: KlipperMachine): void {
    const job = this.current;
    if (!job) return;
    this.current = null;
    Object.assign(job, { status, end_time: Date.now() / 1000, print_duration: m.printDuration, total_duration: m.totalDuration, filament_used: Math.round(m.printDuration * 2.5 * 100) / 100 });
    this.notify('finished', { ...job });
  }
}
