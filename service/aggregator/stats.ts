/**
 * The dashboard views of the aggregation service. Distributions (deployment
 * modes, versions, countries, printers, features) describe the installations
 * active in a window by their latest submission; timelines count back from
 * now in buckets of a day or a week.
 *
 * Anomaly rules (all against the same clock):
 *  - active installations, last 7 days against the 7 before: down >= 20 %
 *    medium, down >= 50 % high, up >= 50 % a spike (medium);
 *  - submissions in the last 24 h against the daily mean of the 30 days
 *    before (needs 7 days of history): above 3x a spike (medium), below 0.2x
 *    a drop (high);
 *  - errors, last 7 days against the 7 before: up >= 50 % medium, >= 100 % high;
 *  - more than 30 % of the installations active in the last 7 days reported
 *    errors: high.
 */
import type { z } from 'zod';
import type { ReportData } from './schemas';
import { DAY_MS, type AggregatorRepository } from './repository';
import { findAnomalies } from './anomalies';
import type { LatestField } from './reads';
import { byCountThenName, change, compareVersions, direction, featureCounts, iso, pct, round2, tally, WEEK_MS, type Interval } from './stats-math';

/**
 * The error codes, features, versions, deployment modes and printer types a view lists at most: senders name
 * them, so the lists are cut in SQL to the largest and the rest is summed (by_type_other, features_other,
 * features_omitted, versions_other, versions_omitted, modes_other, types_other).
 */
export const TOP_NAMES = 50;

/** All installations of a tally of latest submissions: each counts under one value. */
const allInstallations = (t: { shown: { installations: number }[]; rest: { installations: number } }) => t.shown.reduce((sum, r) => sum + r.installations, t.rest.installations);

// Kept importable from here, where it has always been.
export { compareVersions };

export class AggregatorStats {
  constructor(
    private readonly repo: AggregatorRepository,
    private readonly now: () => number = Date.now,
  ) {}

  /** The installations active in the last `days`, grouped by fields of their latest submission. */
  private async latest<K extends LatestField>(days: number, by: readonly K[], end = this.now()) {
    const groups = await this.repo.latestGroups(end - days * DAY_MS, end, by);
    return { groups, installations: groups.reduce((sum, g) => sum + g.installations, 0) };
  }

  async summary() {
    const now = this.now();
    const [total, active7, active30, new7, totals, last24, range, latest30] = await Promise.all([
      this.repo.installationCount(),
      this.repo.activeCount(now - 7 * DAY_MS, now),
      this.repo.activeCount(now - 30 * DAY_MS, now),
      this.repo.newCount(now - 7 * DAY_MS, now),
      this.repo.totals(),
      this.repo.totals(now - DAY_MS, now),
      this.repo.receivedRange(),
      this.latest(30, [], now),
    ]);
    const { submissions, ...counters } = totals;
    return {
      generated_at: iso(now),
      total_installations: total,
      active_installations_7d: active7,
      active_installations_30d: active30,
      new_installations_7d: new7,
      total_submissions: submissions,
      submissions_24h: last24.submissions,
      total_printers: latest30.groups.reduce((sum, g) => sum + g.printers, 0),
      totals: { ...counters, uptime_hours: round2(counters.uptime_hours) },
      job_success_rate: pct(counters.jobs_completed, counters.jobs_completed + counters.jobs_failed),
      first_submission_at: range.first === null ? null : iso(range.first),
      last_submission_at: range.last === null ? null : iso(range.last),
    };
  }

  private bucketing(days: number, interval: Interval) {
    const size = interval === 'day' ? DAY_MS : WEEK_MS;
    const count = Math.max(1, Math.ceil((days * DAY_MS) / size));
    const end = this.now();
    /** Oldest first. */
    const periods = Array.from({ length: count }, (_, i) => count - 1 - i).map((bucket) => ({
      bucket,
      period_start: iso(end - (bucket + 1) * size),
      period_end: iso(end - bucket * size),
    }));
    return { size, count, end, periods };
  }

  async installations(days: number, interval: Interval) {
    const { size, count, end, periods } = this.bucketing(days, interval);
    const [total, active7, previous7, active30, new7, buckets, fresh] = await Promise.all([
      this.repo.installationCount(),
      this.repo.activeCount(end - 7 * DAY_MS, end),
      this.repo.activeCount(end - 14 * DAY_MS, end - 7 * DAY_MS),
      this.repo.activeCount(end - 30 * DAY_MS, end),
      this.repo.newCount(end - 7 * DAY_MS, end),
      this.repo.buckets(end, size, count),
      this.repo.newPerBucket(end, size, count),
    ]);
    const byBucket = new Map(buckets.map((b) => [b.bucket, b]));
    const wow = change(active7, previous7);
    return {
      generated_at: iso(end),
      days,
      interval,
      total_installations: total,
      active_installations_7d: active7,
      active_installations_30d: active30,
      new_installations_7d: new7,
      week_over_week_change: wow,
      trend_direction: direction(wow),
      trend: periods.map(({ bucket, period_start, period_end }) => ({
        period_start,
        period_end,
        active_installations: byBucket.get(bucket)?.active ?? 0,
        new_installations: fresh.get(bucket) ?? 0,
        submissions: byBucket.get(bucket)?.submissions ?? 0,
      })),
    };
  }

