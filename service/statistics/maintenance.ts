/** Maintenance events of a printer: recorded by users, counted by the printer statistics. */
import { notFound } from '../errors';
import type { Store } from '../db';
import type { CreateMaintenanceInput, MaintenanceEventView, MaintenanceListFilter } from '../schemas/statistics';
import { nowIso } from '../util/time';
import { paginationOf } from '../util/pagination';

export class MaintenanceLog {
  constructor(private readonly store: Store) {}

  async record(printerId: string, input: CreateMaintenanceInput): Promise<MaintenanceEventView> {
    await this.requirePrinter(printerId);
    const now = nowIso();
    const event = await this.store.maintenance.insert({
      printer_id: printerId,
      kind: input.kind,
      notes: input.notes ?? null,
      performed_at: input.performed_at === undefined ? now : new Date(input.performed_at).toISOString(),
      created_at: now,
    });
    return event as MaintenanceEventView;
  }

  async list(printerId: string, q: MaintenanceListFilter) {
    await this.requirePrinter(printerId);
    const { events, total } = await this.store.maintenance.list(printerId, q);
    return {
      printer_id: printerId,
      maintenance: events as MaintenanceEventView[],
      pagination: paginationOf(q, total),
    };
  }

  private async requirePrinter(printerId: string): Promise<void> {
    if (!(await this.store.printers.exists(printerId))) throw notFound('PRINTER_NOT_FOUND', `Printer "${printerId}" not found`, { printer_id: printerId });
  }
}
