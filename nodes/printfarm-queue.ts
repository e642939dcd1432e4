/**
 * queue: the print queue in a flow. Input adds an item (msg.payload as the
 * POST /queue body, or with msg.payload.file, a path or a Buffer, uploaded
 * first) or, with msg.topic hold, release or cancel, acts on the item
 * msg.payload.id. Output: every queue_update from /ws, payload = the item.
 * Status: "3 queued, 2 printing" (", 1 held"), red with the reason when an
 * input fails.
 */
import type { NodeAPI, NodeDef, NodeMessage, NodeMessageInFlow } from '@node-red/registry';
import { PrintfarmError, type ConnectionState, type Frame } from '../service/client';
import { QueueCounts } from './queue-counts';
import { actionOf, addItem, InputError, runAction } from './queue-input';
import { asError, clientOf, connectionStatus, flagUnknownPrinter, useServerWhenReady, type ServerNode, type ServerUser } from './shared';

interface QueueDef extends NodeDef {
  server: string;
  /** Where the new item is read from (default msg.payload). */
  property: string;
  propertyType: 'msg' | 'flow' | 'global';
  /** Printer the node's items go to (target.printer_ids) unless the payload has a target; empty: any. */
  printer: string;
  copies: string | number;
  priority: string | number;
}

const TYPE = 'printfarm-queue';
/** The longest reason shown under the node (the whole message goes to Catch nodes). */
const REASON_CHARS = 60;

/** A number setting, or undefined when it is blank (the service's default then applies). */
function setting(value: unknown): number | undefined {
  const text = String(value ?? '').trim();
  return text === '' || !Number.isFinite(Number(text)) ? undefined : Number(text);
}

export = function (RED: NodeAPI) {
  function QueueNode(this: ServerUser, def: QueueDef) {
    RED.nodes.createNode(this, def);
    const node = this;
    const t = (key: string, subs?: Record<string, string | number>) => RED._(key, subs);
    const printer = String(def.printer ?? '').trim();
    const defaults = { printer, copies: setting(def.copies), priority: setting(def.priority) };
    const counts = new QueueCounts();
    let counted = false;
    let closed = false;
    let stopFlagging: (() => void) | null = null;
    let server: ServerNode | null = null;

    const showCounts = () => {
      counted = true;
      // A chosen printer the service does not know stays red (flagUnknownPrinter), whatever the queue does.
      const monitor = server?.connection.monitor;
      if (printer && monitor && !monitor.printers.has(printer)) {
        return node.status({ fill: 'red', shape: 'ring', text: t(`${TYPE}.status.unknown-printer`, { printer }) });
      }
      const c = counts.counts;
      const text = t(c.held ? `${TYPE}.status.counts-held` : `${TYPE}.status.counts`, { queued: c.queued, printing: c.printing, held: c.held });
      node.status({ fill: c.printing ? 'blue' : 'green', shape: 'dot', text });
    };

    /** The reason an input failed, in words: the service's message (with the field it names) or the node's own. */
    const reasonOf = (err: unknown): Error => {
      if (err instanceof InputError) return new Error(t(`${TYPE}.errors.${err.key}`, err.subs));
      // The service's message names the field and the limit ("Invalid body: copies: ..."); the code follows.
      if (err instanceof PrintfarmError) return new Error(`${err.message} (${err.code})`);
      return asError(err);
    };
    const failed = (err: unknown): Error => {
      const e = reasonOf(err);
      const text = e.message.length > REASON_CHARS ? `${e.message.slice(0, REASON_CHARS - 1)}…` : e.message;
      node.status({ fill: 'red', shape: 'dot', text: t(`${TYPE}.status.failed`, { reason: text }) });
      return e;
    };

    let lastState: ConnectionState | null = null;
    /** Counts the open items from GET /queue (at start, and after /ws was down: no frames came meanwhile). */
    const recount = () => {
      if (!server) return;
      clientOf(server)
        .then((client) => counts.load(client))
        .then(
          () => !closed && showCounts(),
          (err) => !closed && node.warn(failed(err)),
        );
    };

    node.onServerState = (state: ConnectionState, error?: Error) => {
      const back = state === 'connected' && lastState !== null && lastState !== 'connected' && counted;
      lastState = state;
      if (back) return recount();
      if ((state === 'connected' || state === 'polling') && counted) return showCounts();
      node.status(connectionStatus(t, TYPE, state, error));
    };

    const onFrame = (frame: Frame) => {
      if (frame.type !== 'queue_update') return;
      const item = frame.data as { id?: unknown; status?: unknown };
      if (typeof item.id !== 'string' || typeof item.status !== 'string') return;
      counts.update({ id: item.id, status: item.status });
      node.send({ topic: item.id, payload: frame.data });
      showCounts();
    };

    server = useServerWhenReady(RED, node, def.server, TYPE, {
      ready: (farm) => {
        farm.connection.monitor!.on('frame', onFrame);
        if (printer) stopFlagging = flagUnknownPrinter(node, farm, printer, TYPE, t);
        recount();
      },
      close: () => {
        closed = true;
        server?.connection.monitor?.off('frame', onFrame);
        stopFlagging?.();
      },
    });
    if (!server) return;
    const farm = server;

    node.on('input', (msg: NodeMessageInFlow, send: (m: NodeMessage) => void, done: (err?: Error) => void) => {
      const work = async () => {
        const client = await clientOf(farm);
        const action = actionOf(msg.topic);
        if (action) return runAction(client, action, msg.payload);
        const source = RED.util.evaluateNodeProperty(def.property || 'payload', def.propertyType || 'msg', node, msg);
        return addItem(client, source, defaults);
      };
      work().then(
        // The item's queue_update goes out on its own (and counts); the input just ends.
        () => done(),
        (err) => done(failed(err)),
      );
    });
  }

  RED.nodes.registerType(TYPE, QueueNode);
};
