/**
 * The baseline of bench/fleet.ts for Bambu printers: a bare MQTT relay. One
 * MQTT client per printer (TLS, the driver's options), JSON.parse of each
 * report and one small printer_status frame per report to every /ws client.
 * Everything the service does on top of that (merging, state mapping, change
 * detection, status cache, database, event bus) is the difference.
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
import type { BenchPrinter } from './fleet-worker';

export type RelayClient = 'driver' | 'mqtt.js';

/** One printer's subscription: `onReport` for each report, `subscribed` once, `end` to close. */
interface Link {
  end(): Promise<void>;
}

type Handlers = { onReport: (payload: Buffer) => void; subscribed: () => void };

const TLS = { rejectUnauthorized: false, maxVersion: 'TLSv1.2' } as const;

function driverLink(p: BenchPrinter, topic: string, h: Handlers): Link {
  let conn: MqttConnection | null = null;
  let ended = false;
  let retry: NodeJS.Timeout | null = null;
  const open = () => {
    const c = new MqttConnection(
      { host: '127.0.0.1', port: p.mqtt_port, clientId: `relay_${p.id}`, username: 'bblp', password: p.access_code, keepaliveSeconds: 30, maxPacketBytes: 1024 * 1024, tls: TLS },
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
    clientId: `relay_${p.id}`,
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

export async function startRelay(printers: BenchPrinter[], client: RelayClient): Promise<{ port: number; connected(): number; close(): Promise<void> }> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, path: '/ws' });
  await new Promise<void>((resolve, reject) => {
    wss.once('listening', resolve);
    wss.once('error', reject);
  });
  const subscribed = new Set<string>();
  const links = printers.map((p) => {
    const onReport = (payload: Buffer) => {
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
