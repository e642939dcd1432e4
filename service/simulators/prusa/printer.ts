/**
 * The simulated printer's machine: temperatures, the job and its life cycle,
 * in printer time that runs `speed` times faster than the wall clock. It has
 * no timers: every read first advances the model to "now", so a simulator
 * that nobody asks costs nothing and leaves nothing to stop.
 */
import { atTemperature, warm } from '../thermal';
import type { FsEntry } from './files';

export type JobState = 'PRINTING' | 'PAUSED' | 'FINISHED' | 'STOPPED' | 'ERROR';
export type Overlay = 'ATTENTION' | 'BUSY' | 'READY';

export interface SimJob {
  id: number;
  file: FsEntry;
  state: JobState;
  /** Printer seconds since the start (heating included). */
  elapsed: number;
  /** Printer seconds of actual printing. */
  printed: number;
  /** Printer seconds the print takes once heated. */
  duration: number;
  heated: boolean;
}

export const AMBIENT = 24;
const NOZZLE_TARGET = 215;
const BED_TARGET = 60;

export class SimPrinter {
  nozzle = AMBIENT;
  bed = AMBIENT;
  targetNozzle = 0;
  targetBed = 0;
  job: SimJob | null = null;
  overlay: Overlay | null = null;
  /** The message of ERROR / ATTENTION, shown in status_printer. */
  message: string | null = null;
  /**
   * The screen shows home, print preview or print finished: the only places a
   * Buddy printer takes a start from PrusaLink. False while someone is in a
   * menu (control API /not-ready); PrusaLink's state does not show it.
   */
  screenReady = true;
  private nextJobId: number;
  private last: number;

  constructor(
    private readonly speed: number,
    private readonly printSeconds: number,
    private readonly clock: () => number = Date.now,
    firstJobId = 100,
  ) {
    this.last = clock();
    this.nextJobId = firstJobId;
  }

  /** The word /api/v1/status puts in printer.state. */
  get state(): string {
    if (this.overlay) return this.overlay;
    if (this.job) return this.job.state;
    return 'IDLE';
  }

  /** A job is running or paused: no other print may start. */
  get busy(): boolean {
    return this.job?.state === 'PRINTING' || this.job?.state === 'PAUSED' || this.overlay === 'BUSY';
  }

  progress(): number {
    const j = this.job;
    if (!j) return 0;
    if (j.state === 'FINISHED') return 100;
    return Math.min(99, Math.floor((j.printed / j.duration) * 100));
  }

  timeRemaining(): number {
    const j = this.job;
    if (!j) return 0;
    if (j.state === 'FINISHED' || j.state === 'STOPPED' || j.state === 'ERROR') return 0;
    return Math.max(0, Math.round(j.duration - j.printed));
  }

  timePrinting(): number {
    return Math.round(this.job?.elapsed ?? 0);
  }

  /** Height of the nozzle: a 10 mm part grows with the progress. */
  axisZ(): number {
    const j = this.job;
    if (!j || !j.heated) return j ? 0.2 : 10;
    return Math.round((0.2 + (j.printed / j.duration) * 9.8) * 100) / 100;
  }

  advance(): void {
    const now = this.clock();
    const dt = ((now - this.last) / 1000) * this.speed;
    this.last = now;
    if (dt <= 0) return;
    warm(this, AMBIENT, dt);
    const j = this.job;
    if (!j || j.state !== 'PRINTING' || this.overlay === 'ATTENTION') return;
    j.elapsed += dt;
    if (!j.heated) {
      if (atTemperature(this)) j.heated = true;
      return;
    }
    j.printed += dt;
    if (j.printed >= j.duration) {
      j.printed = j.duration;
      this.end('FINISHED');
    }
  }

  start(file: FsEntry): SimJob {
    this.advance();
    this.overlay = null;
    this.message = null;
    this.job = { id: this.nextJobId++, file, state: 'PRINTING', elapsed: 0, printed: 0, duration: this.printSeconds, heated: false };
    this.targetNozzle = NOZZLE_TARGET;
    this.targetBed = BED_TARGET;
    return this.job;
  }

  pause(): boolean {
    this.advance();
    if (this.job?.state !== 'PRINTING') return false;
    this.job.state = 'PAUSED';
    return true;
  }

  resume(): boolean {
    this.advance();
    if (this.overlay === 'ATTENTION' && this.job?.state === 'PRINTING') {
      this.overlay = null;
      this.message = null;
      return true;
    }
    if (this.job?.state !== 'PAUSED') return false;
    this.job.state = 'PRINTING';
    return true;
  }

  stop(): boolean {
    this.advance();
    if (this.job?.state !== 'PRINTING' && this.job?.state !== 'PAUSED') return false;
    this.end('STOPPED');
    return true;
  }

  finish(): boolean {
    this.advance();
    if (this.job?.state !== 'PRINTING' && this.job?.state !== 'PAUSED') return false;
    this.job.printed = this.job.duration;
    this.job.heated = true;
    this.end('FINISHED');
    return true;
  }

  fail(message: string): boolean {
    this.advance();
    if (this.job?.state !== 'PRINTING' && this.job?.state !== 'PAUSED') return false;
    this.end('ERROR');
    this.message = message;
    return true;
  }

  attention(message: string): void {
    this.advance();
    this.overlay = 'ATTENTION';
    this.message = message;
  }

  setOverlay(overlay: 'BUSY' | 'READY'): boolean {
    this.advance();
    if (this.job?.state === 'PRINTING' || this.job?.state === 'PAUSED') return false;
    this.overlay = overlay;
    this.message = null;
    return true;
  }

  /** The user acknowledges on the screen: an ended job and any overlay go away. */
  idle(): boolean {
    this.advance();
    if (this.job?.state === 'PRINTING' || this.job?.state === 'PAUSED') return false;
    this.job = null;
    this.overlay = null;
    this.message = null;
    return true;
  }

  private end(state: JobState): void {
    if (!this.job) return;
    this.job.state = state;
    this.targetNozzle = 0;
    this.targetBed = 0;
  }
}
