/**
 * Statistics periods: whole calendar days in the configured time zone.
 * A named period ends today (day: today; week: the last 7 days; month: the
 * last 30; year: the last 365); a custom one runs from start_date to
 * end_date, both included. The instants are [from, to), `to` being the start
 * of the day after the last one, so DST days have their real length.
 */
import type { StatisticsFilter } from '../schemas/statistics';
import { calendarDate, dayStart } from '../util/time';

export type PeriodName = 'day' | 'week' | 'month' | 'year';

export const PERIOD_DAYS: Record<PeriodName, number> = { day: 1, week: 7, month: 30, year: 365 };
export const DEFAULT_PERIOD: PeriodName = 'week';

export interface ResolvedPeriod {
  period: PeriodName | 'custom';
  /** First and last day, YYYY-MM-DD. */
  start_date: string;
  end_date: string;
  /** ISO instants: from (included) and to (excluded). */
  from: string;
  to: string;
}

/** The calendar day `days` after `date` (YYYY-MM-DD). */
export function addDays(date: string, days: number): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);
}

/**
 * Resolved periods, remembered: time-zone arithmetic builds several Intl formatters (most of a cheap
 * request's time). A custom period never changes; a named one holds until its last day ends.
 */
const memo = new Map<string, { period: ResolvedPeriod; validFrom: number; validTo: number }>();
const MEMO_SIZE = 256;

export function resolvePeriod(q: StatisticsFilter, timeZone: string, now: Date = new Date()): ResolvedPeriod {
  const key = `${timeZone}|${q.period ?? ''}|${q.start_date ?? ''}|${q.end_date ?? ''}`;
  const t = now.getTime();
  const hit = memo.get(key);
  if (hit && t >= hit.validFrom && t < hit.validTo) return { ...hit.period };
  const period = compute(q, timeZone, now);
  const custom = period.period === 'custom';
  if (memo.size >= MEMO_SIZE) memo.clear();
  memo.set(key, {
    period,
    validFrom: custom ? -Infinity : dayStart(period.end_date, timeZone).getTime(),
    validTo: custom ? Infinity : Date.parse(period.to),
  });
  return { ...period };
}

function compute(q: StatisticsFilter, timeZone: string, now: Date): ResolvedPeriod {
  let period: ResolvedPeriod['period'];
  let start: string;
  let end: string;
  if (q.start_date !== undefined && q.end_date !== undefined) {
    period = 'custom';
    start = q.start_date;
    end = q.end_date;
  } else {
    period = q.period ?? DEFAULT_PERIOD;
    end = calendarDate(now, timeZone);
    start = addDays(end, 1 - PERIOD_DAYS[period]);
  }
  return {
    period,
    start_date: start,
    end_date: end,
    from: dayStart(start, timeZone).toISOString(),
    to: dayStart(addDays(end, 1), timeZone).toISOString(),
  };
}
