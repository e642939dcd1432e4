/**
 * printfarm-events: one message per event worth telling a person (print finished or failed, a fatal or
 * serious attention entry, a printer offline for longer than offline_notify_s, a plate to clear, a failed
 * queue item, a spool running low), filtered by kind and printer, each cause once. msg.payload is the
 * sentence in the node's language (English or German), msg.topic the title, msg.notification everything.
 */
import type { NodeAPI, NodeDef } from '@node-red/registry';
import type { ConnectionState, Frame } from '../service/client';
import type { Notification } from '../service/notify/kinds';
import { kindList, languageOf, NotificationFilter } from './notification-filter';
import { connectionStatus, flagUnknownPrinter, useServerWhenReady, type ServerNode, type ServerUser } from './shared';

interface EventsDef extends NodeDef {
  server: string;
  /** Printer id; empty: every printer. */
  printer: string;
  /** Kinds to send, comma-separated (all when empty). */
  kinds: string | string[];
  /** "auto" (Node-RED's language), "en" or "de". */
  language: string;
}

const TYPE = 'printfarm-events';
const FILL: Record<string, 'red' | 'yellow' | 'blue' | 'green'> = { fatal: 'red', serious: 'red', common: 'yellow', info: 'green' };

export = function (RED: NodeAPI) {
  function EventsNode(this: ServerUser, def: EventsDef) {
    RED.nodes.createNode(this, def);
    const node = this;
    const t = (key: string, subs?: Record<string, string | number>) => RED._(key, subs);
    const printer = (def.printer ?? '').trim();
    const filter = new NotificationFilter(kindList(def.kinds), printer);
    const language = languageOf(def.language, (RED.settings as { lang?: string }).lang ?? process.env.LANG);
    let sent = false;
    let stopFlagging: (() => void) | null = null;
    let unlisten: (() => void) | null = null;

    node.onServerState = (state: ConnectionState, error?: Error) => {
      if ((state === 'connected' || state === 'polling') && sent) return;
      node.status(connectionStatus(t, TYPE, state, error));
    };

    const hear = (frame: Frame) => {
      if (frame.type !== 'notification') return;
      const n = frame.data as Partial<Notification>;
      if (!filter.pass(n)) return;
      const words = n.texts?.[language] ?? { title: n.title, message: n.message };
      node.send({
        topic: words.title,
        payload: words.message,
        kind: n.kind,
        severity: n.severity,
        printer_id: n.printer_id,
        printer_name: n.printer_name,
        data: n.data,
        notification: n,
      });
      sent = true;
      node.status({ fill: FILL[n.severity] ?? 'blue', shape: 'dot', text: t(`${TYPE}.status.sent`, { kind: t(`${TYPE}.kind.${n.kind}`) }) });
    };

    useServerWhenReady(RED, node, def.server, TYPE, {
      ready: (farm: ServerNode) => {
        const monitor = farm.connection.monitor;
        if (!monitor) return;
        stopFlagging = flagUnknownPrinter(node, farm, printer, TYPE, t);
        monitor.on('frame', hear);
        unlisten = () => monitor.off('frame', hear);
      },
      close: () => {
        unlisten?.();
        stopFlagging?.();
      },
    });
  }

  RED.nodes.registerType(TYPE, EventsNode);
};
