#!/usr/bin/env node
'use strict';
/**
 * `npm start` / `npm run demo`: Node-RED 4.1 (a devDependency) with this node
 * pack and flows/farm.json, in a user dir of its own (.node-red/, git-ignored).
 * The flow's printfarm-server node runs the service embedded (port 8000);
 * --demo adds the simulated printers.
 *
 * Environment:
 *   NODE_RED_PORT      editor port (1880; 0 picks a free one)
 *   NODE_RED_HOST      address to listen on (127.0.0.1; beyond loopback the editor asks for a login)
 *   NODE_RED_ADMIN_PASSWORD  the editor's admin password (else a random one in <user dir>/admin-password.txt)
 *   NODE_RED_USER_DIR  user dir (./.node-red)
 *   PRINTFARM_FLOWS    flow file copied into a new user dir (flows/farm.json)
 *   PRINTFARM_PORT     overrides the embedded service's port (the flow says 8000)
 *   PRINTFARM_LOG_LEVEL  the embedded service's log level (the flow says warn)
 *
 * The editor asks for a login (user admin) when it listens beyond loopback or
 * the embedded service has access control on (see editor-login.js).
 *
 * Once started it prints `Node-RED editor <url>`; Ctrl+C (SIGINT) or SIGTERM
 * stops the flows (and with them the embedded service) before it exits.
 */
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');

const root = path.join(__dirname, '..');
const demo = process.argv.includes('--demo');
const env = process.env;

function fail(message) {
  process.stderr.write(`start-node-red: ${message}\n`);
  process.exit(2);
}

if (!fs.existsSync(path.join(root, 'dist', 'nodes', 'printfarm-server.js'))) fail('the pack is not built: run `npm run build` first');
let RED;
try {
  RED = require('node-red');
} catch {
  fail('node-red is not installed (it is a devDependency: run `npm install`)');
}

const uiPort = env.NODE_RED_PORT === undefined ? 1880 : Number(env.NODE_RED_PORT);
if (!Number.isInteger(uiPort) || uiPort < 0 || uiPort > 65535) fail(`NODE_RED_PORT must be a port number, got "${env.NODE_RED_PORT}"`);
// Loopback by default: the editor runs code with the farm's rights (see editor-login.js).
const uiHost = env.NODE_RED_HOST || '127.0.0.1';
const userDir = path.resolve(env.NODE_RED_USER_DIR || path.join(root, '.node-red'));
const seed = path.resolve(env.PRINTFARM_FLOWS || path.join(root, 'flows', 'farm.json'));
const flowFile = path.join(userDir, 'flows.json');

const dashboard = require('./dashboard-flow');
const login = require('./editor-login');
const withDashboard = dashboard.installed();

fs.mkdirSync(userDir, { recursive: true });
if (!fs.existsSync(flowFile)) {
  if (!fs.existsSync(seed)) fail(`no flow file at ${seed}`);
  // A new user dir gets the farm flow and, with Dashboard 2.0 installed, the dashboard flow.
  if (withDashboard && !env.PRINTFARM_FLOWS) fs.writeFileSync(flowFile, JSON.stringify(dashboard.withDashboard(JSON.parse(fs.readFileSync(seed, 'utf8'))), null, 4));
  else fs.copyFileSync(seed, flowFile);
}

/** Options for every embedded service (printfarm-server nodes read RED.settings.printfarmServerOptions). */
const serviceOptions = {};
if (demo) serviceOptions.demo = true;
if (env.PRINTFARM_PORT !== undefined && env.PRINTFARM_PORT !== '') serviceOptions.port = env.PRINTFARM_PORT;
if (env.PRINTFARM_LOG_LEVEL) serviceOptions.logLevel = env.PRINTFARM_LOG_LEVEL;

// The embedded service keeps its data in <user dir>/printfarm (the flow's default); its tokens lock the editor too.
const serviceLocked = require('../dist/nodes/server-options').embeddedAccessControl({ env, dataDir: path.join(userDir, 'printfarm') });
const needLogin = login.loginReason({ host: uiHost, serviceLocked });
let password = null;
if (needLogin) {
  try {
    password = login.adminPassword(userDir, env);
  } catch (err) {
    fail(err.message);
  }
}

