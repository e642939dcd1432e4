/**
 * bench/camera: N simulated P1S cameras ("JPEG over TLS", one frame a second)
 * with V MJPEG stream viewers each, for a window of W seconds. Measured in
 * the same run, with the same simulators and the same viewers:
 *
 * - relay: a bare TLS-to-HTTP relay (bench/camera-worker.ts), the least any
 *   server must do to pass the frames on;
 * - service idle: the real service with the printers connected (MQTT) and
 *   nobody watching, for what the printers cost without cameras;
 * - service: the same with the V streams per printer open.
 *
 * Per mode: CPU of the worker process per delivered frame (process.cpuUsage
 * in the worker itself), frame delay p50/p99 (each frame carries the time the
 * simulator sent it in a JPEG comment; the viewers read it on arrival; one
 * clock, this process), and the worker's RSS at the start and end of the
 * window. Targets (the issue): the service's CPU per frame at most 1.5x the
 * relay's, p99 under 250 ms, RSS flat. The CPU ratio is given twice: raw, and
 * for the camera path alone (service minus service idle, which is the MQTT
 * work the relay does not do); the target applies to the camera path.
 * Exits non-zero when a target is missed.
 *
 * Options: --printers 100 --viewers 2 --window 30 (s) --warmup 5 (s) --size 640x360
 */
import http from 'node:http';
import os from 'node:os';
import { MjpegParser } from '../service/cameras/mjpeg-parser';
import { cameraFrameStamp } from '../service/simulators/bambu/camera';
import { BambuSimulator } from '../service/simulators/bambu';
import type { CameraBenchPrinter, CameraWorkerCommand } from './camera-worker';
import { connectedViaApi, percentile, registerPrinters, waitFor, Worker } from './fleet';

interface Options {
  printers: number;
  viewers: number;
  windowS: number;
  warmupS: number;
  width: number;
  height: number;
}

interface Result {
  mode: string;
  wallS: number;
  frames: number;
  cpuUs: number;
  p50: number;
  p99: number;
  max: number;
  rssStartMb: number;
  rssEndMb: number;
  loadAvg: number;
}

function parseArgs(argv: string[]): Options {
  const o: Options = { printers: 100, viewers: 2, windowS: 30, warmupS: 5, width: 640, height: 360 };
  for (let i = 0; i < argv.length; i += 2) {
    const value = argv[i + 1] ?? '';
    const n = Number(value);
    const positive = (name: string) => {
      if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} needs a positive number`);
      return n;
    };
    switch (argv[i]) {
      case '--printers':
        o.printers = Math.floor(positive('--printers'));
        break;
      case '--viewers':
        o.viewers = Math.floor(positive('--viewers'));
        break;
      case '--window':
        o.windowS = positive('--window');
        break;
      case '--warmup':
        o.warmupS = positive('--warmup');
        break;
      case '--size': {
        const m = /^(\d{2,4})x(\d{2,4})$/.exec(value);
        if (!m) throw new Error('--size needs e.g. 640x360');
        o.width = Number(m[1]);
        o.height = Number(m[2]);
        break;
      }
      default:
        throw new Error(`unknown option ${argv[i]} (options: --printers 100 --viewers 2 --window 30 --warmup 5 --size 640x360)`);
    }
  }
  return o;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.timeOrigin + performance.now();

/** The frames every viewer receives, with their delays while the window is open. */
class Viewers {
  private readonly requests: http.ClientRequest[] = [];
  readonly delays: number[] = [];
  frames = 0;
  private windowOpen = false;
  private firstFrames = 0;

  open(base: string, ids: string[], perPrinter: number): void {
    for (const id of ids) {
      for (let v = 0; v < perPrinter; v++) {
        let first = true;
        const req = http.get(`${base}/api/v1/printers/${id}/camera/stream`, { agent: false }, (res) => {
          if (res.statusCode !== 200) {
            process.stderr.write(`viewer of ${id}: HTTP ${res.statusCode}\n`);
            res.resume();
            return;
          }
          const parser = new MjpegParser('printfarm-frame', 8 * 1024 * 1024, (jpeg) => {
            const at = now();
            if (first) {
              first = false;
              this.firstFrames++;
            }
            if (!this.windowOpen) return;
            const sent = cameraFrameStamp(jpeg);
            this.frames++;
            if (sent !== null) this.delays.push(at - sent);
          });
          res.on('data', (chunk: Buffer) => parser.push(chunk));
        });
        req.on('error', () => undefined);
        this.requests.push(req);
      }
    }
  }

  get streaming(): number {
    return this.firstFrames;
  }

  window(open: boolean): void {
    this.windowOpen = open;
  }

  close(): void {
    for (const r of this.requests) r.destroy();
  }
}

async function measure(mode: 'relay' | 'service' | 'service idle', sims: BambuSimulator[], o: Options): Promise<Result> {
  const worker = new Worker<CameraWorkerCommand>('camera-worker.js');
  const viewers = new Viewers();
  try {
    const printers: CameraBenchPrinter[] = sims.map((s) => ({ id: s.id, access_code: s.accessCode, camera_port: s.camera!.port }));
    const workerMode = mode === 'relay' ? 'relay' : 'service';
    const { port } = await worker.ask<{ ev: 'ready'; port: number }>({ cmd: 'start', mode: workerMode, printers, viewers: o.printers * o.viewers }, 'ready');
    const base = `http://127.0.0.1:${port}`;
    if (workerMode === 'service') {
      await registerPrinters(base, sims);
      await waitFor(`${sims.length} printers connected`, async () => (await connectedViaApi(base)) === sims.length, 30_000 + sims.length * 50);
    }
    if (mode !== 'service idle') {
      viewers.open(base, sims.map((s) => s.id), o.viewers);
      await waitFor('a frame on every stream', async () => viewers.streaming === sims.length * o.viewers, 60_000);
    }
    await sleep(o.warmupS * 1000);
    const before = await worker.sample();
    viewers.window(true);
    await sleep(o.windowS * 1000);
    viewers.window(false);
    const after = await worker.sample();
    const sorted = Float64Array.from(viewers.delays).sort();
    return {
      mode,
      wallS: (after.wallMs - before.wallMs) / 1000,
      frames: viewers.frames,
      cpuUs: after.cpuUs - before.cpuUs,
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
      max: sorted.length ? sorted[sorted.length - 1] : NaN,
      rssStartMb: before.rssMb,
      rssEndMb: after.rssMb,
      loadAvg: os.loadavg()[0],
    };
  } finally {
    viewers.close();
    await worker.close();
  }
}

