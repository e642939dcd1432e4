/**
 * printfarm-server (config node): one connection to a Printfarm service,
 * either embedded (the bundled service started here on a port and data dir,
 * optionally with the demo's simulated printers) or remote (the base URL of
 * a running service). Users register and deregister; every user hears the
 * connection state.
 *
 * The embedded service listens on 127.0.0.1 unless the node exposes it (the
 * nodes run in the same process; the LAN could otherwise pause printers and
 * read access codes). It survives deploys that keep its settings (see
 * embedded-keeper.ts) and logs through this node's log/warn/error.
 *
 * settings.js may add `printfarmServerOptions` (an object merged into the
 * embedded service's options, e.g. `{ logLevel: 'info' }`); the editor shows
 * the address that is in effect (see server-admin.ts).
 */
import type { NodeAPI, NodeDef } from '@node-red/registry';
import { FarmConnection, type ConnectionState } from '../service/client';
import type { EmbeddedOptions } from '../service/embedded';
import { embeddedAccessControl, embeddedOptions, pollSeconds, remoteUrl, type ServerCredentials, type ServerDef } from './server-options';
import { keeperFor, type Claim } from './embedded-keeper';
import { registerAdminRoutes } from './server-admin';
import type { ServiceLogLine } from './service-log';
import { asError, connectionStatus, type ServerNode, type ServerUser } from './shared';

const TYPE = 'printfarm-server';

export = function (RED: NodeAPI) {
  const keeper = keeperFor(RED.events as unknown as Parameters<typeof keeperFor>[0], (line) => RED.log[line.method === 'log' ? 'info' : line.method](`[printfarm] ${line.text}`));

  function PrintfarmServerNode(this: ServerNode & { credentials?: ServerCredentials }, def: ServerDef) {
    RED.nodes.createNode(this, def);
    const node = this;
    // Kept only in this closure and the client's headers: never logged, shown or sent elsewhere.
    const token = String(node.credentials?.token ?? '').trim() || undefined;
    node.users = {};
    const t = (key: string, subs?: Record<string, string | number>) => RED._(key, subs);
    node.mode = def.mode === 'remote' ? 'remote' : 'embedded';
    let claim: Claim | null = null;

    let badConfig = false;
    try {
      const pollIntervalMs = pollSeconds(def.pollInterval) * 1000;
      if (def.mode === 'remote') {
        node.address = remoteUrl(def.url);
        node.connection = new FarmConnection({ baseUrl: node.address, pollIntervalMs, client: { token } });
      } else {
        const userDir = (RED.settings as { userDir?: string }).userDir ?? process.cwd();
        const uiPort = (RED.settings as { uiPort?: number | string }).uiPort;
        const extra = ((RED.settings as { printfarmServerOptions?: EmbeddedOptions }).printfarmServerOptions ?? {}) as EmbeddedOptions;
        const options = embeddedOptions(def, userDir, extra, uiPort);
        node.overridden = Object.keys(extra);
        const log = (line: ServiceLogLine) => node[line.method](line.text);
        // The embedded service only takes the token when its access control is on (AUTH_TOKENS or tokens.json).
        const embeddedToken = embeddedAccessControl(options) ? token : undefined;
        const held = keeper.claim(options, log);
        claim = held;
        node.connection = new FarmConnection({
          start: async () => {
            const started = await held.start();
            node.address = started.url;
            node.log(t(`${TYPE}.log.${held.reused ? 'kept' : 'started'}`, { url: started.url }));
            return started;
          },
          pollIntervalMs,
          client: { token: embeddedToken },
        });
      }
    } catch (err) {
      // A connection that never connects: users show the error state, open() reports the reason below.
      badConfig = true;
      node.connection = new FarmConnection({ start: () => Promise.reject(asError(err)) });
    }

    const tell = (user: ServerUser, state: ConnectionState, error?: Error) => {
      if (user.onServerState) user.onServerState(state, error);
      else user.status(connectionStatus(t, TYPE, state, error));
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
      node.status(connectionStatus(t, TYPE, state, error));
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

    node.on('close', (removed: boolean, done: () => void) => {
      RED.events.off('flows:started', open);
      // A deploy that keeps this node (even with other settings: the keeper compares them) parks the service.
      if (claim) claim.keepOnClose = !removed;
      node.connection
        .close()
        .then(() => claim?.dispose())
        .then(
          () => done(),
          (err) => {
            node.warn(asError(err).message);
            done();
          },
        );
    });
  }

  RED.nodes.registerType<ServerNode & { credentials?: ServerCredentials }, ServerDef, object, ServerCredentials>(TYPE, PrintfarmServerNode, { credentials: { token: { type: 'password' } } });
  registerAdminRoutes(RED);
};
