/**
 * bench/soak: the long load/soak run (test/e2e/soak.test.ts is the short one,
 * both run bench/soak-harness.ts). N simulated printers (Bambu Lab over
 * MQTT/TLS and PrusaLink over HTTP+Digest), C /ws clients and a steady API
 * load against a `printfarm serve` child process for a bounded time. It
 * prints, with the baselines measured in the same run:
 *
 * - API requests, errors and latency p50/p99 under load vs the same request
 *   mix against the idle service (the same printers registered but inactive:
 *   no drivers, no frames) measured first: the ratio is what the load costs;
 * - frames per client and the /ws delivery lag p50/p99 (Bambu report leaves
 *   the simulator -> its printer_status frame reaches a client), and whether
 *   every client got every report, in order;
 * - the service's memory after warm-up vs at the end: RSS and V8 heap after a
 *   full garbage collection (the ratio says flat or growing), and the RSS
 *   sampled every second (medians of the window's first and last tenth, min
 *   and max), which moves in V8's garbage-collection saw-tooth.
 *
 * Options: --printers 200 (a fifth PrusaLink) --bambu N --prusa N --clients 20
 *          --minutes 10 --warmup 30 (s) --rps 20 --baseline 20 (s) --speed 10
 *
 * Runs the service compiled into dist-bench/ (bench/run.js compiles it), so it
 * measures the sources as they are.
 */
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_OPTIONS, runSoak, type SoakOptions, type SoakResult } from './soak-harness';

function parseArgs(argv: string[]): SoakOptions {
  const cli = path.join(__dirname, '..', 'service', 'cli.js');
  let printers = 200;
  let bambu: number | undefined;
  let prusa: number | undefined;
  let minutes = 10;
  const options: SoakOptions = {
    ...DEFAULT_OPTIONS,
    clients: 20,
    rps: 20,
    warmupS: 30,
    baselineS: 20,
    sampleMs: 1000,
    memoryEdgeS: 30,
    // `node -e` keeps process.argv as [node, ...args]: the CLI gets `serve --port 0 ...`.
    serviceArgv: ['-e', `require(${JSON.stringify(cli)}).main(process.argv.slice(1))`],
    log: (line) => process.stdout.write(`  ${line}\n`),
  };
  for (let i = 0; i < argv.length; i++) {
    const value = argv[i + 1];
    const number = (name: string, min = 0) => {
      const n = Number(value);
      if (!Number.isFinite(n) || n < min) throw new Error(`${name} needs a number >= ${min}`);
      i++;
      return n;
    };
    switch (argv[i]) {
      case '--printers':
        printers = Math.round(number('--printers', 1));
        break;
      case '--bambu':
        bambu = Math.round(number('--bambu'));
        break;
      case '--prusa':
        prusa = Math.round(number('--prusa'));
        break;
      case '--clients':
        options.clients = Math.round(number('--clients', 1));
        break;
      case '--minutes':
        minutes = number('--minutes', 0.1);
        break;
      case '--warmup':
        options.warmupS = number('--warmup', 1);
        break;
      case '--rps':
        options.rps = number('--rps', 0.1);
        break;
      case '--baseline':
        options.baselineS = number('--baseline');
        break;
      case '--speed':
        options.speed = number('--speed', 0.1);
        break;
      default:
        throw new Error(`unknown option ${argv[i]} (options: --printers 200 --bambu N --prusa N --clients 20 --minutes 10 --warmup 30 --rps 20 --baseline 20 --speed 10)`);
    }
  }
  options.prusa = prusa ?? (bambu !== undefined ? Math.max(0, printers - bambu) : Math.round(printers / 5));
  options.bambu = bambu ?? Math.max(0, printers - options.prusa);
  if (options.bambu + options.prusa === 0) throw new Error('no printers');
  options.durationS = minutes * 60;
  // Compare the first and last tenth of the window (at least 5 s, at most 60 s).
  options.memoryEdgeS = Math.min(60, Math.max(5, options.durationS / 10));
  return options;
}

const f1 = (v: number) => (Number.isFinite(v) ? v.toFixed(1) : 'n/a');
const f2 = (v: number) => (Number.isFinite(v) ? v.toFixed(2) : 'n/a');

