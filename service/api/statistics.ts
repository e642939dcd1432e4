import type { ServiceContext } from '../context';
import { PrinterIdParams } from '../schemas/printers';
import {
  CreateMaintenanceBody,
  MaintenanceEvent,
  MaintenanceList,
  MaintenanceListQuery,
  PrinterStatistics,
  StatisticsOverview,
  StatisticsQuery,
} from '../schemas/statistics';
import { MaintenanceLog } from '../statistics/maintenance';
import { StatisticsService } from '../statistics/service';
import { defineRoute, type AnyRoute } from '../http/route';

const PERIOD_RULES =
  'Give `period` (day, week, month, year; default week) or `start_date` and `end_date` (a custom range, both days included), not both: other combinations, an end before the start and impossible dates are 400 VALIDATION_ERROR. Days are calendar days of the configured time zone (setting `timezone`).';

export function statisticsRoutes({ store, settings }: ServiceContext): AnyRoute[] {
  const statistics = new StatisticsService(store, settings);
  const maintenance = new MaintenanceLog(store);
  return [
    defineRoute({
      method: 'get',
      path: '/statistics/overview',
      tag: 'Statistics',
      summary: 'Farm statistics of a period: printers, jobs, materials, business, files',
      description: `${PERIOD_RULES} Rates are percentages from 0 to 100 with 1 decimal, and 0 when there is nothing to divide by (no jobs, no printers).`,
      query: StatisticsQuery,
      response: StatisticsOverview,
      handler: ({ query }) => statistics.overview(query),
    }),
    defineRoute({
      method: 'get',
      path: '/statistics/printers/{printer_id}',
      tag: 'Statistics',
      summary: 'Statistics of one printer: uptime, jobs, materials, maintenance, quality',
      description: `${PERIOD_RULES} 404 PRINTER_NOT_FOUND for an unknown printer. Uptime comes from the printer's status history (kept since this version), printing time from its jobs.`,
      params: PrinterIdParams,
      query: StatisticsQuery,
      response: PrinterStatistics,
      handler: ({ params, query }) => statistics.printer(params.printer_id, query),
    }),
    defineRoute({
      method: 'post',
      path: '/printers/{printer_id}/maintenance',
      tag: 'Printers',
      summary: 'Record a maintenance event (nozzle change, bed calibration...)',
      description: '404 PRINTER_NOT_FOUND for an unknown printer. `performed_at` defaults to now and may not lie in the future. The events feed the `maintenance` figures of GET /statistics/printers/{printer_id}.',
      params: PrinterIdParams,
      body: CreateMaintenanceBody,
      status: 201,
      response: MaintenanceEvent,
      handler: ({ params, body }) => maintenance.record(params.printer_id, body),
    }),
    defineRoute({
      method: 'get',
      path: '/printers/{printer_id}/maintenance',
      tag: 'Printers',
      summary: "A printer's maintenance events, newest first",
      description: '404 PRINTER_NOT_FOUND for an unknown printer. Filter with `kind`.',
      params: PrinterIdParams,
      query: MaintenanceListQuery,
      response: MaintenanceList,
      handler: ({ params, query }) => maintenance.list(params.printer_id, query),
    }),
  ];
}
