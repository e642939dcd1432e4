/**
 * Plate state per printer: every print end (finished, failed, cancelled, also
 * at the printer's screen) leaves the plate `needs_clearing` unless the
 * printer clears it itself (`plate_auto_clear`); only the user clears it
 * (POST /printers/{id}/plate-cleared). Stored in the printers table so that a
 * restart or a power cycle cannot forget it, and mirrored in memory so that
 * the dispatcher sees a change in the same report that caused it.
 */
import type { Logger } from 'pino';
import type { Store } from '../db';
import type { PlateState } from '../db/repositories/printers';
import type { EventBus } from '../events';
import type { MachineState, PrinterState } from '../printers/driver';
import type { Fleet } from '../printers/fleet';
import { nowIso } from '../util/time';

const PRINTING: readonly MachineState[] = ['preparing', 'printing', 'paused'];

export class PlateTracker {
  private readonly lastState = new Map<string, MachineState>();
  private readonly plates = new Map<string, PlateState>();
  private writes: Promise<unknown> = Promise.resolve();
  private readonly stopListening: () => void;

  constructor(
    private readonly store: Store,
    private readonly fleet: Fleet,
    private readonly bus: EventBus,
    private readonly log: Logger,
  ) {
    // A removed printer's plate goes with its record: one added again under its id starts as its new record says.
    this.stopListening = bus.on('printer_status', (e) => {
      if (e.change !== 'deleted') return;
      this.plates.delete(e.printer_id);
      this.lastState.delete(e.printer_id);
    }, { telemetry: false });
  }

  /** Loads every printer's stored plate state (at start). */
  async load(): Promise<void> {
    for (const p of await this.store.printers.list()) this.plates.set(p.id, p.plate_state ?? 'clear');
  }

  plateOf(printerId: string): PlateState {
    return this.plates.get(printerId) ?? 'clear';
  }

  /** Follows a printer's reports; a print that ends fouls the plate. Returns true when the plate state changed. */
  onReport(printerId: string, state: PrinterState, autoClear: boolean): boolean {
    const before = this.lastState.get(printerId);
    this.lastState.set(printerId, state.state);
    const ended = before !== undefined && PRINTING.includes(before) && !PRINTING.includes(state.state);
    if (!ended || autoClear || this.plateOf(printerId) === 'needs_clearing') return false;
    this.set(printerId, 'needs_clearing');
    return true;
  }

  /** A print is known to have ended (a queued print resolved after a restart): the plate needs clearing. */
  printEnded(printerId: string, autoClear: boolean): void {
    if (!autoClear && this.plateOf(printerId) !== 'needs_clearing') this.set(printerId, 'needs_clearing');
  }

  /** The user cleared the plate. */
  async clear(printerId: string): Promise<void> {
    this.set(printerId, 'clear');
    await this.writes;
  }

  /** Waits for the stored state to catch up (tests, shutdown). */
  async idle(): Promise<void> {
    await this.writes;
  }

  /** Stops following printer removals (shutdown). */
  close(): void {
    this.stopListening();
  }

  private set(printerId: string, plate: PlateState): void {
    this.plates.set(printerId, plate);
    this.writes = this.writes
      .then(() => this.store.printers.update(printerId, { plate_state: plate, updated_at: nowIso() }))
      .catch((err) => this.log.error({ err, printer_id: printerId }, 'could not store the plate state'));
    this.log.info({ printer_id: printerId, plate_state: plate }, plate === 'clear' ? 'plate cleared' : 'plate needs clearing');
    if (!this.fleet.announcePlate(printerId, plate)) {
      // Not connected (inactive printer): the frame says what is known.
      this.bus.emit('printer_status', { printer_id: printerId, change: 'updated', status: 'offline', connection_status: 'disconnected', progress: 0, temperatures: { nozzle: 0, bed: 0 }, plate_state: plate });
    }
  }
}