  async deploymentModes(days: number) {
    const end = this.now();
    const modes = await this.repo.latestTally(end - days * DAY_MS, end, 'deployment_mode', TOP_NAMES);
    const installations = allInstallations(modes);
    return {
      generated_at: iso(end),
      days,
      total_installations: installations,
      modes: modes.shown
        .map(({ name, installations: n }) => ({ key: name, n }))
        .sort(byCountThenName)
        .map(({ key, n }) => ({ mode: key, installations: n, percentage: pct(n, installations) })),
      modes_other: { modes: modes.rest.names, installations: modes.rest.installations },
    };
  }

  async versions(days: number) {
    const end = this.now();
    const tallied = await this.repo.latestTally(end - days * DAY_MS, end, 'app_version', TOP_NAMES);
    const installations = allInstallations(tallied);
    // The newest of the listed versions: one sent by a few installations only does not count as the latest.
    const versions = [...tallied.shown].sort((a, b) => compareVersions(b.name, a.name));
    const latest = versions[0] ?? null;
    return {
      generated_at: iso(end),
      days,
      total_installations: installations,
      latest_version: latest?.name ?? null,
      latest_version_adoption: latest ? pct(latest.installations, installations) : 0,
      versions: versions.map(({ name, installations: n }) => ({ version: name, installations: n, percentage: pct(n, installations) })),
      versions_other: { versions: tallied.rest.names, installations: tallied.rest.installations },
    };
  }

  async geography(days: number) {
    const { groups, installations } = await this.latest(days, ['country_code']);
    const printers = new Map(groups.map((g) => [g.country_code, g.printers]));
    const countries = tally(groups, (g) => g.country_code).sort(byCountThenName);
    return {
      generated_at: iso(this.now()),
      days,
      total_installations: installations,
      country_count: countries.filter((c) => c.key !== 'XX').length,
      countries: countries.map(({ key, n }) => ({ country_code: key, installations: n, percentage: pct(n, installations), printers: printers.get(key) ?? 0 })),
    };
  }

  async printers(days: number) {
    const end = this.now();
    const [fleet, types] = await Promise.all([this.repo.fleetStats(end - days * DAY_MS, end), this.repo.printerTypeTally(end - days * DAY_MS, end, TOP_NAMES)]);
    const typePrinters = types.shown.reduce((sum, t) => sum + t.printers, types.rest.printers);
    return {
      generated_at: iso(end),
      days,
      total_installations: fleet.installations,
      total_printers: fleet.printers,
      average_per_installation: fleet.installations ? round2(fleet.printers / fleet.installations) : 0,
      median_per_installation: fleet.median,
      max_per_installation: fleet.max,
      types: types.shown
        .map(({ name, printers, installations }) => ({ type: name, printers, installations, percentage: pct(printers, typePrinters) }))
        .sort((a, b) => b.printers - a.printers || a.type.localeCompare(b.type)),
      types_other: { types: types.rest.names, printers: types.rest.printers, installations: types.rest.installations },
      fleet_sizes: fleet.sizes,
    };
  }

  async features(days: number) {
    const end = this.now();
    const [installations, tally] = await Promise.all([this.repo.activeCount(end - days * DAY_MS, end), this.repo.featureTally(end - days * DAY_MS, end, TOP_NAMES)]);
    return {
      generated_at: iso(end),
      days,
      total_installations: installations,
      features: featureCounts(tally.shown),
      features_other: { features: tally.rest.names, enabled: tally.rest.enabled, disabled: tally.rest.disabled },
    };
  }

  async versionMigration(days: number, interval: Interval) {
    const { size, count, end, periods } = this.bucketing(days, interval);
    const tallied = await this.repo.versionTrendTally(end, size, count, TOP_NAMES);
    const all = [...new Set(tallied.rows.map((r) => r.name))].sort((a, b) => compareVersions(b, a));
    return {
      generated_at: iso(end),
      days,
      interval,
      versions: all,
      versions_omitted: tallied.names - all.length,
      timeline: periods.map(({ bucket, period_start, period_end }) => {
        const inBucket = tallied.rows.filter((r) => r.bucket === bucket).sort((a, b) => compareVersions(b.name, a.name));
        const whole = tallied.perBucket.get(bucket) ?? { installations: 0, names: 0 };
        const listed = inBucket.reduce((sum, r) => sum + r.installations, 0);
        return {
          period_start,
          period_end,
          total_installations: whole.installations,
          versions: inBucket.map(({ name, installations: n }) => ({ version: name, installations: n, percentage: pct(n, whole.installations) })),
          versions_other: { versions: whole.names - inBucket.length, installations: whole.installations - listed },
        };
      }),
    };
  }

