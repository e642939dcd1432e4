/**
 * bench/fleet's simulator host: the N simulated printers in a process of
 * their own, so that the process reading /ws (bench/fleet.ts) is not also the
 * one encrypting every report for two subscribers (the relay's and the
 * service's): its own delays would otherwise be the latency measured on both
 * sides. Each report's send time goes to the parent in batches, on the
 * machine-wide monotonic clock (process.hrtime), which the parent converts to
 * its own.
 *
 * IPC: parent -> {cmd: 'start', n, options} | {cmd: 'close'};
 * host -> {ev: 'ready', printers, configs} | {ev: 'reports', ids, nozzles, at} | {ev: 'closed'} | {ev: 'error', message}.
 */
import { BambuSimulator, type SimReportInfo } from '../service/simulators/bambu';
import { KlipperSimulator } from '../service/simulators/klipper';
import { benchPrinterOf, startSimulators, type Options } from './fleet-sims';
import { startKlipperSimulators } from './fleet-klipper';

/** How often the send times go to the parent (ms). */
const FLUSH_MS = 20;

let sims: Array<BambuSimulator | KlipperSimulator> = [];
let ids: string[] = [];
let nozzles: number[] = [];
let at: number[] = [];
const send = (event: object) => process.send?.(event);

const sink = {
  onReport(info: SimReportInfo): void {
    ids.push(info.id);
    nozzles.push(info.nozzle);
    at.push(Number(process.hrtime.bigint()) / 1e6);
  },
};

const flush = setInterval(() => {
  if (!ids.length) return;
  send({ ev: 'reports', ids, nozzles, at });
  ids = [];
  nozzles = [];
  at = [];
}, FLUSH_MS);

async function close(): Promise<void> {
  clearInterval(flush);
  await Promise.all(sims.map((s) => s.close()));
  sims = [];
}

process.on('message', (raw: unknown) => {
  const msg = raw as { cmd: 'start'; n: number; options: Options } | { cmd: 'close' };
  void (async () => {
    try {
      if (msg.cmd === 'start') {
        const { n, options } = msg;
        const tls = await BambuSimulator.tlsCredentials('printfarm-bench');
        sims = options.klipper ? await startKlipperSimulators(n, options.intervalMs, sink) : await startSimulators(n, options, tls, sink);
        send({ ev: 'ready', printers: sims.map(benchPrinterOf), configs: sims.map((s) => s.printerConfig()) });
      } else {
        await close();
        send({ ev: 'closed' });
        process.disconnect?.();
      }
    } catch (err) {
      send({ ev: 'error', message: (err as Error).stack ?? String(err) });
    }
  })();
});

process.on('SIGINT', () => undefined);
process.on('disconnect', () => {
  setTimeout(() => process.exit(1), 10_000).unref();
  void close().finally(() => process.exit(0));
});
