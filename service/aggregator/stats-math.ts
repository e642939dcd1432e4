/**
 * The small arithmetic the dashboard views share: rounding, percentages, week-over-week change,
 * version order and the tallies of installations by a key.
 */
import { DAY_MS } from './repository';

export type Interval = 'day' | 'week';

export const WEEK_MS = 7 * DAY_MS;
export const round1 = (v: number) => Math.round(v * 10) / 10;
export const round2 = (v: number) => Math.round(v * 100) / 100;
export const pct = (part: number, whole: number) => (whole > 0 ? round1((part / whole) * 100) : 0);
export const change = (current: number, previous: number): number | null => (previous > 0 ? round1(((current - previous) / previous) * 100) : null);
export const direction = (c: number | null): 'up' | 'down' | 'stable' => (c === null || Math.abs(c) <= 5 ? 'stable' : c > 0 ? 'up' : 'down');
export const iso = (ms: number) => new Date(ms).toISOString();

/** Compares dotted versions numerically (1.10.0 > 1.9.3); pre-release suffixes sort before the release. */
export function compareVersions(a: string, b: string): number {
  const split = (v: string) => {
    const [core, pre] = v.replace(/^v/, '').split('-', 2);
    return { parts: core.split('.').map((p) => Number.parseInt(p, 10) || 0), pre };
  };
  const x = split(a);
  const y = split(b);
  for (let i = 0; i < Math.max(x.parts.length, y.parts.length); i++) {
    const d = (x.parts[i] ?? 0) - (y.parts[i] ?? 0);
    if (d !== 0) return d;
  }
  if (x.pre === y.pre) return 0;
  if (x.pre === undefined) return 1;
  if (y.pre === undefined) return -1;
  return x.pre < y.pre ? -1 : 1;
}

/** Installations per key of their groups, in the order the keys first occur. */
export function tally<T extends { installations: number }>(groups: T[], keyOf: (group: T) => string): { key: string; n: number }[] {
  const counts = new Map<string, number>();
  for (const group of groups) {
    const key = keyOf(group);
    counts.set(key, (counts.get(key) ?? 0) + group.installations);
  }
  return [...counts].map(([key, n]) => ({ key, n }));
}

export const byCountThenName = (a: { key: string; n: number }, b: { key: string; n: number }) => b.n - a.n || a.key.localeCompare(b.key);

/** Enabled and disabled installations per feature (counted in SQL, reads.ts) with their adoption, most enabled first. */
export function featureCounts(rows: { name: string; enabled: number; disabled: number }[]) {
  return rows
    .map(({ name, enabled, disabled }) => ({ feature: name, enabled, disabled, adoption: pct(enabled, enabled + disabled) }))
    .sort((a, b) => b.enabled - a.enabled || a.feature.localeCompare(b.feature));
}