  async featureTrends(days: number, interval: Interval) {
    const { size, count, end, periods } = this.bucketing(days, interval);
    const [tally, buckets] = await Promise.all([this.repo.featureTrendTally(end, size, count, TOP_NAMES), this.repo.buckets(end, size, count)]);
    const active = new Map(buckets.map((b) => [b.bucket, b.active]));
    const names = [...new Set(tally.rows.map((r) => r.name))].sort();
    return {
      generated_at: iso(end),
      days,
      interval,
      features: names,
      features_omitted: tally.names - names.length,
      timeline: periods.map(({ bucket, period_start, period_end }) => {
        const counts = new Map(featureCounts(tally.rows.filter((r) => r.bucket === bucket)).map((f) => [f.feature, f]));
        return {
          period_start,
          period_end,
          total_installations: active.get(bucket) ?? 0,
          features: names.map((feature) => counts.get(feature) ?? { feature, enabled: 0, disabled: 0, adoption: 0 }),
        };
      }),
    };
  }

  async errors(days: number, interval: Interval) {
    const { size, count, end, periods } = this.bucketing(days, interval);
    const start = end - days * DAY_MS;
    const [window, reporting, withErrors, buckets, types, week, previousWeek] = await Promise.all([
      this.repo.totals(start, end),
      this.repo.activeCount(start, end),
      this.repo.withErrorsCount(start, end),
      this.repo.buckets(end, size, count),
      this.repo.errorTypes(start, end, TOP_NAMES),
      this.repo.totals(end - WEEK_MS, end),
      this.repo.totals(end - 2 * WEEK_MS, end - WEEK_MS),
    ]);
    const byBucket = new Map(buckets.map((b) => [b.bucket, b]));
    const wow = change(week.errors, previousWeek.errors);
    return {
      generated_at: iso(end),
      days,
      interval,
      total_errors: window.errors,
      installations_reporting: reporting,
      installations_with_errors: withErrors,
      installations_with_errors_percentage: pct(withErrors, reporting),
      errors_per_installation: reporting ? round2(window.errors / reporting) : 0,
      week_over_week_change: wow,
      trend_direction: direction(wow),
      by_type: types.shown.map(({ name, count }) => ({ type: name, count })).sort((a, b) => b.count - a.count || a.type.localeCompare(b.type)),
      by_type_other: { types: types.rest.names, count: types.rest.count },
      trend: periods.map(({ bucket, period_start, period_end }) => ({
        period_start,
        period_end,
        errors: byBucket.get(bucket)?.errors ?? 0,
        submissions: byBucket.get(bucket)?.submissions ?? 0,
        installations_with_errors: byBucket.get(bucket)?.with_errors ?? 0,
      })),
    };
  }

  async anomalies() {
    return findAnomalies(this.repo, this.now());
  }

  async overview(days: number) {
    const [summary, installations, deployment_modes, versions, geography, printers, features, anomalies] = await Promise.all([
      this.summary(),
      this.installations(90, 'week'),
      this.deploymentModes(days),
      this.versions(days),
      this.geography(days),
      this.printers(days),
      this.features(days),
      this.anomalies(),
    ]);
    return { generated_at: iso(this.now()), summary, installations, deployment_modes, versions, geography, printers, features, anomalies };
  }

  /** The figures of the weekly (7 days) or monthly (30 days) report. */
  async report(kind: 'weekly' | 'monthly'): Promise<z.infer<typeof ReportData>> {
    const now = this.now();
    const span = (kind === 'weekly' ? 7 : 30) * DAY_MS;
    const start = now - span;
    // One tally per field, each cut in SQL: grouping by the three together read one row per combination senders chose.
    const [active, previous, fresh, totals, versions, countries, modes, anomalies] = await Promise.all([
      this.repo.activeCount(start, now),
      this.repo.activeCount(start - span, start),
      this.repo.newCount(start, now),
      this.repo.totals(start, now),
      this.repo.latestTally(start, now, 'app_version', 10),
      this.repo.latestTally(start, now, 'country_code', 10),
      this.repo.latestTally(start, now, 'deployment_mode', TOP_NAMES),
      this.anomalies(),
    ]);
    const top = (t: typeof versions) => t.shown.map(({ name, installations }) => ({ key: name, n: installations })).sort(byCountThenName);
    return {
      kind,
      period_start: iso(start),
      period_end: iso(now),
      active_installations: active,
      previous_active_installations: previous,
      active_change_percent: change(active, previous),
      new_installations: fresh,
      submissions: totals.submissions,
      jobs_created: totals.jobs_created,
      jobs_completed: totals.jobs_completed,
      jobs_failed: totals.jobs_failed,
      job_success_rate: pct(totals.jobs_completed, totals.jobs_completed + totals.jobs_failed),
      files_downloaded: totals.files_downloaded,
      files_uploaded: totals.files_uploaded,
      errors: totals.errors,
      total_printers: modes.shown.reduce((sum, m) => sum + m.printers, modes.rest.printers),
      top_versions: top(versions).map(({ key, n }) => ({ version: key, installations: n })),
      top_countries: top(countries).map(({ key, n }) => ({ country_code: key, installations: n })),
      deployment_modes: top(modes).map(({ key, n }) => ({ mode: key, installations: n })),
      anomalies: anomalies.anomalies,
    };
  }
}
