/**
 * What a fleet run's p99 is made of. Reads the latencies `bench/fleet --latencies PREFIX` wrote for the
 * service and the relay (PREFIX-service.json, PREFIX-relay.json) and pairs them report by report (the same
 * printer and send time on both sides):
 *
 * - reports late on both sides alike (both over `--late` ms): their delay came before either side could read
 *   them (the simulator host, the kernel's delivery, the machine), so it is neither side's own cost. A p99
 *   of 10 000 reports is the 100th latest; when there are about that many such reports, the two p99s are
 *   two readings of the same stalls, and their ratio is decided by a few µs of each side's own;
 * - each side's p99 without them: its own tail;
 * - per printer model (mixed reports: the X1C send full reports, the P1S and A1 deltas).
 *
 * Usage: npx tsc -p tsconfig.bench.json && node dist-bench/bench/fleet-latencies.js PREFIX [--late 1.5]
 */
import fs from 'node:fs';
import { percentile } from './fleet-ledger';
import { benchModelOf, type ReportMode } from './fleet-sims';

export interface LatencyFile {
  report?: ReportMode;
  /** [sent (ms after the window opened), latency (ms), printer id] */
  reports: Array<[number, number, string]>;
}

/** One report framed by both sides. */
interface Pair {
  id: string;
  service: number;
  relay: number;
}

const read = (file: string): LatencyFile => JSON.parse(fs.readFileSync(file, 'utf8')) as LatencyFile;
const sorted = (values: number[]) => Float64Array.from(values).sort();
const ms = (value: number) => value.toFixed(3);

function pairsOf(service: LatencyFile, relay: LatencyFile): Pair[] {
  // Both ledgers are given the same send time for a report (bench/fleet.ts), so it and the printer name it.
  const relayOf = new Map(relay.reports.map(([sent, latency, id]) => [`${id}@${sent}`, latency]));
  const pairs: Pair[] = [];
  for (const [sent, latency, id] of service.reports) {
    const other = relayOf.get(`${id}@${sent}`);
    if (other !== undefined) pairs.push({ id, service: latency, relay: other });
  }
  return pairs;
}

function quantiles(label: string, pairs: Pair[], sides: string): string {
  const service = sorted(pairs.map((p) => p.service));
  const relay = sorted(pairs.map((p) => p.relay));
  const q = (p: number) => `p${p} ${ms(percentile(service, p))} / ${ms(percentile(relay, p))}`;
  return `${label} (${pairs.length} reports), ${sides} ms: ${q(50)}, ${q(90)}, ${q(99)}`;
}

/** `names`: the two sides as the lines call them (a calibration run pairs the relay with its twin, relay-b). */
export function describeLatencies(service: LatencyFile, relay: LatencyFile, lateMs: number, names: [string, string] = ['service', 'relay']): string {
  const pairs = pairsOf(service, relay);
  if (!pairs.length) return 'no report was framed by both sides';
  const sides = `${names[0]} / ${names[1]}`;
  const lines = [quantiles('all', pairs, sides)];
  const late = pairs.filter((p) => p.service > lateMs && p.relay > lateMs);
  const rest = pairs.filter((p) => !(p.service > lateMs && p.relay > lateMs));
  const differences = sorted(late.map((p) => p.service - p.relay));
  const serviceLater = late.filter((p) => p.service > p.relay).length;
  lines.push(
    `late on both sides (both over ${lateMs} ms): ${late.length} (${((100 * late.length) / pairs.length).toFixed(2)} %)` +
      (late.length ? `; ${names[0]} later in ${serviceLater}, ${names[0]} - ${names[1]} median ${(percentile(differences, 50) * 1000).toFixed(0)} µs` : ''),
  );
  const restService = percentile(sorted(rest.map((p) => p.service)), 99);
  const restRelay = percentile(sorted(rest.map((p) => p.relay)), 99);
  lines.push(`without them: p99 ${ms(restService)} / ${ms(restRelay)} ms (${(restService / restRelay).toFixed(2)}x)`);
  const report = service.report ?? 'mixed';
  const byModel = new Map<string, Pair[]>();
  for (const pair of pairs) {
    // Bambu bench printers are bench-0001...; others (Klipper's bench-k-0001...) are grouped by their prefix.
    const bambu = /^bench-(\d+)$/.exec(pair.id);
    const model = bambu ? benchModelOf(Number(bambu[1]) - 1, report) : pair.id.replace(/\d+$/, '*');
    const group = byModel.get(model);
    if (group) group.push(pair);
    else byModel.set(model, [pair]);
  }
  for (const [model, group] of byModel) lines.push(quantiles(model, group, sides));
  return lines.join('\n');
}

function main(argv: string[]): void {
  const prefix = argv[0];
  const lateAt = argv.indexOf('--late');
  const lateMs = lateAt >= 0 ? Number(argv[lateAt + 1]) : 1.5;
  if (!prefix || prefix.startsWith('-') || !Number.isFinite(lateMs) || lateMs <= 0) {
    process.stderr.write('usage: node dist-bench/bench/fleet-latencies.js PREFIX [--late MS]  (PREFIX as given to bench/fleet --latencies)\n');
    process.exit(2);
  }
  process.stdout.write(`${describeLatencies(read(`${prefix}-service.json`), read(`${prefix}-relay.json`), lateMs)}\n`);
}

if (require.main === module) main(process.argv.slice(2));
