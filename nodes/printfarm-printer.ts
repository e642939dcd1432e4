/**
 * printer: one printer (or all of them). Sends `printer_status` messages
 * (topic = printer id, payload = its state) when a printer's state changes,
 * and `printer_removed` (payload {id}) when one is deleted;
 * takes `pause`, `resume`, `stop`, `refresh` and `list` (one `printers`
 * message with every printer it follows) on its input, and the camera
 * topics `snapshot` (a JPEG Buffer) and `stream` (see printer-camera.ts). Optionally
 * registers its printer with the service (address, serial number and the
 * access code, which is kept as a Node-RED credential).
 */
import type { Node, NodeAPI, NodeDef, NodeMessage, NodeMessageInFlow } from '@node-red/registry';
import type { ConnectionState, CreatePrinterInput, PrinterCommand, PrinterSnapshot, PrintfarmClient } from '../service/client';
import { cameraTopicOf, httpResponseOf, relayCameraStream, snapshotFilename } from './printer-camera';
import { updateFilter } from './printer-updates';
import { asError, clientOf, connectionStatus, farmStatus, printerStatus, useServerWhenReady, type ServerNode, type ServerUser } from './shared';

interface PrinterDef extends NodeDef {
  server: string;
  /** Printer id; empty: every printer. */
  printer: string;
  /** Create or update the printer in the service with the fields below. */
  register: boolean;
  printerName: string;
  printerType: 'bambu_lab' | 'prusa_core' | 'klipper';
  model: string;
  ipAddress: string;
  serialNumber: string;
  mqttPort: string | number;
  ftpsPort: string | number;
  httpPort: string | number;
  /** changes | every (see printer-updates.ts). */
  updates: string;
  /** Seconds between progress-only messages of one printer (updates = changes). */
  throttle: string | number;
}

interface PrinterCredentials {
  accessCode?: string;
}

type PrinterNodeType = ServerUser & Node<PrinterCredentials>;

const TYPE = 'printfarm-printer';
const COMMANDS = ['pause', 'resume', 'stop', 'refresh', 'list'] as const;
type Command = (typeof COMMANDS)[number];

/** A msg property as text: a string or number as it is, anything else as '' (String() of an object such as {"toString": 1} throws). */
function textOf(v: unknown): string {
  return typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : '';
}

/** The body that registers the configured printer (ports only when given). */
function registration(def: PrinterDef, accessCode: string | undefined): CreatePrinterInput {
  const port = (v: string | number) => (v === '' || v === undefined || v === null ? undefined : Number(v));
  const body: CreatePrinterInput = {
    id: def.printer,
    name: def.printerName || def.printer,
    type: def.printerType,
    ip_address: def.ipAddress,
    ...(def.model ? { model: def.model } : {}),
    ...(def.serialNumber ? { serial_number: def.serialNumber } : {}),
    ...(accessCode ? { access_code: accessCode } : {}),
    ...(port(def.mqttPort) ? { mqtt_port: port(def.mqttPort) } : {}),
    ...(port(def.ftpsPort) ? { ftps_port: port(def.ftpsPort) } : {}),
    ...(port(def.httpPort) ? { http_port: port(def.httpPort) } : {}),
  };
  return body;
}

/** Creates the printer, or changes what differs (a redeploy with the same settings leaves its connection alone). */
async function upsert(client: PrintfarmClient, body: CreatePrinterInput): Promise<void> {
  const current = await client.printers.get(body.id!).catch((err) => {
    if ((err as { status?: number }).status === 404) return null;
    throw err;
  });
  if (!current) {
    await client.printers.create(body);
    return;
  }
  const { id: _id, type: _type, ...wanted } = body;
  const changes = Object.fromEntries(Object.entries(wanted).filter(([k, v]) => (current as Record<string, unknown>)[k] !== v));
  if (Object.keys(changes).length) await client.printers.update(body.id!, changes);
}