function table(r: SoakResult): string {
  const frames = r.clientReports.map((c) => c.frames);
  const same = r.clientReports.every((c) => c.hash === r.clientReports[0].hash && c.frames === r.clientReports[0].frames);
  const lost = r.clientReports.reduce((n, c) => n + c.lost + c.unexpected, 0);
  const b = r.baseline;
  const windowRss = r.rss.samples.filter((s) => s.phase === 'window').map((s) => s.kb);
  const rows: Array<[string, string]> = [
    ['printers (Bambu + Prusa)', `${r.printers} (${r.bambu} + ${r.prusa})`],
    ['/ws clients', `${r.clients}`],
    ['window (after warm-up)', `${f1(r.windowS)} s`],
    ['API requests / errors (warm-up + window)', `${r.api.requests} / ${r.api.errors}`],
    ['frames per client (all types, whole run)', Math.min(...frames) === Math.max(...frames) ? `${frames[0]}` : `${Math.min(...frames)}-${Math.max(...frames)}`],
    ['printer_status frames per client in window (Bambu + Prusa)', `${r.windowFrames.total} (${r.windowFrames.bambu} + ${r.windowFrames.prusa})`],
    ['Bambu reports in window / lost or out of order (all clients)', `${r.windowReports} / ${lost}`],
    ['all clients same frames, same order', same ? 'yes' : 'NO'],
    ['service RSS after full GC, warm-up -> end (MB), ratio', `${f1(r.retained.warm.rssKb / 1024)} -> ${f1(r.retained.end.rssKb / 1024)}, ${f2(r.retained.rssRatio)}`],
    ['service V8 heap used after full GC, warm-up -> end (MB), ratio', `${f1(r.retained.warm.heapUsedKb / 1024)} -> ${f1(r.retained.end.heapUsedKb / 1024)}, ${f2(r.retained.heapRatio)}`],
    ['service RSS sampled, median of first / last tenth of window (MB), ratio', `${f1(r.rss.warmKb / 1024)} -> ${f1(r.rss.endKb / 1024)}, ${f2(r.rss.ratio)}`],
    ['service RSS sampled, min / max in window (MB)', `${f1(Math.min(...windowRss) / 1024)} / ${f1(Math.max(...windowRss) / 1024)}`],
    ['API p50 under load / idle (ms), ratio', b ? `${f1(r.api.p50)} / ${f1(b.p50)}, ${f2(r.api.p50 / b.p50)}` : `${f1(r.api.p50)} / n/a`],
    ['API p99 under load / idle (ms), ratio', b ? `${f1(r.api.p99)} / ${f1(b.p99)}, ${f2(r.api.p99 / b.p99)}` : `${f1(r.api.p99)} / n/a`],
    ['/ws delivery lag p50 / p99 / max (ms)', `${f1(r.lagP50)} / ${f1(r.lagP99)} / ${f1(r.lagMax)}`],
    ['service error log lines', `${r.serviceErrors.length}`],
    ['load average (1 min) at the end', f2(r.loadAverage)],
  ];
  return ['| figure | value |', '|---|---:|', ...rows.map(([k, v]) => `| ${k} | ${v} |`)].join('\n');
}

export async function main(argv: string[]): Promise<void> {
  const options = parseArgs(argv);
  process.stdout.write(
    `bench/soak: ${options.bambu} Bambu + ${options.prusa} Prusa printers, ${options.clients} /ws clients, ${options.rps} requests/s; ` +
      `idle baseline ${options.baselineS} s, warm-up ${options.warmupS} s, window ${f1(options.durationS / 60)} min; ` +
      `node ${process.version}, ${os.cpus().length} CPUs, load average ${f2(os.loadavg()[0])}\n`,
  );
  const result = await runSoak(options);
  process.stdout.write(`\n${table(result)}\n`);
  const problems = [
    ...result.api.errorSamples.map((e) => `API: ${e}`),
    ...result.serviceErrors.map((e) => `service log: ${e}`),
    ...result.clientReports.flatMap((c, i) => c.violations.map((v) => `client ${i}: ${v}`)),
  ];
  if (problems.length) process.stdout.write(`\nProblems (first ones):\n${problems.slice(0, 20).map((p) => `  ${p}`).join('\n')}\n`);
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err) => {
    process.stderr.write(`${(err as Error).stack ?? err}\n`);
    process.exit(1);
  });
}
