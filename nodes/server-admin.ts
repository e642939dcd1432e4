/**
 * The config node's admin endpoints, for the edit dialogs (the pattern of
 * home-assistant-websocket's server lookups). They answer for deployed
 * printfarm-server nodes; an undeployed one has no printers yet.
 *
 * GET <admin>/printfarm/<config node id>/printers  [{id, name, type, status}]
 * GET <admin>/printfarm/<config node id>/info      {deployed, mode, address, state, overridden}
 *   address: where the service really listens (settings.js' printfarmServerOptions
 *   may override the dialog's port), overridden: the option keys settings.js sets.
 */
import type { NodeAPI } from '@node-red/registry';
import type { ServerNode } from './shared';

export function registerAdminRoutes(RED: NodeAPI): void {
  const serverOf = (id: unknown) => {
    const node = RED.nodes.getNode(String(id)) as ServerNode | null;
    return node && node.type === 'printfarm-server' ? node : null;
  };
  const read = RED.auth.needsPermission('printfarm-server.read');

  RED.httpAdmin.get('/printfarm/:id/printers', read, (req, res) => {
    const server = serverOf(req.params.id);
    const printers = server?.connection?.monitor ? [...server.connection.monitor.printers.values()] : [];
    res.json(printers.map((p) => ({ id: p.id, name: p.name, type: p.type, status: p.status })));
  });

  RED.httpAdmin.get('/printfarm/:id/info', read, (req, res) => {
    const server = serverOf(req.params.id);
    if (!server) return void res.json({ deployed: false });
    res.json({
      deployed: true,
      mode: server.mode,
      address: server.address ?? null,
      state: server.connection.state,
      overridden: server.overridden ?? [],
    });
  });
}
