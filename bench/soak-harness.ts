/**
 * The load/soak run shared by test/e2e/soak.test.ts (short, asserts) and
 * bench/soak.ts (long, prints figures). It lives under bench/ because
 * tsconfig.bench.json compiles only service/ and bench/ for `npm run bench`,
 * while jest (ts-jest) can import from anywhere: one module, two callers.
 *
 * What runs where:
 * - the service is a child process (`printfarm serve`), so its memory
 *   (/proc/<pid>/status VmRSS) is its own and not mixed with the simulators,
 *   the clients or jest;
 * - this process runs the simulated printers (Bambu: MQTT over TLS with one
 *   shared certificate, every report a new nozzle temperature; PrusaLink:
 *   HTTP + Digest, polled by the service), the /ws clients and the API load,
 *   so report send times and frame receive times come from one clock.
 *
 * Phases: start the service and the printers; connect every /ws client before
 * any printer exists (so every client must see the same frames); register the
 * printers (inactive first when an idle API baseline is wanted, measured with
 * the same request mix); activate them and start prints; wait until all are
 * connected; steady API load through a warm-up and a measured window; drain.
 *
 * Memory: VmRSS sampled from /proc, and at two checkpoints (end of warm-up,
 * end of the window) RSS and V8 heap after a full garbage collection asked
 * for through the service's inspector (`--inspect=127.0.0.1:0`), because the
 * sampled RSS moves 20-40 % in V8's garbage-collection saw-tooth.
 *
 * Checks made while frames arrive, per client:
 * - the same frames in the same order as every other client (count + running
 *   SHA-1 of the frame texts stamped between the last client's connection and
 *   a common cut after the drain);
 * - per printer: timestamps never go back, progress never goes back while a
 *   print runs;
 * - per Bambu printer: every report sent in the window reached the client as
 *   one printer_status frame, in send order (a ledger of what each simulator
 *   sent, matched by the report's unique nozzle temperature). Skipped reports
 *   are lost; frames that match nothing ahead are out of order / unexpected.
 *
 * Parts: soak-support.ts (options, result, shared tools), soak-service.ts (the child process and
 * its memory), soak-clients.ts (the checking /ws clients and the ledger), soak-load.ts (the API
 * load). This module runs them.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { BambuSimulator } from '../service/simulators/bambu';
import { PrusaSimulator } from '../service/simulators/prusa';
import { type ApiStats, json, LagHistogram, median, percentile, pool, sleep, type SoakOptions, type SoakResult, waitFor } from './soak-support';
import { CheckingClient, Ledger } from './soak-clients';
import { ApiLoad } from './soak-load';
import { ServiceProcess } from './soak-service';
import { benchReporting } from './fleet-sims';

export { DEFAULT_OPTIONS, median, percentile, type ApiStats, type ClientReport, type MemoryCheckpoint, type SoakOptions, type SoakResult } from './soak-support';

export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const log = options.log ?? (() => undefined);
  const t0 = Date.now();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'printfarm-soak-'));
  const ledger = new Ledger();
  const lag = new LagHistogram();
  const bambuSims: BambuSimulator[] = [];
  const prusaSims: PrusaSimulator[] = [];
  const clients: CheckingClient[] = [];
  let service: ServiceProcess | null = null;
  let load: ApiLoad | null = null;
  let sampler: NodeJS.Timeout | null = null;
  let keeper: NodeJS.Timeout | null = null;
  try {
    service = await ServiceProcess.start(options.serviceArgv, dataDir);
    const base = service.base;
    log(`service pid ${service.pid} at ${base}`);

    // Printers: one shared certificate (generating one per printer is the slow part), no FTPS, no control API.
    const tls = await BambuSimulator.tlsCredentials('printfarm-soak');
    const models = ['X1C', 'P1S', 'A1'];
    await pool(
      Array.from({ length: options.bambu }, (_, i) => i),
      25,
      async (i) => {
        bambuSims.push(
          await BambuSimulator.start({
            id: `soak-bambu-${String(i + 1).padStart(3, '0')}`,
            name: `Soak ${models[i % models.length]} #${i + 1}`,
            model: models[i % models.length],
            speed: options.speed,
            ...benchReporting(i, options.bambu, 1000, tls, ledger),
          }),
        );
      },
    );
    for (let i = 0; i < options.prusa; i++) {
      const model = i % 2 ? 'Core One' : 'MK4S';
      prusaSims.push(await PrusaSimulator.start({ id: `soak-prusa-${String(i + 1).padStart(3, '0')}`, name: `Soak ${model} #${i + 1}`, model, speed: options.speed }));
    }
    const bambuIds = new Set(bambuSims.map((s) => s.id));
    const printerIds = [...bambuSims.map((s) => s.id), ...prusaSims.map((s) => s.printerConfig().id)];
    log(`${bambuSims.length} Bambu + ${prusaSims.length} Prusa simulators up after ${((Date.now() - t0) / 1000).toFixed(1)} s`);

    // Every client is connected before the first printer exists: all of them must see every frame.
    for (let i = 0; i < options.clients; i++) {
      const client = new CheckingClient(ledger, bambuIds, lag);
      clients.push(client);
      await client.connect(base);
    }
    await sleep(2); // frames stamped in the millisecond of the last connection are not compared
    const armedAfter = new Date().toISOString();
    for (const c of clients) c.armedAfter = armedAfter;

    const baselineWanted = options.baselineS > 0;
    const configs = [...bambuSims.map((s) => s.printerConfig()), ...prusaSims.map((s) => s.printerConfig())];
    await pool(configs, 8, async (config) => {
      const res = await json(base, 'POST', '/api/v1/printers', { ...config, is_active: !baselineWanted });
      if (res.status !== 201) throw new Error(`POST /printers ${config.id}: ${res.status} ${JSON.stringify(res.body)}`);
    });

    let baseline: ApiStats | null = null;
    if (baselineWanted) {
      log(`idle baseline: ${options.rps} requests/s for ${options.baselineS} s`);
      const idle = new ApiLoad(base, printerIds);
      idle.start(options.rps);
      await sleep(options.baselineS * 1000);
      await idle.stop();
      baseline = idle.stats();
      await pool(printerIds, 8, async (id) => {
        const res = await json(base, 'PUT', `/api/v1/printers/${id}`, { is_active: true });
        if (res.status !== 200) throw new Error(`PUT /printers/${id}: ${res.status} ${JSON.stringify(res.body)}`);
      });
    }

    // Everybody prints; a finished print starts again a little later (after the service has seen the end).
    const bambuFile = bambuSims[0]?.storage.paths().find((p) => /\.3mf$/i.test(p));
    const prusaFile = prusaSims[0]?.storage.files().find((f) => /\.bgcode$/i.test(f.lfn ?? ''))?.lfn;
    const endedAt = new Map<string, number>();
    const keepPrinting = () => {
      const now = Date.now();
      for (const sim of bambuSims) {
        if (!bambuFile || ['preparing', 'printing', 'paused'].includes(sim.status)) continue;
        const ended = endedAt.get(sim.id) ?? (endedAt.set(sim.id, now), now);
        if (now - ended >= 12_000 || sim.status === 'idle') {
          sim.startPrint(bambuFile);
          endedAt.delete(sim.id);
        }
      }
      for (const sim of prusaSims) {
        sim.printer.advance();
        if (!prusaFile || sim.printer.busy) continue;
        const id = sim.printerConfig().id;
        const ended = endedAt.get(id) ?? (endedAt.set(id, now), now);
        if (now - ended >= 12_000 || !sim.printer.job) {
          const entry = sim.storage.find(prusaFile);
          if (entry) sim.printer.start(entry);
          endedAt.delete(id);
        }
      }
    };
    keepPrinting();
    keeper = setInterval(keepPrinting, 1000);

    const connectMs = 60_000 + printerIds.length * 100;
    let connected = 0;
    await waitFor(
      () => `${printerIds.length} printers connected (${connected} so far)`,
      async () => {
        const res = await json(base, 'GET', '/api/v1/printers');
        connected = (res.body?.printers ?? []).filter((p: { connection_status: string }) => p.connection_status === 'connected').length;
        return connected === printerIds.length;
      },
      connectMs,
    );
    const setupS = (Date.now() - t0) / 1000;
    log(`all ${printerIds.length} printers connected after ${setupS.toFixed(1)} s; warm-up ${options.warmupS} s, window ${options.durationS} s`);

    // Steady load: API requests and memory samples from here to the end of the window.
    load = new ApiLoad(base, printerIds);
    load.start(options.rps);
    const samples: SoakResult['rss']['samples'] = [];
    let phase = 'warmup';
    const loadStart = performance.now();
    sampler = setInterval(() => {
      try {
        samples.push({ t: (performance.now() - loadStart) / 1000, kb: service!.rssKb(), phase });
      } catch {
        // the service is gone: the run fails on its own
      }
    }, options.sampleMs);
    await sleep(options.warmupS * 1000);
    // The forced collections stop the service for a moment: no requests are timed across them.
    await load.stop();
    const warmRetained = await service.gcCheckpoint();
    load.start(options.rps);
    // The warm-up's errors count too: "no error responses" holds for the whole load.
    phase = 'window';
    ledger.windowOpen = true;
    for (const c of clients) c.countWindow = true;
    const windowStart = performance.now();
    const windowT0 = (windowStart - loadStart) / 1000;
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    await sleep(options.durationS * 1000);
    loop.disable();
    ledger.windowOpen = false;
    const windowS = (performance.now() - windowStart) / 1000;
    clearInterval(sampler);
    sampler = null;
    phase = 'drain';
    await load.stop();
    const api = load.stats();
    // The window's last reports are still on their way.
    await waitFor('window frames to arrive', () => clients.every((c) => c.pending() === 0), 10_000).catch(() => undefined);
    for (const c of clients) c.countWindow = false;
    // The same cut for every client: all frames stamped up to now, none after.
    await sleep(2);
    const closeAfter = new Date().toISOString();
    for (const c of clients) c.closeAfter = closeAfter;
    await waitFor('every client past the cut', () => clients.every((c) => c.passedClose), 10_000).catch(() => undefined);
    const endRetained = await service.gcCheckpoint();

    const window = samples.filter((s) => s.phase === 'window');
    const edge = options.memoryEdgeS;
    const warmKb = median(window.filter((s) => s.t - windowT0 < edge).map((s) => s.kb));
    const endKb = median(window.filter((s) => s.t > windowT0 + windowS - edge).map((s) => s.kb));
    const first = clients[0];
    return {
      printers: printerIds.length,
      bambu: bambuSims.length,
      prusa: prusaSims.length,
      clients: clients.length,
      windowS,
      windowReports: ledger.windowReports,
      api,
      baseline,
      clientReports: clients.map((c) => c.report()),
      windowFrames: { bambu: first?.windowBambuFrames ?? 0, prusa: first?.windowPrusaFrames ?? 0, total: (first?.windowBambuFrames ?? 0) + (first?.windowPrusaFrames ?? 0) },
      frameTypes: { ...(first?.types ?? {}) },
      lagP50: lag.percentile(50),
      lagP99: lag.percentile(99),
      lagMax: lag.max,
      loadLoopP99: loop.percentile(99) / 1e6,
      rss: { samples, warmKb, endKb, ratio: endKb / warmKb },
      retained: { warm: warmRetained, end: endRetained, rssRatio: endRetained.rssKb / warmRetained.rssKb, heapRatio: endRetained.heapUsedKb / warmRetained.heapUsedKb },
      serviceErrors: [...service.errors],
      setupS,
      totalS: (Date.now() - t0) / 1000,
      loadAverage: os.loadavg()[0],
    };
  } finally {
    if (sampler) clearInterval(sampler);
    if (keeper) clearInterval(keeper);
    await load?.stop();
    await Promise.all(clients.map((c) => c.close()));
    const code = await service?.stop();
    if (code !== undefined && code !== null && code !== 0) log(`service exited with ${code}:\n${service?.output()}`);
    await Promise.all([...bambuSims.map((s) => s.close()), ...prusaSims.map((s) => s.close())]);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
