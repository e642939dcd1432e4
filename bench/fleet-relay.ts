/**
 * The baseline of bench/fleet.ts for Bambu printers: a bare MQTT relay. One
 * MQTT client per printer (TLS, the driver's options), JSON.parse of each
 * report and one printer_status frame per report to every /ws client, with the
 * fields the service's frame has (the spec's status, progress, nozzle and bed
 * temperatures, and the job's name, layers and time left while printing): a
 * delta report carries only what changed, so the relay keeps the last value of
 * each of those fields per printer. Everything the service does on top of that
 * (bounds, merging every field it reads, state mapping, change detection,
 * status cache, database, event bus, queue) is the difference.
 *
 * The client is, by default, the driver's own MQTT connection
 * (service/printers/bambu/mqtt-connection.ts), so that the ratio measures the
 * service's own work and not a difference of MQTT clients; `mqtt.js` (the
 * client the driver used until 2026-11-26) is kept as an option, to compare
 * with the figures measured against it.
 */
import { WebSocket, WebSocketServer } from 'ws';
import { connect as mqttConnect } from 'mqtt';
import { MqttConnection } from '../service/printers/bambu/mqtt-connection';
import { printerTlsContext } from '../service/printers/bambu/tls-context';
import type { BenchPrinter } from './fleet-worker';

export type RelayClient = 'driver' | 'mqtt.js';

/** One printer's subscription: `onReport` for each report, `subscribed` once, `end` to close. */
interface Link {
  end(): Promise<void>;
}

type Handlers = { onReport: (payload: Buffer) => void; subscribed: () => void };

/** Two relays may follow the same printers (bench/fleet.ts --calibrate): a broker drops a client whose id connects again. */
const clientIdOf = (p: BenchPrinter) => `relay_${process.pid}_${p.id}`;

const TLS = { rejectUnauthorized: false, maxVersion: 'TLSv1.2' } as const;
/** The driver's TLS: the same quirks, in the context all its connections share (tls-context.ts). */
const DRIVER_TLS = { rejectUnauthorized: false, secureContext: printerTlsContext() };

function driverLink(p: BenchPrinter, topic: string, h: Handlers): Link {
  let conn: MqttConnection | null = null;
  let ended = false;
  let retry: NodeJS.Timeout | null = null;
  const open = () => {
    const c = new MqttConnection(
      { host: '127.0.0.1', port: p.mqtt_port, clientId: clientIdOf(p), username: 'bblp', password: p.access_code, keepaliveSeconds: 30, maxPacketBytes: 1024 * 1024, tls: DRIVER_TLS },
      {
        connack: (code) => code === 0 && c.subscribe(topic, 0, (err) => !err && h.subscribed()),
        message: (_topic, payload) => h.onReport(payload),
        error: () => undefined,
        refused: () => undefined,
        close: () => {
          if (!ended) retry = setTimeout(open, 1000);
        },
      },
      (fn) => fn,
    );
    conn = c;
  };
  open();
  return {
    end: () => {
      ended = true;
      if (retry) clearTimeout(retry);
      return conn ? conn.end() : Promise.resolve();
    },
  };
}

function mqttJsLink(p: BenchPrinter, topic: string, h: Handlers): Link {
  const client = mqttConnect({
    protocol: 'mqtts',
    host: '127.0.0.1',
    port: p.mqtt_port,
    username: 'bblp',
    password: p.access_code,
    clientId: clientIdOf(p),
    protocolVersion: 4,
    clean: true,
    keepalive: 30,
    reconnectPeriod: 1000,
    ...TLS,
  });
  client.on('connect', () => client.subscribe(topic, { qos: 0 }, (err) => !err && h.subscribed()));
  client.on('error', () => undefined);
  client.on('message', (_topic: string, payload: Buffer) => h.onReport(payload));
  return { end: () => new Promise<void>((resolve) => client.end(true, {}, () => resolve())) };
}

/** What a printer's reports said last, of the fields the frame shows. */
interface Shown {
  gcode_state: unknown;
  mc_percent: unknown;
  nozzle_temper: unknown;
  bed_temper: unknown;
  subtask_name: unknown;
  layer_num: unknown;
  total_layer_num: unknown;
  mc_remaining_time: unknown;
}
const SHOWN_KEYS = ['gcode_state', 'mc_percent', 'nozzle_temper', 'bed_temper', 'subtask_name', 'layer_num', 'total_layer_num', 'mc_remaining_time'] as const;

/** The printer status of a gcode_state (the service's mapping, fleet-status.ts printerStatusOf, without its special cases). */
const STATUS: Record<string, string> = { PREPARE: 'printing', SLICING: 'printing', RUNNING: 'printing', PAUSE: 'paused', FAILED: 'error' };

/** The frame the service sends for a printer in this state (service/printers/fleet-status.ts statusEvent). */
function frameOf(printerId: string, s: Shown): string {
  const status = (typeof s.gcode_state === 'string' && STATUS[s.gcode_state]) || 'online';
  const data: Record<string, unknown> = {
    printer_id: printerId,
    change: 'state',
    status,
    connection_status: 'connected',
    progress: typeof s.mc_percent === 'number' ? s.mc_percent : 0,
    temperatures: { nozzle: s.nozzle_temper, bed: s.bed_temper },
    plate_state: 'clear',
  };
  if (status !== 'online' && typeof s.subtask_name === 'string') {
    data.job_name = s.subtask_name;
    data.layer_current = s.layer_num;
    data.layer_total = s.total_layer_num;
    data.estimated_remaining = typeof s.mc_remaining_time === 'number' ? Math.round(s.mc_remaining_time * 60) : null;
  }
  return JSON.stringify({ type: 'printer_status', timestamp: new Date().toISOString(), data });
}

export async function startRelay(printers: BenchPrinter[], client: RelayClient): Promise<{ port: number; connected(): number; close(): Promise<void> }> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, path: '/ws' });
  await new Promise<void>((resolve, reject) => {
    wss.once('listening', resolve);
    wss.once('error', reject);
  });
  const subscribed = new Set<string>();
  const links = printers.map((p) => {
    const shown: Shown = { gcode_state: null, mc_percent: null, nozzle_temper: null, bed_temper: null, subtask_name: null, layer_num: null, total_layer_num: null, mc_remaining_time: null };
    const onReport = (payload: Buffer) => {
      let message: { print?: Partial<Shown> & { command?: unknown } };
      try {
        message = JSON.parse(payload.toString('utf8'));
      } catch {
        return;
      }
      const print = message?.print;
      if (!print || print.command !== 'push_status' || typeof print.nozzle_temper !== 'number') return;
      for (const key of SHOWN_KEYS) if (key in print) shown[key] = print[key];
      const frame = frameOf(p.id, shown);
      for (const ws of wss.clients) if (ws.readyState === WebSocket.OPEN) ws.send(frame);
    };
    const handlers = { onReport, subscribed: () => subscribed.add(p.id) };
    const topic = `device/${p.serial}/report`;
    return client === 'mqtt.js' ? mqttJsLink(p, topic, handlers) : driverLink(p, topic, handlers);
  });
  return {
    port: (wss.address() as { port: number }).port,
    connected: () => subscribed.size,
    close: async () => {
      await Promise.all(links.map((link) => link.end()));
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}
