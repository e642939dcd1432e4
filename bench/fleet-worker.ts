/**
 * The process under measurement in bench/fleet.ts, forked once per run. It
 * measures its own CPU (process.cpuUsage) when asked, so nothing else in the
 * benchmark (simulators, the /ws client) is counted.
 *
 * - mode "service": the real service (createService, real Bambu drivers,
 *   SQLite in a temp dir that is deleted at the end); the parent registers
 *   the printers through the REST API and reads /ws.
 * - mode "relay" (Klipper printers: bench/fleet-klipper.ts, a bare WebSocket relay):
 *   the baseline, a bare MQTT relay: one plain mqtt.js client
 *   per printer (TLS, the same options as the driver), JSON.parse of each
 *   report and one small printer_status frame per report to every /ws client.
 *   Everything the service does on top of that (merging, state mapping,
 *   change detection, status cache, database, event bus) is the difference.
 *
 * IPC: parent -> {cmd: 'start', mode, printers} | {cmd: 'sample', id} | {cmd: 'close'};
 * worker -> {ev: 'ready', port} | {ev: 'sample', id, ...} | {ev: 'closed'} | {ev: 'error', message}.
 */
import type tls from 'node:tls';
import { connect as mqttConnect, type IClientOptions, type MqttClient } from 'mqtt';
import { WebSocket, WebSocketServer } from 'ws';
import { startBenchService } from './bench-service';
import { startKlipperRelay } from './fleet-klipper';
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
  | { cmd: 'start'; mode: 'service' | 'relay'; printers: BenchPrinter[] }
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

async function startRelay(printers: BenchPrinter[]): Promise<Running> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, path: '/ws' });
  await new Promise<void>((resolve, reject) => {
    wss.once('listening', resolve);
    wss.once('error', reject);
  });
  let connected = 0;
  const clients: MqttClient[] = printers.map((p) => {
    const topic = `device/${p.serial}/report`;
    const options: IClientOptions & tls.ConnectionOptions = {
      protocol: 'mqtts',
      host: '127.0.0.1',
      port: p.mqtt_port,
      username: 'bblp',
      password: p.access_code,
      clientId: `relay_${p.id}`,
      protocolVersion: 4,
      clean: true,
      keepalive: 30,
      reconnectPeriod: 1000,
      rejectUnauthorized: false,
      maxVersion: 'TLSv1.2',
    };
    const client = mqttConnect(options);
    let subscribed = false;
    client.on('connect', () => {
      client.subscribe(topic, { qos: 0 }, (err) => {
        if (!err && !subscribed) {
          subscribed = true;
          connected++;
        }
      });
    });
    client.on('error', () => undefined);
    client.on('message', (_topic: string, payload: Buffer) => {
      let message: { print?: { command?: unknown; nozzle_temper?: unknown } };
      try {
        message = JSON.parse(payload.toString('utf8'));
      } catch {
        return;
      }
      const print = message?.print;
      if (!print || print.command !== 'push_status' || typeof print.nozzle_temper !== 'number') return;
      const frame = JSON.stringify({ type: 'printer_status', timestamp: new Date().toISOString(), data: { printer_id: p.id, temperatures: { nozzle: print.nozzle_temper } } });
      for (const ws of wss.clients) if (ws.readyState === WebSocket.OPEN) ws.send(frame);
    });
    return client;
  });
  return {
    port: (wss.address() as { port: number }).port,
    connected: () => connected,
    close: async () => {
      await Promise.all(clients.map((c) => new Promise<void>((resolve) => c.end(true, {}, () => resolve()))));
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

serveBenchWorker<WorkerCommand, Running>({
  start: (msg) => (msg.mode === 'service' ? startService() : msg.printers[0]?.http_port ? startKlipperRelay(msg.printers) : startRelay(msg.printers)),
  sampleExtra: (running) => ({ connected: running?.connected() ?? 0 }),
});
