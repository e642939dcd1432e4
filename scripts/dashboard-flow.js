'use strict';
/**
 * The dashboard's part of `npm start`: flows/dashboard.json joins the farm flow in a new user dir
 * (using the farm flow's printfarm-server, so one embedded service runs), and the dashboard's
 * server-side API calls learn the service's address (PRINTFARM_API_URL) once it has started.
 */
const path = require('node:path');

const DASHBOARD_FLOW = path.join(__dirname, '..', 'flows', 'dashboard.json');

/** Whether Dashboard 2.0 (a devDependency) is installed. */
function installed() {
  try {
    require.resolve('@flowfuse/node-red-dashboard/package.json');
    return true;
  } catch {
    return false;
  }
}

/** The farm flow plus the dashboard flow, whose nodes use the farm flow's printfarm-server instead of their own. */
function withDashboard(farm) {
  const server = farm.find((n) => n.type === 'printfarm-server');
  const dash = require(DASHBOARD_FLOW);
  if (!server) return [...farm, ...dash];
  const own = new Set(dash.filter((n) => n.type === 'printfarm-server').map((n) => n.id));
  return [...farm, ...dash.filter((n) => !own.has(n.id)).map((n) => (own.has(n.server) ? { ...n, server: server.id } : n))];
}

/**
 * Sets PRINTFARM_API_URL (unless the user did) to the first printfarm-server's service whenever the
 * flows start (a deploy that changes the service's port moves it), and prints it when it changes.
 */
function shareServiceUrl(RED) {
  if (process.env.PRINTFARM_API_URL) return;
  RED.events.on('flows:started', () => {
    let found = null;
    RED.nodes.eachNode((n) => {
      if (!found && n.type === 'printfarm-server') found = n.id;
    });
    const node = found && RED.nodes.getNode(found);
    if (!node || !node.connection) return;
    node.connection.ready().then(
      (client) => {
        const url = `${client.baseUrl.replace('://0.0.0.0', '://127.0.0.1')}/api/v1`;
        if (url === process.env.PRINTFARM_API_URL) return;
        process.env.PRINTFARM_API_URL = url;
        process.stdout.write(`Printfarm API   ${url}\n`);
      },
      () => undefined, // the config node reports it
    );
  });
}

module.exports = { installed, withDashboard, shareServiceUrl };
