/**
 * bench/stats's tables and targets. Targets:
 *  - the overview within 2x of the same SQL run straight on the database, where that SQL does real work
 *    (at least RATIO_FLOOR_MS); a cheaper query is mostly the fixed cost of any request (HTTP, routing,
 *    the hop to the statistics reader; see the GET /health column), and there the overview must answer
 *    under ABSOLUTE_MS instead;
 *  - GET /jobs' first page and a printer's detail under ABSOLUTE_MS (p50 of the runs; p99 shown).
 */
import type { Cell, EverydayRow } from './stats-measure';
import { EVERYDAY } from './stats-measure';

export const RATIO_TARGET = 2;
export const RATIO_FLOOR_MS = 10;
export const ABSOLUTE_MS = 50;
/** The everyday requests with a target (the others are shown for comparison). */
export const TARGETED = ['/api/v1/jobs', '/api/v1/printers/bench-1'];

export const fmt = (ms: number) => (ms < 10 ? ms.toFixed(2) : ms.toFixed(1));
const n = (x: number) => x.toLocaleString('en-US');

export function overviewTable(cells: Cell[]): string {
  const lines = [
    '| jobs | period | jobs in period | endpoint p50 / p90 (ms) | raw SQL p50 / p90 (ms) | ratio endpoint / raw (p50) | GET /health p50 (ms) | GET /health max during an overview (ms) | runs |',
    '|---:|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const c of cells) {
    lines.push(
      `| ${n(c.jobs)} | ${c.period} | ${n(c.inPeriod)} | ${fmt(c.endpointMs)} / ${fmt(c.endpointP90)} | ${fmt(c.rawMs)} / ${fmt(c.rawP90)} | ${(c.endpointMs / c.rawMs).toFixed(2)} | ${fmt(c.floorMs)} | ${fmt(c.healthDuringMax)} | ${c.runs} |`,
    );
  }
  return lines.join('\n');
}

export function everydayTable(rows: EverydayRow[]): string {
  const lines = [
    `| jobs | ${EVERYDAY.map((u) => `GET ${u.replace('/api/v1', '')} p50 / p99 (ms)`).join(' | ')} | GET /health p50 (ms) |`,
    `|---:|${EVERYDAY.map(() => '---:').join('|')}|---:|`,
  ];
  for (const r of rows) lines.push(`| ${n(r.jobs)} | ${EVERYDAY.map((u) => `${fmt(r.p50[u])} / ${fmt(r.p99[u])}`).join(' | ')} | ${fmt(r.floorMs)} |`);
  return lines.join('\n');
}

/** One line per missed target (empty when all are met). */
export function missedTargets(cells: Cell[], everyday: EverydayRow[]): string[] {
  const missed: string[] = [];
  for (const c of cells) {
    const where = `overview at ${n(c.jobs)} jobs, ${c.period}`;
    if (c.rawMs >= RATIO_FLOOR_MS && c.endpointMs / c.rawMs > RATIO_TARGET) {
      missed.push(`${where}: endpoint ${fmt(c.endpointMs)} ms is ${(c.endpointMs / c.rawMs).toFixed(2)}x the raw SQL's ${fmt(c.rawMs)} ms (target ${RATIO_TARGET}x; GET /health ${fmt(c.floorMs)} ms)`);
    }
    if (c.rawMs < RATIO_FLOOR_MS && c.endpointMs >= ABSOLUTE_MS) {
      missed.push(`${where}: endpoint ${fmt(c.endpointMs)} ms for ${fmt(c.rawMs)} ms of SQL (target under ${ABSOLUTE_MS} ms)`);
    }
  }
  for (const r of everyday) {
    for (const url of TARGETED) {
      if (r.p50[url] >= ABSOLUTE_MS) missed.push(`GET ${url} at ${n(r.jobs)} jobs: p50 ${fmt(r.p50[url])} ms, p99 ${fmt(r.p99[url])} ms (target under ${ABSOLUTE_MS} ms)`);
    }
  }
  return missed;
}