export = function (RED: NodeAPI) {
  function PrinterNode(this: PrinterNodeType, def: PrinterDef) {
    RED.nodes.createNode(this, def);
    const node = this;
    const t = (key: string, subs?: Record<string, string | number>) => RED._(key, subs);
    const wanted = (def.printer ?? '').trim();
    const matches = (id: string) => !wanted || id === wanted;
    let online = false;
    let server: ServerNode | null = null;
    let closed = false;
    // Ends the camera relays this node runs when it closes (a deploy): they would otherwise go on for as long as the browser reads.
    const relays = new AbortController();

    const showStatus = () => {
      const monitor = server?.connection.monitor;
      if (!monitor || !online) return;
      node.status(wanted ? printerStatus(t, monitor.printers.get(wanted)) : farmStatus(t, monitor.printers.values()));
    };
    // A node that follows the whole farm counts every printer for its light: at most 4 times a second,
    // not on each of a large farm's reports (1000 printers report 1000 times a second).
    let statusTimer: NodeJS.Timeout | null = null;
    const showStatusSoon = () => {
      if (wanted) return showStatus();
      statusTimer ??= setTimeout(() => {
        statusTimer = null;
        if (!closed) showStatus();
      }, 250);
    };
    const message = (p: PrinterSnapshot): NodeMessage => ({ topic: p.id, event: 'printer_status', payload: p });
    const updates = updateFilter(def.updates, def.throttle);
    const onPrinter = (p: PrinterSnapshot) => {
      if (!matches(p.id)) return;
      if (updates.pass(p)) node.send(message(p));
      showStatusSoon();
    };
    // A removed printer is said too: flows that announced it elsewhere (Home Assistant's retained discovery) must take it back.
    const onRemoved = (id: string) => {
      updates.forget(id);
      if (!matches(id)) return;
      node.send({ topic: id, event: 'printer_removed', payload: { id } });
      showStatus();
    };

    node.onServerState = (state: ConnectionState, error?: Error) => {
      online = state === 'connected' || state === 'polling';
      if (online) showStatus();
      else node.status(connectionStatus(t, TYPE, state, error));
    };

    server = useServerWhenReady(RED, node, def.server, TYPE, {
      ready: async (farm, client) => {
        const monitor = farm.connection.monitor!;
        if (def.register && wanted) {
          await upsert(client, registration(def, node.credentials.accessCode)).catch((err) => {
            node.error(t('printfarm-printer.errors.register-failed', { printer: wanted, message: asError(err).message }), { topic: wanted, payload: { error: asError(err).message } });
          });
          await monitor.refresh().catch(() => undefined);
        }
        if (closed) return;
        monitor.on('printer', onPrinter).on('removed', onRemoved);
        // What is known already (a redeploy of this node only): once, as the starting state.
        for (const p of monitor.printers.values()) if (matches(p.id) && updates.pass(p)) node.send(message(p));
        showStatus();
      },
      close: () => {
        closed = true;
        relays.abort();
        if (statusTimer) clearTimeout(statusTimer);
        server?.connection.monitor?.off('printer', onPrinter).off('removed', onRemoved);
      },
    });
    if (!server) return;
    const farm = server;

    /** msg.topic "snapshot" / "stream": the printer is the node's, or msg.printer_id. */
    const onCamera = (topic: 'snapshot' | 'stream', msg: NodeMessageInFlow, send: (m: NodeMessage) => void, done: (err?: Error) => void) => {
      const named = textOf((msg as { printer_id?: unknown }).printer_id).trim();
      const target = wanted || named || (cameraTopicOf({ topic: msg.topic }) ? '' : textOf(msg.topic).trim());
      if (!target) return done(new Error(t('printfarm-printer.errors.no-camera-printer')));
      if (topic === 'stream') {
        const res = httpResponseOf(msg as { res?: unknown });
        if (!res) return done(new Error(t('printfarm-printer.errors.stream-needs-http')));
        // The relay answers the request itself (also with the service's error): nothing to send on.
        clientOf(farm)
          .then((client) => relayCameraStream(client, target, res, relays.signal))
          .then(
            () => done(),
            (err) => done(asError(err)),
          );
        return;
      }
      clientOf(farm)
        .then((client) => client.printers.snapshot(target))
        .then(
          (jpeg) => {
            send({ ...msg, topic: target, event: 'snapshot', printer_id: target, payload: jpeg, filename: snapshotFilename(target) } as NodeMessage);
            done();
          },
          (err) => done(new Error(t('printfarm-printer.errors.snapshot-failed', { printer: target, message: asError(err).message }))),
        );
    };

    node.on('input', (msg: NodeMessageInFlow, send: (m: NodeMessage | (NodeMessage | NodeMessage[] | null)[]) => void, done: (err?: Error) => void) => {
      const camera = cameraTopicOf(msg as { topic?: unknown; command?: unknown; payload?: unknown });
      if (camera) return onCamera(camera, msg, send, done);
      const given = (msg as { command?: unknown }).command ?? msg.payload;
      const command = textOf(given).trim().toLowerCase() as Command;
      const target = wanted || textOf((msg as { printer_id?: unknown }).printer_id ?? msg.topic).trim();
      if (!COMMANDS.includes(command)) return done(new Error(t('printfarm-printer.errors.unknown-command', { command: textOf(given).slice(0, 40) || `(${given === null ? 'null' : typeof given})` })));
      if (!target && command !== 'refresh' && command !== 'list') return done(new Error(t('printfarm-printer.errors.no-printer')));
      clientOf(farm)
        .then(async (client) => {
          if (command === 'refresh') {
            const monitor = farm.connection.monitor!;
            await monitor.refresh();
            const list = [...monitor.printers.values()].filter((p) => (target ? p.id === target : true));
            if (target && !list.length) throw new Error(t('printfarm-printer.errors.not-found', { printer: target }));
            send([list.map((p) => ({ ...msg, ...message(p) }))]);
            showStatus();
            return;
          }
          if (command === 'list') {
            // The whole farm the node follows, in one message, even when it is empty: a flow learns which printers
            // no longer exist (deleted while it did not run), which per-printer messages cannot tell.
            const monitor = farm.connection.monitor!;
            await monitor.refresh();
            const printers = [...monitor.printers.values()].filter((p) => matches(p.id));
            send({ ...msg, topic: wanted, event: 'printers', payload: printers });
            showStatus();
            return;
          }
          await client.printers.command(target, command as PrinterCommand).catch((err) => {
            // A viewer token may read but not control: say so instead of a bare "forbidden".
            if ((err as { status?: unknown }).status === 403) throw new Error(t('printfarm-printer.errors.role-too-low', { command, message: asError(err).message }));
            throw err;
          });
        })
        .then(
          () => done(),
          (err) => done(asError(err)),
        );
    });
  }

  RED.nodes.registerType<PrinterNodeType, PrinterDef, object, PrinterCredentials>(TYPE, PrinterNode, { credentials: { accessCode: { type: 'password' } } });
};
