/**
 * The simulated Klipper machine: Klippy's state, heaters, and the print as
 * print_stats, virtual_sdcard and display_status report it, in printer time
 * that runs `speed` times faster than the wall clock. No timers: every read
 * first advances the model to "now".
 */
import { atTemperature, warm } from '../thermal';

export type PrintStatsState = 'standby' | 'printing' | 'paused' | 'complete' | 'cancelled' | 'error';
export type KlippyState = 'ready' | 'startup' | 'shutdown' | 'error' | 'disconnected';

const AMBIENT = 23;
const NOZZLE_TARGET = 240;
const BED_TARGET = 100;
export const LAYERS = 50;
/** What Klipper appends to every shutdown reason in its state message (klippy.py message_shutdown). */
export const SHUTDOWN_ADVICE = 'Once the underlying issue is corrected, use the\n"FIRMWARE_RESTART" command to reset the firmware, reload the\nconfig, and restart the host software.\nPrinter is shutdown\n';

export class KlipperMachine {
  nozzle = AMBIENT;
  bed = AMBIENT;
  targetNozzle = 0;
  targetBed = 0;
  state: PrintStatsState = 'standby';
  filename = '';
  message = '';
  klippy: KlippyState = 'ready';
  /** What the filament runout sensor (when the printer has one) reads. */
  filamentDetected = true;
  klippyMessage = 'Printer is ready';
  /**
   * Seconds since the start, pauses included, on the wall clock as Klipper counts them (whatever the speed:
   * "now - total_duration" is the print's start, the same for every client at every moment), and printer
   * seconds of printing proper (what the progress follows).
   */
  totalDuration = 0;
  printDuration = 0;
  private startedAt = 0;
  private heated = false;
  private last: number;

  constructor(
    private readonly speed: number,
    private readonly printSeconds: number,
    private readonly clock: () => number = Date.now,
  ) {
    this.last = clock();
  }

  get busy(): boolean {
    return this.state === 'printing' || this.state === 'paused';
  }

  /** 0..1 of the file printed. */
  get fraction(): number {
    if (this.state === 'complete') return 1;
    if (!this.filename || this.state === 'standby') return 0;
    return Math.min(0.999, this.printDuration / this.printSeconds);
  }

  get currentLayer(): number {
    if (!this.filename || this.state === 'standby') return 0;
    return this.heated ? Math.max(1, Math.ceil(this.fraction * LAYERS)) : 0;
  }

  advance(): void {
    const now = this.clock();
    const dt = ((now - this.last) / 1000) * this.speed;
    this.last = now;
    if (dt <= 0) return;
    warm(this, AMBIENT, dt);
    if (this.state !== 'printing' && this.state !== 'paused') return;
    this.totalDuration = (now - this.startedAt) / 1000;
    if (this.state !== 'printing') return;
    if (!this.heated) {
      if (atTemperature(this)) this.heated = true;
      return;
    }
    this.printDuration += dt;
    if (this.printDuration >= this.printSeconds) {
      this.printDuration = this.printSeconds;
      this.end('complete');
    }
  }

  start(filename: string): boolean {
    this.advance();
    if (this.busy || this.klippy !== 'ready') return false;
    this.state = 'printing';
    this.filename = filename;
    this.message = '';
    this.totalDuration = 0;
    this.startedAt = this.clock();
    this.printDuration = 0;
    this.heated = false;
    this.targetNozzle = NOZZLE_TARGET;
    this.targetBed = BED_TARGET;
    return true;
  }

  pause(): boolean {
    this.advance();
    if (this.state !== 'printing') return false;
    this.state = 'paused';
    return true;
  }

  resume(): boolean {
    this.advance();
    if (this.state !== 'paused') return false;
    this.state = 'printing';
    return true;
  }

  cancel(): boolean {
    this.advance();
    if (!this.busy) return false;
    this.end('cancelled');
    return true;
  }

  finish(): boolean {
    this.advance();
    if (!this.busy) return false;
    this.heated = true;
    this.printDuration = this.printSeconds;
    this.end('complete');
    return true;
  }

  fail(message: string): boolean {
    this.advance();
    if (!this.busy) return false;
    this.end('error');
    this.message = message;
    return true;
  }

  /** SDCARD_RESET_FILE: back to standby, the last file forgotten. */
  reset(): boolean {
    this.advance();
    if (this.busy) return false;
    this.state = 'standby';
    this.filename = '';
    this.message = '';
    this.totalDuration = 0;
    this.printDuration = 0;
    return true;
  }

  /**
   * The runout sensor's reading changes. Filament gone during a print: Klipper's filament_switch_sensor runs its
   * runout_gcode (pause_on_runout, the default: PAUSE), so the print pauses; filament back changes nothing else.
   */
  runout(detected: boolean): void {
    this.advance();
    this.filamentDetected = detected;
    if (!detected && this.state === 'printing') this.state = 'paused';
  }

  /** An emergency stop or an MCU fault: Klippy shuts down; a running print ends in error. */
  shutdown(message: string): void {
    this.advance();
    if (this.busy) {
      this.end('error');
      this.message = message;
    }
    this.targetNozzle = 0;
    this.targetBed = 0;
    this.klippy = 'shutdown';
    // As Klipper words it: the reason, then its own advice (webhooks.state_message, printer.info).
    this.klippyMessage = `${message}\n${SHUTDOWN_ADVICE}`;
  }

  /** FIRMWARE_RESTART: Klippy is ready again, the print state back to standby. */
  restart(): void {
    this.klippy = 'ready';
    this.klippyMessage = 'Printer is ready';
    this.state = 'standby';
    this.filename = '';
    this.message = '';
  }

  /** The host lost power: Klipper starts afresh (ready, standby, heaters off), the print is gone. */
  powerLoss(): void {
    this.restart();
    this.targetNozzle = 0;
    this.targetBed = 0;
    this.totalDuration = 0;
    this.printDuration = 0;
  }

  private end(state: PrintStatsState): void {
    this.state = state;
    this.targetNozzle = 0;
    this.targetBed = 0;
  }
}