const settings = {
  userDir,
  ...(password ? { adminAuth: login.adminAuth(password.password) } : {}),
  flowFile: 'flows.json',
  // This repository is itself the node pack (package.json "node-red" section -> dist/nodes).
  nodesDir: [root],
  uiPort,
  uiHost,
  httpAdminRoot: '/',
  httpNodeRoot: '/',
  functionExternalModules: false,
  editorTheme: { projects: { enabled: false }, tours: false },
  // No phoning home (print farms often run on closed networks); the user settings can turn it on.
  telemetry: { enabled: false },
  logging: { console: { level: env.NODE_RED_LOG_LEVEL || 'info', metrics: false, audit: false } },
  printfarmServerOptions: serviceOptions,
};

const server = http.createServer((req, res) => {
  RED.httpAdmin(req, res, () =>
    RED.httpNode(req, res, () => {
      res.statusCode = 404;
      res.end();
    }),
  );
});

RED.init(server, settings);

let stopping = 0;
function stop(signal) {
  if (stopping) {
    // npm and the shell may pass the same Ctrl+C on: only a second one a moment later means "now".
    if (Date.now() - stopping < 1000) return;
    process.stderr.write(`${signal} again: exiting without waiting\n`);
    process.exit(1);
  }
  stopping = Date.now();
  RED.stop()
    .then(() => new Promise((resolve) => server.close(() => resolve())))
    .then(
      () => process.exit(0),
      (err) => {
        process.stderr.write(`stop failed: ${err && err.message}\n`);
        process.exit(1);
      },
    );
  // Keep-alive connections of the editor would hold server.close() open.
  server.closeAllConnections();
}
process.on('SIGINT', () => stop('SIGINT'));
process.on('SIGTERM', () => stop('SIGTERM'));

server.once('error', (err) => fail(err.code === 'EADDRINUSE' ? `port ${uiPort} is in use (set NODE_RED_PORT)` : err.message));
/**
 * RED.start() resolves before the flows are loaded and started (Node-RED does not wait for them), and the
 * dashboard's pages exist only once its nodes have started: under load a click on the banner's link (or a test)
 * got a 404. The banner waits for the flows to start, for the runtime to say they cannot (missing node types),
 * or FLOWS_WAIT_MS at most.
 */
const FLOWS_WAIT_MS = 20_000;
const flowsSettled = new Promise((resolve) => {
  const settle = () => {
    clearTimeout(wait);
    RED.events.off('flows:started', settle);
    RED.events.off('runtime-event', onRuntimeEvent);
    resolve();
  };
  const onRuntimeEvent = (event) => {
    if (event && event.id === 'runtime-state' && event.payload && event.payload.error) settle();
  };
  const wait = setTimeout(settle, FLOWS_WAIT_MS);
  RED.events.on('flows:started', settle);
  RED.events.on('runtime-event', onRuntimeEvent);
});

server.listen(uiPort, uiHost, () => {
  dashboard.shareServiceUrl(RED);
  RED.start().then(() => flowsSettled).then(
    () => {
      const { port } = server.address();
      const shown = uiHost === '0.0.0.0' || uiHost === '::' ? 'localhost' : uiHost;
      const api = serviceOptions.port !== undefined ? `port ${serviceOptions.port}` : 'http://localhost:8000/api/v1 (docs at /docs), as the flow says';
      process.stdout.write(
        `\nNode-RED editor http://${shown}:${port}/\n` +
          (withDashboard ? `Dashboard       http://${shown}:${port}/dashboard\n` : '') +
          `  user dir   ${userDir}\n` +
          (needLogin
            ? `  login      user "${login.USER}", password in ${password.source} (${needLogin})\n`
            : `  login      none: the editor answers on this machine only (NODE_RED_HOST opens it to the network, with a login)\n`) +
          `  Printfarm  ${api}${demo ? ', with simulated demo printers' : ''}\n` +
          `Press Ctrl+C to stop.\n\n`,
      );
    },
    (err) => fail(`Node-RED did not start: ${err.stack || err.message}`),
  );
});
