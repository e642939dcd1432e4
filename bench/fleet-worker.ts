/**
 * The process under measurement in bench/fleet.ts, forked once per run. It
 * measures its own CPU (process.cpuUsage) when asked, so nothing else in the
 * benchmark (simulators, the /ws client) is counted.
 *
 * - mode "service": the real service (createService, real Bambu drivers,
 *   SQLite in a temp dir that is deleted at the end); the parent registers
 *   the printers through the REST API and reads /ws.
 * - mode "relay": the baseline, a bare MQTT relay (bench/fleet-relay.ts; for
 *   Klipper printers a bare WebSocket relay, bench/fleet-klipper.ts).
 *
 * IPC: parent -> {cmd: 'start', mode, printers} | {cmd: 'sample', id} | {cmd: 'close'};
 * worker -> {ev: 'ready', port} | {ev: 'sample', id, ...} | {ev: 'closed'} | {ev: 'error', message}.
 */
import { startBenchService } from './bench-service';
import { startKlipperRelay } from './fleet-klipper';
import { startRelay, type RelayClient } from './fleet-relay';
import { serveBenchWorker } from './worker-ipc';

export interface BenchPrinter {
  id: string;
  serial: string;
  access_code: string;
  mqtt_port: number;
  /** Klipper: Moonraker's port (the relay then reads its WebSocket, bench/fleet-klipper.ts). */
  http_port?: number;
}

export type WorkerCommand =
  | { cmd: 'start'; mode: 'service' | 'relay'; printers: BenchPrinter[]; relayClient?: RelayClient }
  | { cmd: 'sample'; id: number }
  | { cmd: 'close' };

export type WorkerEvent =
  | { ev: 'ready'; port: number }
  | { ev: 'sample'; id: number; cpuUs: number; wallMs: number; connected: number; rssMb: number; loopP99Ms: number }
  | { ev: 'closed' }
  | { ev: 'error'; message: string };

interface Running {
  port: number;
  connected(): number;
  close(): Promise<void>;
}


async function startService(): Promise<Running> {
  const service = await startBenchService();
  // The parent counts connected printers through the API.
  return { ...service, connected: () => -1 };
}

serveBenchWorker<WorkerCommand, Running>({
  start: (msg) => (msg.mode === 'service' ? startService() : msg.printers[0]?.http_port ? startKlipperRelay(msg.printers) : startRelay(msg.printers, msg.relayClient ?? 'driver')),
  sampleExtra: (running) => ({ connected: running?.connected() ?? 0 }),
});
