/**
 * The anomaly rules of the aggregation service's dashboard, all against the same clock
 * (see the rules listed in ANOMALY_RULES and in stats.ts).
 */
import type { z } from 'zod';
import type { Anomaly as AnomalySchema } from './schemas';
import { DAY_MS, type AggregatorRepository } from './repository';
import { change, iso, pct, round2, WEEK_MS } from './stats-math';

type Anomaly = z.infer<typeof AnomalySchema>;

export const ANOMALY_RULES = [
  'active installations (7 days vs the 7 before): down >= 20 % medium, down >= 50 % high, up >= 50 % spike (medium)',
  'submissions in the last 24 h vs the daily mean of the 30 days before (needs 7 days of history): > 3x spike (medium), < 0.2x drop (high)',
  'errors (7 days vs the 7 before): up >= 50 % medium, up >= 100 % high',
  'installations reporting errors in the last 7 days: > 30 % high',
];

/** The anomalies found at `now`, the most severe first. */
export async function findAnomalies(repo: AggregatorRepository, now: number) {
  const at = iso(now);
  const found: Anomaly[] = [];
  const [active, previous, last24, baseline, range, errorsWeek, errorsPrevious, withErrors] = await Promise.all([
    repo.activeCount(now - WEEK_MS, now),
    repo.activeCount(now - 2 * WEEK_MS, now - WEEK_MS),
    repo.totals(now - DAY_MS, now),
    repo.totals(now - 31 * DAY_MS, now - DAY_MS),
    repo.receivedRange(),
    repo.totals(now - WEEK_MS, now),
    repo.totals(now - 2 * WEEK_MS, now - WEEK_MS),
    repo.withErrorsCount(now - WEEK_MS, now),
  ]);

  const activeChange = change(active, previous);
  if (activeChange !== null) {
    const base = { metric: 'active_installations_7d', current_value: active, baseline_value: previous, change_percent: activeChange, detected_at: at };
    if (activeChange <= -50) {
      found.push({ ...base, type: 'active_installations_drop', severity: 'high', threshold: 'down >= 50 % week over week', message: `Active installations fell by ${-activeChange} % week over week (${previous} -> ${active})` });
    } else if (activeChange <= -20) {
      found.push({ ...base, type: 'active_installations_drop', severity: 'medium', threshold: 'down >= 20 % week over week', message: `Active installations fell by ${-activeChange} % week over week (${previous} -> ${active})` });
    } else if (activeChange >= 50) {
      found.push({ ...base, type: 'active_installations_spike', severity: 'medium', threshold: 'up >= 50 % week over week', message: `Active installations rose by ${activeChange} % week over week (${previous} -> ${active})` });
    }
  }

  // The daily mean over the 30 days before the last 24 h, over the days the service has data for.
  if (range.first !== null) {
    const historyDays = Math.min(30, (now - DAY_MS - range.first) / DAY_MS);
    if (historyDays >= 7) {
      const mean = baseline.submissions / historyDays;
      const base = { metric: 'submissions_24h', current_value: last24.submissions, baseline_value: round2(mean), change_percent: mean > 0 ? change(last24.submissions, mean) : null, detected_at: at };
      if (mean > 0 && last24.submissions > 3 * mean) {
        found.push({ ...base, type: 'submission_spike', severity: 'medium', threshold: '> 3x the 30-day daily mean', message: `${last24.submissions} submissions in the last 24 h, more than 3x the daily mean of ${round2(mean)}` });
      } else if (mean > 0 && last24.submissions < 0.2 * mean) {
        found.push({ ...base, type: 'submission_drop', severity: 'high', threshold: '< 0.2x the 30-day daily mean', message: `${last24.submissions} submissions in the last 24 h, below 0.2x the daily mean of ${round2(mean)}` });
      }
    }
  }

  const errorChange = change(errorsWeek.errors, errorsPrevious.errors);
  if (errorChange !== null && errorChange >= 50) {
    found.push({
      type: 'error_increase',
      severity: errorChange >= 100 ? 'high' : 'medium',
      metric: 'errors_7d',
      message: `Reported errors rose by ${errorChange} % week over week (${errorsPrevious.errors} -> ${errorsWeek.errors})`,
      current_value: errorsWeek.errors,
      baseline_value: errorsPrevious.errors,
      change_percent: errorChange,
      threshold: errorChange >= 100 ? 'up >= 100 % week over week' : 'up >= 50 % week over week',
      detected_at: at,
    });
  }

  if (active > 0 && withErrors / active > 0.3) {
    found.push({
      type: 'error_prevalence',
      severity: 'high',
      metric: 'installations_with_errors_7d',
      message: `${pct(withErrors, active)} % of the installations active in the last 7 days reported errors (${withErrors} of ${active})`,
      current_value: pct(withErrors, active),
      baseline_value: 30,
      change_percent: null,
      threshold: '> 30 % of active installations',
      detected_at: at,
    });
  }

  const order = { high: 0, medium: 1, low: 2 };
  found.sort((a, b) => order[a.severity] - order[b.severity]);
  return {
    generated_at: at,
    anomalies: found,
    counts: { high: found.filter((a) => a.severity === 'high').length, medium: found.filter((a) => a.severity === 'medium').length, low: found.filter((a) => a.severity === 'low').length },
    rules: ANOMALY_RULES,
  };
}
