/**
 * bench/fleet --klipper N: the Klipper side of the fleet benchmark. N
 * simulated Moonraker printers, each pushing a `notify_status_update` delta
 * with a new extruder temperature every interval (2 Hz by default), and the
 * baseline for them: a bare WebSocket-to-/ws relay (one plain ws client per
 * printer on Moonraker's /websocket, subscribed to the extruder, one small
 * printer_status frame per delta to every /ws client). Everything the
 * service does on top (JSON-RPC, merging, state mapping, change detection,
 * status cache, database, event bus) is the difference.
 */
import { WebSocket, WebSocketServer } from 'ws';
import { KlipperSimulator } from '../service/simulators/klipper';
import type { ReportSink } from './fleet-ledger';
import { pool } from './pool';
import type { BenchPrinter } from './fleet-worker';


export function startKlipperSimulators(n: number, intervalMs: number, ledger: ReportSink): Promise<KlipperSimulator[]> {
  return pool(
    Array.from({ length: n }, (_, i) => i),
    50,
    (i) =>
      KlipperSimulator.start({
        id: `bench-k-${String(i + 1).padStart(4, '0')}`,
        name: `Bench Voron #${i + 1}`,
        control: false,
        files: [],
        // Independent printers: spread evenly over the interval.
        bench: { intervalMs, phaseMs: Math.round((i / n) * intervalMs), onReport: (info) => ledger.onReport({ id: info.id, serial: '', sequence: 0, full: false, nozzle: info.nozzle }) },
      }),
  );
}

export function klipperBenchPrinter(sim: KlipperSimulator): BenchPrinter {
  return { id: sim.printerConfig().id, serial: '', access_code: '', mqtt_port: 0, http_port: sim.httpPort };
}

/** The baseline: Moonraker WebSocket in, one /ws frame per delta out, nothing else. */
export async function startKlipperRelay(printers: BenchPrinter[]): Promise<{ port: number; connected(): number; close(): Promise<void> }> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, path: '/ws' });
  await new Promise<void>((resolve, reject) => {
    wss.once('listening', resolve);
    wss.once('error', reject);
  });
  let connected = 0;
  const sockets = printers.map((p) => {
    const ws = new WebSocket(`ws://127.0.0.1:${p.http_port}/websocket`);
    ws.on('error', () => undefined);
    ws.on('open', () => ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'printer.objects.subscribe', params: { objects: { extruder: ['temperature'] } }, id: 1 })));
    ws.on('message', (data: Buffer) => {
      let msg: { id?: unknown; method?: unknown; params?: [{ extruder?: { temperature?: unknown } }] };
      try {
        msg = JSON.parse(data.toString('utf8'));
      } catch {
        return;
      }
      if (msg.id === 1) connected++;
      const temperature = msg.method === 'notify_status_update' ? msg.params?.[0]?.extruder?.temperature : undefined;
      if (typeof temperature !== 'number') return;
      const frame = JSON.stringify({ type: 'printer_status', timestamp: new Date().toISOString(), data: { printer_id: p.id, temperatures: { nozzle: temperature } } });
      for (const client of wss.clients) if (client.readyState === WebSocket.OPEN) client.send(frame);
    });
    return ws;
  });
  return {
    port: (wss.address() as { port: number }).port,
    connected: () => connected,
    close: async () => {
      for (const ws of sockets) ws.terminate();
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}
