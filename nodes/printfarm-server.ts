/**
 * printfarm-server (config node): one connection to a Printfarm service,
 * either embedded (the bundled service started here on a port and data dir,
 * optionally with the demo's simulated printers) or remote (the base URL of
 * a running service). Users register and deregister; every user hears the
 * connection state; `close` awaits the embedded service's shutdown.
 *
 * GET <admin>/printfarm/<config node id>/printers lists its printers for the editor.
 *
 * settings.js may add `printfarmServerOptions` (an object merged into the
 * embedded service's options, e.g. `{ logLevel: 'info' }`).
 */
import path from 'node:path';
import type { NodeAPI, NodeDef } from '@node-red/registry';
import { FarmConnection, type ConnectionState } from '../service/client';
import { startEmbedded, type EmbeddedOptions } from '../service/embedded';
import { asError, connectionStatus, type ServerNode, type ServerUser } from './shared';

interface ServerDef extends NodeDef {
  mode: 'embedded' | 'remote';
  url: string;
  port: string | number;
  host: string;
  dataDir: string;
  demo: boolean;
  logLevel: string;
  pollInterval: string | number;
}

const TYPE = 'printfarm-server';

export = function (RED: NodeAPI) {
  function PrintfarmServerNode(this: ServerNode, def: ServerDef) {
    RED.nodes.createNode(this, def);
    const node = this;
    node.users = {};
    const t = (key: string, subs?: Record<string, string | number>) => RED._(key, subs);
    const pollSeconds = Number(def.pollInterval) || 30;

    let options: ConstructorParameters<typeof FarmConnection>[0];
    let badConfig = false;
    try {
      if (def.mode === 'remote') {
        options = { baseUrl: String(def.url ?? '').trim(), pollIntervalMs: pollSeconds * 1000 };
      } else {
        const userDir = (RED.settings as { userDir?: string }).userDir ?? process.cwd();
        const uiPort = (RED.settings as { uiPort?: number | string }).uiPort;
        const extra = ((RED.settings as { printfarmServerOptions?: EmbeddedOptions }).printfarmServerOptions ?? {}) as EmbeddedOptions;
        const embedded: EmbeddedOptions = {
          port: def.port === '' || def.port === undefined ? 8000 : def.port,
          host: def.host || '0.0.0.0',
          dataDir: def.dataDir ? path.resolve(userDir, def.dataDir) : path.join(userDir, 'printfarm'),
          demo: def.demo === true,
          logLevel: (def.logLevel || 'warn') as EmbeddedOptions['logLevel'],
          // Pages Node-RED serves on this host (a dashboard) may use the API from the browser; other sites may not.
          allowedOrigins: uiPort ? [`:${uiPort}`] : [],
          ...extra,
        };
        options = { start: () => startEmbedded(embedded), pollIntervalMs: pollSeconds * 1000 };
      }
      node.connection = new FarmConnection(options);
    } catch (err) {
      // A connection that never connects: users show the error state, open() reports it below.
      badConfig = true;
      node.connection = new FarmConnection({ start: () => Promise.reject(asError(err)) });
    }

    const tell = (user: ServerUser, state: ConnectionState, error?: Error) => {
      if (user.onServerState) user.onServerState(state, error);
      else user.status(connectionStatus(t, TYPE, state));
    };

    node.register = (user) => {
      node.users[user.id] = user;
      tell(user, node.connection.state, node.connection.error);
    };
    node.deregister = (user, done) => {
      delete node.users[user.id];
      done();
    };

    node.connection.on('state', (state: ConnectionState, error?: Error) => {
      node.status(connectionStatus(t, TYPE, state));
      for (const user of Object.values(node.users)) tell(user, state, error);
    });

    // Start once every node of the deploy exists: users have registered and Catch nodes listen.
    let opened = false;
    const open = () => {
      if (opened) return;
      opened = true;
      RED.events.off('flows:started', open);
      node.connection.open().catch((err) => {
        const e = asError(err);
        // With a msg, so that Catch nodes on the users' tabs get it.
        const text = t(`${TYPE}.errors.${badConfig ? 'bad-config' : 'start-failed'}`, { message: e.message });
        node.error(text, { payload: { code: badConfig ? 'BAD_CONFIG' : ((e as { code?: string }).code ?? 'START_FAILED'), message: e.message } });
      });
    };
    RED.events.on('flows:started', open);

    node.on('close', (done: () => void) => {
      RED.events.off('flows:started', open);
      node.connection.close().then(
        () => done(),
        (err) => {
          node.warn(asError(err).message);
          done();
        },
      );
    });
  }

  RED.nodes.registerType(TYPE, PrintfarmServerNode);

  // For the editor: the printers a deployed config node knows (the printer id field offers them).
  RED.httpAdmin.get('/printfarm/:id/printers', RED.auth.needsPermission('printfarm-server.read'), (req, res) => {
    const server = RED.nodes.getNode(String(req.params.id)) as ServerNode | null;
    const printers = server?.connection?.monitor ? [...server.connection.monitor.printers.values()] : [];
    res.json(printers.map((p) => ({ id: p.id, name: p.name, type: p.type, status: p.status })));
  });
};
