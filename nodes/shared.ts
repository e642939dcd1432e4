/**
 * What the printfarm nodes share: the config node's interface as its users
 * see it, and the status lights (texts through the node's own catalog).
 */
import type { Node, NodeAPI, NodeStatus } from '@node-red/registry';
import type { ConnectionState, FarmConnection, PrinterSnapshot, PrintfarmClient } from '../service/client';

export type Translate = (key: string, substitutions?: Record<string, string | number>) => string;

/** A node that uses a printfarm-server config node. */
export interface ServerUser extends Node {
  /** Called with the connection state whenever it changes (and once on register). */
  onServerState?(state: ConnectionState, error?: Error): void;
}

/** The printfarm-server config node as its users see it (the pattern of Node-RED's mqtt-broker). */
export interface ServerNode extends Node {
  connection: FarmConnection;
  mode: 'embedded' | 'remote';
  /** Where the service is: the remote base URL, or the embedded service's address once it listens. */
  address?: string;
  /** Embedded: the option keys settings.js' printfarmServerOptions sets (they win over the dialog). */
  overridden?: string[];
  users: Record<string, ServerUser>;
  register(user: ServerUser): void;
  deregister(user: ServerUser, done: () => void): void;
}

/** The status light of a connection state; with the error, a refused token says why ("token refused (401)", "role too low (403)"). */
export function connectionStatus(t: Translate, type: string, state: ConnectionState, error?: Error): NodeStatus {
  const status = (error as { status?: unknown } | undefined)?.status;
  if (state === 'error' && status === 401) return { fill: 'red', shape: 'ring', text: t(`${type}.status.token-refused`) };
  if (state === 'error' && status === 403) return { fill: 'red', shape: 'ring', text: t(`${type}.status.role-too-low`) };
  switch (state) {
    case 'starting':
      return { fill: 'yellow', shape: 'ring', text: t(`${type}.status.starting`) };
    case 'connecting':
      return { fill: 'yellow', shape: 'ring', text: t(`${type}.status.connecting`) };
    case 'connected':
      return { fill: 'green', shape: 'dot', text: t(`${type}.status.connected`) };
    case 'polling':
      return { fill: 'yellow', shape: 'dot', text: t(`${type}.status.polling`) };
    case 'unreachable':
      return { fill: 'red', shape: 'ring', text: t(`${type}.status.unreachable`) };
    case 'error':
      return { fill: 'red', shape: 'ring', text: t(`${type}.status.error`) };
    case 'closed':
      return {};
  }
}

/** The status light of one printer: "printing 42 %", "paused 42 %", "online", "offline"... */
export function printerStatus(t: Translate, printer: PrinterSnapshot | undefined): NodeStatus {
  if (!printer) return { fill: 'red', shape: 'ring', text: t('printfarm-printer.status.unknown') };
  const progress = Math.floor(printer.progress);
  switch (printer.status) {
    case 'printing':
      return { fill: 'blue', shape: 'dot', text: t('printfarm-printer.status.printing', { progress }) };
    case 'paused':
      return { fill: 'yellow', shape: 'dot', text: t('printfarm-printer.status.paused', { progress }) };
    case 'online':
    case 'idle':
      return { fill: 'green', shape: 'dot', text: t('printfarm-printer.status.online') };
    case 'configuring':
      return { fill: 'yellow', shape: 'ring', text: t('printfarm-printer.status.configuring') };
    case 'error':
      return { fill: 'red', shape: 'dot', text: t('printfarm-printer.status.error') };
    default:
      return { fill: 'red', shape: 'ring', text: t('printfarm-printer.status.offline') };
  }
}

/** The status light of a whole farm: "2 of 5 printing". */
export function farmStatus(t: Translate, printers: Iterable<PrinterSnapshot>): NodeStatus {
  const all = [...printers];
  const printing = all.filter((p) => p.status === 'printing').length;
  const offline = all.filter((p) => p.status === 'offline' || p.status === 'error').length;
  return { fill: offline ? 'yellow' : printing ? 'blue' : 'green', shape: 'dot', text: t('printfarm-printer.status.farm', { printing, total: all.length }) };
}

/**
 * Looks up the config node and registers `node` with it; reports a missing
 * one (error + red status) and returns null. Deregisters on close, after `onClose`.
 */
export function useServer(RED: NodeAPI, node: ServerUser, serverId: string | undefined, type: string, onClose?: () => Promise<void> | void): ServerNode | null {
  const server = serverId ? (RED.nodes.getNode(serverId) as ServerNode | null) : null;
  if (!server || typeof server.register !== 'function') {
    node.status({ fill: 'red', shape: 'ring', text: RED._(`${type}.status.no-server`) });
    node.error(RED._(`${type}.errors.no-server`));
    // Its inputs end with that error (Catch nodes see it), rather than vanish without a word.
    node.on('input', (_msg: unknown, _send: unknown, done: (err?: Error) => void) => done(new Error(RED._(`${type}.errors.no-server`))));
    node.on('close', (done: () => void) => {
      Promise.resolve(onClose?.()).finally(done);
    });
    return null;
  }
  server.register(node);
  node.on('close', (done: () => void) => {
    Promise.resolve()
      .then(onClose)
      .catch((err) => node.warn(err))
      .finally(() => server.deregister(node, done));
  });
  return server;
}

/**
 * useServer, then `ready` once the config node's client is up, unless the node
 * closed first (a client that could not start is the config node's to report;
 * an error of `ready` is the node's).
 */
export function useServerWhenReady(
  RED: NodeAPI,
  node: ServerUser,
  serverId: string | undefined,
  type: string,
  hooks: { ready(server: ServerNode, client: PrintfarmClient): void | Promise<void>; close?(): Promise<void> | void },
): ServerNode | null {
  let closed = false;
  const server = useServer(RED, node, serverId, type, () => {
    closed = true;
    return hooks.close?.();
  });
  if (server) {
    clientOf(server)
      .then((client) => (closed ? undefined : hooks.ready(server, client)), () => undefined)
      // A failing start-up of the node is its own error, never an unhandled rejection that ends Node-RED.
      .catch((err) => node.error(asError(err)));
  }
  return server;
}

/**
 * A node set to one printer shows a red "unknown printer <id>" while the
 * service does not know that id (instead of a green light over a node that
 * can never deliver), and its connection state again once the printer
 * exists. Returns the function that stops watching.
 */
export function flagUnknownPrinter(node: ServerUser, server: ServerNode, printerId: string, type: string, t: Translate): () => void {
  const monitor = server.connection.monitor;
  if (!printerId || !monitor) return () => undefined;
  let flagged = false;
  const check = () => {
    const known = monitor.printers.has(printerId);
    if (!known && !flagged) node.status({ fill: 'red', shape: 'ring', text: t(`${type}.status.unknown-printer`, { printer: printerId }) });
    else if (known && flagged) node.status(connectionStatus(t, type, server.connection.state, server.connection.error));
    flagged = !known;
  };
  monitor.on('printer', check).on('removed', check);
  check();
  return () => {
    monitor.off('printer', check).off('removed', check);
  };
}

/** The client once the config node is connected (rejects when the embedded service could not start). */
export function clientOf(server: ServerNode): Promise<PrintfarmClient> {
  return server.connection.ready();
}

/** An Error for done()/node.error (which show `err.toString()`). */
export function asError(err: unknown): Error {
  // Duck-typed: errors from another realm (vm contexts) are no `instanceof Error`.
  if (err instanceof Error || (typeof err === 'object' && err !== null && typeof (err as Error).message === 'string')) return err as Error;
  return new Error(String(err));
}
