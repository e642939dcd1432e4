/**
 * bench/fleet's report: one line per measurement, the table, the ratios and
 * the verdict on the targets (a missed ratio fails the bench, not only an
 * absolute target).
 */
import type { Measurement } from './fleet';

/** The targets at 1000 printers, each a ratio to the relay measured in the same run (issue 30). */
export const TARGETS = { cpuRatio: 1.5, p99Ratio: 1.0 } as const;

const f1 = (v: number) => (Number.isFinite(v) ? v.toFixed(1) : 'n/a');
export const f2 = (v: number) => (Number.isFinite(v) ? v.toFixed(2) : 'n/a');
const f0 = (v: number) => (Number.isFinite(v) ? Math.round(v).toString() : 'n/a');
const perReport = (m: Measurement) => m.cpuUs / Math.max(1, m.reports);
const cores = (m: Measurement) => m.cpuUs / 1e6 / m.wallS;

export function describe(m: Measurement): string {
  return (
    `  ${m.mode.padEnd(7)} N=${m.n}: ${m.reports} reports, ${m.frames} frames, ${m.matched} matched, ${m.lost} without frame in ${m.wallS.toFixed(1)} s; ` +
    `CPU ${f1(perReport(m))} µs/report = ${f2(cores(m))} cores; latency p50 ${f1(m.p50)} / p90 ${f1(m.p90)} / p99 ${f1(m.p99)} / max ${f1(m.max)} ms; ` +
    `event-loop p99 ${f1(m.workerLoopP99Ms)} ms (${m.mode}) / ${f1(m.loadLoopP99Ms)} ms (bench process); bench process ${f2(m.loadCpuUs / 1e6 / m.wallS)} cores; ${m.mode} rss ${m.rssMb} MB; load average ${f2(m.loadAvg)}`
  );
}

/** The CPU ratio of each slice of the window: how steady it was while both sides were measured. */
export function describeSlices(ratios: number[], sliceS: number, measured: Measurement['mode'] = 'service'): string {
  if (!ratios.length) return '  CPU ratio per slice: n/a';
  const sorted = [...ratios].sort((a, b) => a - b);
  return `  CPU ratio ${measured}/relay per ${sliceS} s slice: min ${f2(sorted[0])}, median ${f2(sorted[Math.floor((sorted.length - 1) / 2)])}, max ${f2(sorted[sorted.length - 1])} (${ratios.map(f2).join(' ')})`;
}

export function table(rows: Array<{ service: Measurement; relay: Measurement }>): string {
  const lines = [
    '| N | reports/s | frames/s | service CPU/report (µs) | service CPU (cores) | latency p50 / p99 (ms) | relay CPU/report (µs) | relay p50 / p99 (ms) | CPU ratio service/relay | p99 ratio service/relay | bench process (cores) | load average |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const { service: s, relay: r } of rows) {
    lines.push(
      `| ${s.n} | ${f0(s.reports / s.wallS)} | ${f0(s.frames / s.wallS)} | ${f1(perReport(s))} | ${f2(cores(s))} | ${f1(s.p50)} / ${f1(s.p99)} | ${f1(perReport(r))} | ${f1(r.p50)} / ${f1(r.p99)} | ${f2(perReport(s) / perReport(r))} | ${f2(s.p99 / r.p99)} | ${f2(s.loadCpuUs / 1e6 / s.wallS)} | ${f2(s.loadAvg)} |`,
    );
  }
  return lines.join('\n');
}

/** One size's line of ratios, `b` against `a` over the same window (CPU per report, latency), and how many of b's reports were framed. */
function ratios(b: Measurement, a: Measurement): string {
  return `  N=${b.n}: CPU per report ${f2(perReport(b) / perReport(a))}x (${f1(perReport(b))} / ${f1(perReport(a))} µs), latency p50 ${f2(b.p50 / a.p50)}x, p90 ${f2(b.p90 / a.p90)}x, p99 ${f2(b.p99 / a.p99)}x (${f1(b.p99)} / ${f1(a.p99)} ms), framed ${b.matched}/${b.reports}`;
}

/**
 * A calibration (--calibrate): the second relay against the first. Equal sides differ only by chance, so these
 * ratios are the spread any service/relay ratio of this machine carries; no target is checked.
 */
export function calibration(rows: Array<{ service: Measurement; relay: Measurement }>): void {
  process.stdout.write('\nCalibration (relay-b / relay: the same relay twice, side by side over the same window):\n');
  for (const { service: b, relay: a } of rows) process.stdout.write(`${ratios(b, a)} and ${a.matched}/${a.reports}\n`);
  process.stdout.write('bench/fleet: calibration only, no targets checked\n');
}

/**
 * The ratios first, then whether the targets hold at the largest size measured (the targets are set at 1000
 * printers): service CPU per report at most 1.5x the relay's, p99 at most the relay's (Bambu, issue 30; not
 * for Klipper, whose targets are the CPU ratio and the absolute p99, issue 27), every report framed, and the
 * absolute ones (p99 < 50 ms, under one core). Returns whether any was missed.
 */
export function verdict(rows: Array<{ service: Measurement; relay: Measurement }>, { p99AtMostRelay }: { p99AtMostRelay: boolean }): boolean {
  process.stdout.write('\nRatios (service / relay, side by side over the same window):\n');
  for (const { service: s, relay: r } of rows) process.stdout.write(`${ratios(s, r)}\n`);
  const big = rows.reduce<(typeof rows)[number] | null>((a, b) => (!a || b.service.n > a.service.n ? b : a), null);
  if (!big) return false;
  const { service: s, relay: r } = big;
  const checks: Array<[string, boolean]> = [
    [`CPU per report at most ${TARGETS.cpuRatio}x the relay's (${f2(perReport(s) / perReport(r))}x)`, perReport(s) <= TARGETS.cpuRatio * perReport(r)],
    ...(p99AtMostRelay ? [[`p99 at most ${TARGETS.p99Ratio}x the relay's (${f2(s.p99 / r.p99)}x)`, s.p99 <= TARGETS.p99Ratio * r.p99] as [string, boolean]] : []),
    [`every report framed (${s.lost} without a frame)`, s.lost === 0 && s.reports > 0],
    [`p99 under 50 ms (${f1(s.p99)} ms)`, s.p99 < 50],
    [`under one core (${f2(cores(s))})`, cores(s) < 1],
  ];
  process.stdout.write(`\nTargets at N=${big.service.n}${big.service.n === 1000 ? '' : ' (they are set for 1000 printers)'}:\n`);
  for (const [what, ok] of checks) process.stdout.write(`  ${ok ? 'met    ' : 'MISSED '} ${what}\n`);
  const missed = checks.some(([, ok]) => !ok);
  process.stdout.write(missed ? 'bench/fleet: a target was missed\n' : 'bench/fleet: every target met\n');
  return missed;
}