const f1 = (v: number) => (Number.isFinite(v) ? v.toFixed(1) : 'n/a');
const f2 = (v: number) => (Number.isFinite(v) ? v.toFixed(2) : 'n/a');

function line(r: Result): string {
  const perFrame = r.frames ? r.cpuUs / r.frames : NaN;
  return (
    `  ${r.mode.padEnd(12)} ${r.frames} frames delivered in ${f1(r.wallS)} s; CPU ${f2(r.cpuUs / 1e6 / r.wallS)} cores = ${f1(perFrame)} µs/frame; ` +
    `delay p50 ${f1(r.p50)} / p99 ${f1(r.p99)} / max ${f1(r.max)} ms; RSS ${r.rssStartMb} -> ${r.rssEndMb} MB; load average ${f2(r.loadAvg)}`
  );
}

async function main(argv: string[]): Promise<number> {
  const o = parseArgs(argv);
  process.stdout.write(
    `bench/camera: ${o.printers} simulated P1S cameras (${o.width}x${o.height}, 1 frame/s), ${o.viewers} stream viewers each; warm-up ${o.warmupS} s, window ${o.windowS} s; ` +
      `node ${process.version}, ${os.cpus().length} CPUs, load average ${f2(os.loadavg()[0])}\n`,
  );
  const tls = await BambuSimulator.tlsCredentials('printfarm-bench');
  const sims: BambuSimulator[] = [];
  try {
    for (let i = 0; i < o.printers; i++) {
      sims.push(
        await BambuSimulator.start({
          id: `cam-${String(i + 1).padStart(3, '0')}`,
          name: `Bench P1S #${i + 1}`,
          model: 'P1S',
          tls,
          ftps: false,
          control: false,
          reportPhaseMs: Math.round((i / o.printers) * 1000),
          cameraSize: { width: o.width, height: o.height },
          cameraStamp: true,
        }),
      );
    }
    const relay = await measure('relay', sims, o);
    process.stdout.write(`${line(relay)}\n`);
    const idle = await measure('service idle', sims, o);
    process.stdout.write(`${line(idle)}\n`);
    const service = await measure('service', sims, o);
    process.stdout.write(`${line(service)}\n`);

    const relayPerFrame = relay.cpuUs / Math.max(1, relay.frames);
    const rawRatio = service.cpuUs / Math.max(1, service.frames) / relayPerFrame;
    const idleCpuInWindow = (idle.cpuUs / idle.wallS) * service.wallS;
    const cameraRatio = Math.max(0, service.cpuUs - idleCpuInWindow) / Math.max(1, service.frames) / relayPerFrame;
    const expected = o.printers * o.viewers * o.windowS;
    const rssGrowth = service.rssEndMb - service.rssStartMb;
    process.stdout.write(
      `\n| mode | frames/s | CPU (cores) | CPU per frame (µs) | delay p50 / p99 (ms) | RSS start -> end (MB) |\n|---|---:|---:|---:|---:|---:|\n` +
        [relay, idle, service]
          .map((r) => `| ${r.mode} | ${f1(r.frames / r.wallS)} | ${f2(r.cpuUs / 1e6 / r.wallS)} | ${r.frames ? f1(r.cpuUs / r.frames) : 'n/a'} | ${r.frames ? `${f1(r.p50)} / ${f1(r.p99)}` : 'n/a'} | ${r.rssStartMb} -> ${r.rssEndMb} |`)
          .join('\n') +
        `\n\nCPU per frame, service / relay: ${f2(rawRatio)}x raw, ${f2(cameraRatio)}x for the camera path (service minus service idle); ` +
        `frames delivered ${service.frames} of about ${expected}; service RSS ${rssGrowth >= 0 ? '+' : ''}${rssGrowth} MB over the window\n`,
    );
    const misses: string[] = [];
    if (cameraRatio > 1.5) misses.push(`camera-path CPU ${f2(cameraRatio)}x the relay's (target 1.5x)`);
    if (!(service.p99 < 250)) misses.push(`p99 frame delay ${f1(service.p99)} ms (target < 250 ms)`);
    if (service.frames < expected * 0.9) misses.push(`only ${service.frames} of about ${expected} frames delivered`);
    if (rssGrowth > 50) misses.push(`service RSS grew ${rssGrowth} MB over the window`);
    process.stdout.write(misses.length ? `\nTarget NOT met: ${misses.join('; ')}\n` : '\nTargets met (CPU <= 1.5x relay for the camera path, p99 < 250 ms, RSS flat)\n');
    return misses.length ? 1 : 0;
  } finally {
    await Promise.all(sims.map((s) => s.close()));
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err) => {
      process.stderr.write(`${(err as Error).stack ?? err}\n`);
      process.exit(1);
    },
  );
}
