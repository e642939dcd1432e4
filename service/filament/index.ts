/**
 * Filament tracking (issue 25), one object for the service to hold: the
 * spools and where they are, the AMS sync, what each print used, Spoolman.
 * It hooks in from outside: `onReport` beside the job tracker's, the job
 * events from the bus; nothing on the report path waits for it.
 */
import type { Logger } from 'pino';
import type { Store } from '../db';
import type { EventBus } from '../events';
import type { PrinterMaterial, PrinterState } from '../printers/driver';
import type { SettingsService } from '../settings';
import { AmsSync } from './ams-sync';
import { FileGramsCache } from './file-grams';
import type { SpoolmanOptions } from './spoolman/inventory';
import { SpoolService } from './spools';
import { FilamentUsageService } from './usage';
import type { RetryLaterOptions } from '../util/retry-later';

export interface FilamentDeps {
  store: Store;
  settings: SettingsService;
  bus: EventBus;
  log: Logger;
  stateOf: (printerId: string) => PrinterState | undefined;
  spoolman?: SpoolmanOptions;
  /** When a failed spool sync is retried without a report (tests shorten it). */
  retry?: RetryLaterOptions;
  /** Most usage steps waiting (default in usage.ts; tests make it small to overflow it). */
  usageBacklog?: number;
}

export type LoadedSpoolMaterial = PrinterMaterial & { spool_id: number | null; remaining_weight_g: number | null };

export class Filament {
  readonly spools: SpoolService;
  readonly usage: FilamentUsageService;
  readonly ams: AmsSync;
  readonly grams = new FileGramsCache();
  private readonly unsubscribe: (() => void)[] = [];

  constructor(deps: FilamentDeps) {
    const log = deps.log.child({ component: 'filament' });
    this.spools = new SpoolService(deps.store, deps.settings, deps.bus, log, deps.spoolman);
    this.usage = new FilamentUsageService(deps.store, this.spools, deps.settings, deps.bus, deps.stateOf, this.grams, log, deps.usageBacklog);
    this.ams = new AmsSync(deps.store, this.spools, this.usage, log, deps.retry);
    this.unsubscribe.push(
      deps.bus.on('job_update', (e) => this.usage.onJobUpdate(e)),
      deps.bus.on('printer_status', (e) => {
        if (e.change !== 'deleted' && e.change !== 'created') return;
        this.ams.forget(e.printer_id);
        if (e.change === 'deleted') this.spools.printerRemoved(e.printer_id).catch((err) => log.error({ err, printer_id: e.printer_id }, 'could not take the spools out of a removed printer'));
      }, { telemetry: false }),
    );
  }

  /** Every printer report (cheap unless the filament part changed). */
  onReport(printerId: string, state: PrinterState): void {
    this.ams.onReport(printerId, state);
  }

  /** Whether a spool sync of the printer failed: its next report, even one of temperatures alone, retries it. */
  awaitsRetry(printerId: string): boolean {
    return this.ams.awaitsRetry(printerId);
  }

  async start(): Promise<void> {
    await this.spools.start();
    await this.usage.start();
  }

  /** The printer's loaded materials with the spool in each slot. */
  materialsOf(printerId: string, materials: readonly PrinterMaterial[]): LoadedSpoolMaterial[] {
    return materials.map((m) => {
      const spool = this.spools.spoolAt(printerId, m.slot);
      return { slot: m.slot, type: m.type, color: m.color, remaining_percent: m.remaining_percent, spool_id: spool?.id ?? null, remaining_weight_g: spool?.remaining_weight_g ?? null };
    });
  }

  /** Waits for the work under way (tests). */
  async idle(): Promise<void> {
    await this.ams.idle();
    await this.usage.idle();
    await this.spools.spoolman.idle();
  }

  async close(): Promise<void> {
    for (const off of this.unsubscribe.splice(0)) off();
    await this.ams.close();
    await this.usage.idle();
    await this.spools.close();
  }
}
