/**
 * Farm and printer statistics over a period. The database does the
 * aggregation (service/db/repositories/statistics.ts); this turns its sums
 * into the API's figures: rates in percent (0 to 100, 1 decimal, 0 when there
 * is nothing to divide by), kg, hours, MiB and money rounded for display.
 */
import { notFound } from '../errors';
import type { Store } from '../db';
import type { MaterialUse } from '../db/repositories/statistics';
import type { PrinterStatisticsView, StatisticsFilter, StatisticsOverviewView } from '../schemas/statistics';
import type { SettingsService } from '../settings';
import { resolvePeriod, type ResolvedPeriod } from './period';

const round = (value: number, decimals: number) => {
  const f = 10 ** decimals;
  return Math.round(value * f) / f;
};

/** `part` of `whole` in percent, 1 decimal, within 0 to 100; 0 when `whole` is 0. */
export function percent(part: number, whole: number): number {
  if (!(whole > 0) || !(part > 0)) return 0;
  return Math.min(100, round((part / whole) * 100, 1));
}

const kg = (grams: number) => round(grams / 1000, 3);
const hours = (seconds: number) => round(seconds / 3600, 2);
const money = (value: number) => round(value, 2);
const seconds = (from: string, to: string) => Math.max(0, (Date.parse(to) - Date.parse(from)) / 1000);
const minIso = (a: string, b: string) => (a < b ? a : b);
const maxIso = (a: string, b: string) => (a > b ? a : b);

function materialsOf(rows: MaterialUse[]) {
  const breakdown = rows.map((r) => ({ material: r.material ?? 'unknown', used_kg: kg(Number(r.used_grams)), jobs: Number(r.jobs) }));
  // Rows come heaviest first; the material of no named type never is "the most used material".
  const mostUsed = rows.find((r) => r.material !== null)?.material ?? null;
  return { breakdown, mostUsed };
}

export class StatisticsService {
  constructor(
    private readonly store: Store,
    private readonly settings: SettingsService,
  ) {}

  private period(q: StatisticsFilter, now: Date): ResolvedPeriod {
    return resolvePeriod(q, this.settings.get('timezone'), now);
  }

  async overview(q: StatisticsFilter): Promise<StatisticsOverviewView> {
    const clock = new Date();
    const now = clock.toISOString();
    const p = this.period(q, clock);
    const { totals, materials, busySeconds, printers, files } = await this.store.statistics.overview({ from: p.from, to: p.to, now });
    const total = Number(totals.total_jobs);
    const completed = Number(totals.completed_jobs);
    const failed = Number(totals.failed_jobs);
    const finished = completed + failed + Number(totals.cancelled_jobs);
    const business = Number(totals.business_jobs);
    const downloaded = Number(files.downloaded_files);
    const { breakdown, mostUsed } = materialsOf(materials);
    return {
      period: p.period,
      start_date: p.start_date,
      end_date: p.end_date,
      printers: {
        total_active: Number(printers.total_active),
        online_count: Number(printers.online_count),
        utilization_rate: percent(busySeconds, Number(printers.available_seconds)),
      },
      jobs: {
        total_jobs: total,
        completed_jobs: completed,
        failed_jobs: failed,
        success_rate: percent(completed, finished),
        total_print_time: Math.round(Number(totals.total_print_time)),
        average_job_duration: Number(totals.timed_jobs) > 0 ? Math.round(Number(totals.total_print_time) / Number(totals.timed_jobs)) : 0,
      },
      materials: {
        total_used_kg: kg(Number(totals.used_grams)),
        most_used_material: mostUsed,
        materials_breakdown: breakdown,
      },
      business: {
        business_jobs: business,
        private_jobs: total - business,
        business_percentage: percent(business, total),
        revenue_estimate: money(Number(totals.business_total_cost)),
      },
      files: {
        total_files: Number(files.total_files),
        downloaded_files: downloaded,
        local_only_files: Number(files.local_only_files),
        download_success_rate: percent(downloaded, downloaded + Number(files.error_files)),
        total_storage_used_mb: round(Number(files.stored_bytes) / 1024 / 1024, 2),
      },
    };
  }

  async printer(printerId: string, q: StatisticsFilter): Promise<PrinterStatisticsView> {
    const printer = await this.store.printers.get(printerId);
    if (!printer) throw notFound('PRINTER_NOT_FOUND', `Printer "${printerId}" not found`, { printer_id: printerId });
    const clock = new Date();
    const now = clock.toISOString();
    const p = this.period(q, clock);
    // The part of the period that has passed, and of that the part since the printer was added.
    const until = minIso(p.to, now);
    const [stats, maintenance] = await Promise.all([
      this.store.statistics.printer({ from: p.from, to: p.to, now }, printerId),
      this.store.maintenance.summary(printerId, p.from, p.to),
    ]);
    const { totals, materials, quality, upSeconds } = stats;
    // Up time holds the printing time, but jobs recorded twice over one span (overlapping rows) add up to more
    // than the time they took: printing time is never more than the up time.
    const busySeconds = Math.min(stats.busySeconds, upSeconds);
    const completed = Number(totals.completed_jobs);
    const failed = Number(totals.failed_jobs);
    const cancelled = Number(totals.cancelled_jobs);
    const { mostUsed } = materialsOf(materials);
    const surface = quality.surface_quality === null ? null : round(Number(quality.surface_quality), 1);
    const accuracy = quality.dimensional_accuracy === null ? null : round(Number(quality.dimensional_accuracy), 2);
    return {
      printer_id: printer.id,
      printer_name: printer.name,
      period: p.period,
      start_date: p.start_date,
      end_date: p.end_date,
      uptime: {
        total_hours: hours(upSeconds),
        active_hours: hours(busySeconds),
        utilization_rate: percent(busySeconds, seconds(maxIso(p.from, printer.created_at), until)),
      },
      jobs: {
        total_jobs: Number(totals.total_jobs),
        completed_jobs: completed,
        failed_jobs: failed,
        cancelled_jobs: cancelled,
        success_rate: percent(completed, completed + failed + cancelled),
        average_duration: Number(totals.timed_jobs) > 0 ? Math.round(Number(totals.total_print_time) / Number(totals.timed_jobs)) : 0,
      },
      materials: {
        total_used_kg: kg(Number(totals.used_grams)),
        cost_total: money(Number(totals.material_cost)),
        most_used: mostUsed,
      },
      maintenance: {
        last_maintenance: maintenance.last,
        nozzle_changes: maintenance.nozzle_changes,
        bed_calibrations: maintenance.bed_calibrations,
      },
      quality_metrics: {
        first_layer_success_rate: percent(Number(quality.good_first_layers), Number(quality.rated_first_layers)),
        average_surface_quality: surface,
        dimensional_accuracy: accuracy,
      },
    };
  }
}
