'use strict';
/**
 * The farm dashboard flow (Node-RED Dashboard 2.0), built from the sources next to this file:
 * the Vue templates (*.vue), the shared CSS and the function nodes' code (functions/*.js).
 * `node scripts/build-dashboard-flow.js` writes flows/dashboard.json and the example copy
 * (examples/Farm dashboard.json, its own ids and a demo farm); a test checks both are current.
 */
const fs = require('node:fs');
const path = require('node:path');
const { addCameras } = require('./cameras-flow');

/** This pack's node types (one place to change when they are renamed). */
const TYPES = { printer: 'printfarm-printer', jobWatcher: 'printfarm-job-watcher', fileDownload: 'printfarm-file-download', stats: 'printfarm-stats', queue: 'printfarm-queue' };

/** ECharts options on top of the ui-chart widget's own: room for the axis labels, a tooltip per day. */
const CHART_OPTIONS = { grid: { left: 8, right: 16, top: 16, bottom: 8, containLabel: true }, tooltip: { trigger: 'axis' } };
/**
 * The utilisation chart names every printer under its bar: ECharts' automatic interval drew only every
 * other name (every ninth of 60 printers). Slanted, the names of 100 printers fit a full-width chart on a
 * 1920 px screen; a long name is cut short (the tooltip has it whole).
 */
const UTILISATION_OPTIONS = {
  ...CHART_OPTIONS,
  // The first name slants left past its bar: room for it (containLabel leaves it cut).
  grid: { ...CHART_OPTIONS.grid, left: 64 },
  xAxis: { axisLabel: { interval: 0, rotate: 45, hideOverlap: false, fontSize: 11, width: 120, overflow: 'truncate' } },
};

const read = (name) => fs.readFileSync(path.join(__dirname, name), 'utf8').trimEnd();
const code = (name) => read(path.join('functions', name));

const tabInfo = (port) => `The farm dashboard: Node-RED Dashboard 2.0 pages at /dashboard (farm, queue, jobs, statistics, cameras, filament), fed by this pack's nodes.

Needs **@flowfuse/node-red-dashboard** (Dashboard 2.0): install it from the palette manager first.

The browser only talks to Node-RED: requests to the Printfarm service are made here (link "printfarm API"), at \`PRINTFARM_API_URL\` (default http://127.0.0.1:${port}/api/v1, this flow's embedded service; \`npm start\` sets it).`;

/**
 * @param {{ example?: boolean }} [options] example: the copy under examples/ (ids prefixed pfdx-,
 *   an embedded demo farm) instead of flows/dashboard.json (pfd-, the farm flow's settings).
 */
function buildDashboardFlow(options = {}) {
  const p = options.example ? 'pfdx-' : 'pfd-';
  // The example gets a port and data dir of its own (like the pack's other examples); the flow uses the farm flow's.
  const port = options.example ? 8016 : 8000;
  const TAB_INFO = tabInfo(port);
  const id = (name) => p + name;
  const z = id('tab');
  const nodes = [];
  const add = (n) => (nodes.push(n), n);
  const wires = (...outs) => outs.map((o) => (o ? [].concat(o).map(id) : []));
  const fn = (name, label, file, x, y, outs, extra = {}) =>
    add({ id: id(name), type: 'function', z, name: label, func: code(file).replace('http://127.0.0.1:8000/api/v1', `http://127.0.0.1:${port}/api/v1`), outputs: outs.length, timeout: 0, noerr: 0, initialize: '', finalize: '', libs: [], x, y, wires: wires(...outs), ...extra });
  const inline = (name, label, func, x, y, outs) => add({ id: id(name), type: 'function', z, name: label, func, outputs: outs.length, timeout: 0, noerr: 0, initialize: '', finalize: '', libs: [], x, y, wires: wires(...outs) });
  // A comment is drawn centred on x, about 7 px a character: a long one placed too far left ran off the canvas's edge.
  const comment = (name, text, x, y, info = '') => add({ id: id(name), type: 'comment', z, name: text, info, x: Math.max(x, Math.ceil(20 + (30 + 7 * text.length) / 2)), y, wires: [] });
  const inject = (name, label, seconds, x, y, out, topic = '') =>
    add({ id: id(name), type: 'inject', z, name: label, props: [{ p: 'topic', vt: 'str' }], repeat: String(seconds), crontab: '', once: true, onceDelay: '4', topic, x, y, wires: wires(out) });
  const call = (name, x, y, out) => add({ id: id(name), type: 'link call', z, name: 'printfarm API', links: [id('api-in')], linkType: 'static', timeout: '30', x, y, wires: wires(out) });
  const template = (name, label, group, file, x, y, out, extra = {}) =>
    add({ id: id(name), type: 'ui-template', z, group: group ? id(group) : '', page: '', ui: '', name: label, order: 1, width: '0', height: '0', head: '', format: read(file), storeOutMessages: true, passthru: false, resendOnRefresh: true, templateScope: 'local', className: '', x, y, wires: wires(out), ...extra });
  const chart = (name, label, group, chartType, x, y, extra = {}) =>
    add({
      id: id(name), type: 'ui-chart', z, group: id(group), name: label, label: '', order: 1, chartType, category: 'series', categoryType: 'property',
      xAxisLabel: '', xAxisProperty: 'label', xAxisPropertyType: 'property', xAxisType: 'category', xAxisFormat: '', xAxisFormatType: 'auto', xmin: '', xmax: '',
      yAxisLabel: '', yAxisProperty: 'value', yAxisPropertyType: 'property', ymin: '', ymax: '', bins: 10, action: 'replace', stackSeries: false, pointShape: 'circle', pointRadius: 4,
      showLegend: false, removeOlder: 1, removeOlderUnit: '3600', removeOlderPoints: '', colors: ['#0d74ce', '#2e7d32', '#ed6c02', '#9c27b0', '#d32f2f', '#00897b', '#6d4c41', '#546e7a', '#c2185b'],
      textColor: ['#666666'], textColorDefault: true, gridColor: ['rgba(128, 128, 128, 0.22)'], gridColorDefault: false, width: 6, height: 5, className: '', interpolation: 'linear',
      chartOptions: CHART_OPTIONS,
      x, y, wires: [[]], ...extra,
    });

  // ---- Dashboard 2.0 configuration: one UI, a theme, four pages and their groups.
  add({ id: id('ui'), type: 'ui-base', name: 'Print farm', path: '/dashboard', appIcon: '', includeClientData: true, acceptsClientConfig: ['ui-notification', 'ui-control'], showPathInSidebar: false, headerContent: 'page', navigationStyle: 'temporary', titleBarStyle: 'default', showReconnectNotification: true, notificationDisplayTime: 5, showDisconnectNotification: true, allowInstall: false });
  add({ id: id('theme'), type: 'ui-theme', name: 'Print farm', colors: { surface: '#ffffff', primary: '#0d74ce', bgPage: '#f3f4f7', groupBg: '#ffffff', groupOutline: '#e3e5ea' }, sizes: { density: 'default', pagePadding: '16px', groupGap: '16px', groupBorderRadius: '12px', widgetGap: '12px' } });
  const page = (name, label, route, icon, order) => add({ id: id(name), type: 'ui-page', name: label, ui: id('ui'), path: route, icon, layout: 'grid', theme: id('theme'), breakpoints: [{ name: 'Default', px: '0', cols: '3' }, { name: 'Tablet', px: '576', cols: '6' }, { name: 'Small Desktop', px: '768', cols: '9' }, { name: 'Desktop', px: '1024', cols: '12' }], order, className: '', visible: 'true', disabled: 'false' });
  page('page-farm', 'Farm', '/farm', 'printer-3d', 1);
  page('page-queue', 'Queue', '/queue', 'tray-full', 2);
  page('page-jobs', 'Jobs', '/jobs', 'history', 3);
  page('page-stats', 'Statistics', '/statistics', 'chart-bar', 4);
  page('page-filament', 'Filament', '/filament', 'printer-3d-nozzle', 6);
  const group = (name, label, pageName, width, order, showTitle = true) => add({ id: id(name), type: 'ui-group', name: label, page: id(pageName), width: String(width), height: '1', order, showTitle, className: showTitle ? '' : 'pf-bare', visible: 'true', disabled: 'false', groupType: 'default' });
  group('g-farm', 'Printers', 'page-farm', 12, 1, false);
  group('g-queue', 'Queue', 'page-queue', 12, 1, false);
  group('g-jobs-bar', 'Filter', 'page-jobs', 12, 1, false);
  group('g-jobs', 'Job history', 'page-jobs', 12, 2, true);
  group('g-stats', 'Summary', 'page-stats', 12, 1, false);
  group('g-rate', 'Success rate (%)', 'page-stats', 6, 2);
  group('g-hours', 'Print hours', 'page-stats', 6, 3);
  // Full width: the filament chart fills the row the utilisation chart (one bar per printer) needs whole.
  group('g-filament', 'Filament used (kg)', 'page-stats', 12, 4);
  group('g-util', 'Utilisation per printer (%)', 'page-stats', 12, 5);
  group('g-spools', 'Spools', 'page-filament', 12, 1, false);
  add({
    // The example runs a demo service of its own; flows/dashboard.json uses the farm flow's service (as
    // flows/home-assistant.json does; npm start points it at the farm flow's config node instead).
    id: id('server'), type: 'printfarm-server', name: options.example ? 'Printfarm (demo)' : 'Printfarm (farm flow)', mode: options.example ? 'embedded' : 'remote', url: options.example ? '' : `http://127.0.0.1:${port}`, port, host: '127.0.0.1', dataDir: options.example ? 'printfarm-examples/farm-dashboard' : '', demo: !!options.example, logLevel: 'warn', pollInterval: 30, expose: false,
  });

  add({ id: z, type: 'tab', label: 'Farm dashboard', disabled: false, info: TAB_INFO, env: [] });

  // Link nodes between the sections (instead of wires across the whole tab).
  const linkOut = (name, label, targets, x, y) => add({ id: id(name), type: 'link out', z, name: label, mode: 'link', links: targets.map(id), x, y, wires: [] });
  const linkIn = (name, label, sources, x, y, out) => add({ id: id(name), type: 'link in', z, name: label, links: sources.map(id), x, y, wires: wires(out) });

  comment('c-needs', 'Needs Node-RED Dashboard 2.0 (@flowfuse/node-red-dashboard): install it with Manage palette, then open /dashboard', 430, 40, TAB_INFO);

  // ---- Every page: styles, the light/dark switch, notifications.
  template('css', 'styles', null, 'dashboard.css', 130, 90, null, { templateScope: 'site:style', ui: id('ui'), storeOutMessages: false, resendOnRefresh: false });
  template('theme-toggle', 'light/dark switch', null, 'theme-toggle.vue', 310, 90, null, { templateScope: 'widget:ui', ui: id('ui') });
  linkIn('notify-in', 'notify', ['notify-state', 'notify-failure', 'notify-action'], 525, 90, 'notify');
  add({ id: id('notify'), type: 'ui-notification', z, ui: id('ui'), position: 'top right', colorDefault: false, color: '#0d74ce', displayTime: '6', showCountdown: true, outputs: 0, allowDismiss: true, dismissText: 'Close', allowConfirm: false, confirmText: 'Confirm', raw: false, className: '', name: 'notifications', x: 680, y: 90, wires: [] });

  // ---- Farm page.
  comment('c-farm', 'Farm page: live printer cards (printer node + GET /printers), today\'s statistics, thumbnails; the cards\' buttons', 370, 160);
  linkIn('commands-in', 'printer commands', ['commands-out'], 135, 200, 'printers');
  add({ id: id('printers'), type: TYPES.printer, z, name: 'all printers', server: id('server'), printer: '', register: false, printerName: '', printerType: 'bambu_lab', model: '', ipAddress: '', serialNumber: '', mqttPort: '', ftpsPort: '', httpPort: '',
    // Every change, progress at most once a second per printer (the farm state folds them into ≤ 2 boards a second).
    updates: 'changes', throttle: 1, x: 310, y: 200, wires: [[id('farm-state')]] });
  inject('tick-printers', 'every 5 s', 5, 140, 260, 'get-printers');
  linkIn('refresh-printers', 'refresh', ['refresh-out'], 135, 300, 'get-printers');
  inline('get-printers', 'GET /printers', "msg.path = '/printers';\nmsg.kind = 'printers';\nreturn msg;", 320, 260, ['call-printers']);
  call('call-printers', 490, 260, ['printers-out']);
  inline('printers-out', 'share the list', "// The cards, the job filter, the statistics and the queue all need the printer list.\nreturn [msg, { ...msg, topic: 'printers' }];", 670, 260, ['farm-state', 'list-out']);
  linkOut('list-out', 'printer list', ['list-jobs', 'list-stats', 'list-queue', 'list-filament'], 805, 300);
  // The Add printer dialog's list: the printers found on the LAN.
  inject('tick-discovery', 'every 10 s', 10, 140, 440, 'get-discovery');
  linkIn('refresh-discovery', 'refresh', ['refresh-out'], 135, 480, 'get-discovery');
  inline('get-discovery', 'GET /discovery', "msg.path = '/discovery';\nmsg.kind = 'discovery';\nreturn msg;", 320, 440, ['call-discovery']);
  call('call-discovery', 490, 440, ['farm-state']);
  add({ id: id('stats-today'), type: TYPES.stats, z, name: 'today', server: id('server'), scope: 'overview', printer: '', period: 'day', interval: '30', x: 310, y: 340, wires: [[id('today')]] });
  inline('today', 'kind = today', "msg.kind = 'today';\nreturn msg;", 490, 340, ['farm-state']);
  add({ id: id('downloads'), type: TYPES.fileDownload, z, name: 'thumbnails', server: id('server'), printer: '', autoDetectionEnabled: false, thumbnails: true, maxConcurrentDownloads: '2', maxConcurrentThumbnails: '1', retryAttempts: '3', retryDelay: '5000', logRetentionDays: '30', x: 320, y: 400, wires: [[id('file-kind')]] });
  inline('file-kind', 'kind = file', "msg.kind = 'file';\nreturn msg;", 490, 400, ['farm-state']);
  // The Cameras page (cameras-flow.js) shows the same board as a wall of live pictures.
  const cameraWall = addCameras({ id, z, add, fn, template, comment, page, group, TYPES });
  fn('farm-state', 'farm state (≤ 2 boards/s)', 'farm-state.js', 920, 260, [['farm-board', cameraWall], 'notify-state', 'downloads']);
  linkOut('notify-state', 'notify', ['notify-in'], 1105, 300);
  template('farm-board', 'printer cards', 'g-farm', 'farm-board.vue', 1150, 220, 'card-action');
  fn('card-action', 'card button', 'card-action.js', 1340, 220, ['commands-out', 'call-action']);
  linkOut('commands-out', 'printer commands', ['commands-in'], 1485, 200);
  call('call-action', 1510, 260, ['action-result']);
  fn('action-result', 'action result', 'action-result.js', 1690, 260, ['notify-action', 'refresh-out']);
  linkOut('notify-action', 'notify', ['notify-in'], 1835, 240);
  linkOut('refresh-out', 'refresh', ['refresh-printers', 'refresh-queue', 'refresh-discovery', 'refresh-filament'], 1835, 280);

  comment('c-notes', 'Notifications: failed prints, failed downloads, refused commands (offline and plate ones come from farm state)', 410, 470);
  add({ id: id('failures'), type: TYPES.jobWatcher, z, name: 'failed prints', server: id('server'), printer: '', events: ['failed'], throttle: '10', details: true, x: 160, y: 510, wires: [[id('failure-note')]] });
  add({ id: id('catch-nodes'), type: 'catch', z, name: 'downloads, commands', scope: [id('downloads'), id('printers')], uncaught: false, x: 180, y: 550, wires: [[id('failure-note')]] });
  fn('failure-note', 'notification text', 'failure-note.js', 410, 530, ['notify-failure']);
  linkOut('notify-failure', 'notify', ['notify-in'], 555, 530);

  comment('c-thumb', 'Thumbnails for the cards: the service\'s picture, served by Node-RED', 290, 610);
  add({ id: id('thumb-in'), type: 'http in', z, name: '', url: '/printfarm-dashboard/thumbnail/:file_id', method: 'get', upload: false, swaggerDoc: '', x: 240, y: 650, wires: [[id('thumb-req')]] });
  fn('thumb-req', 'thumbnail URL', 'thumbnail-request.js', 510, 650, ['thumb-http', 'thumb-out']);
  // persist false here and below: a kept-alive connection races the service closing it after 5 s idle (ECONNRESET, and the caller waits out its timeout).
  add({ id: id('thumb-http'), type: 'http request', z, name: 'GET thumbnail', method: 'use', ret: 'bin', paytoqs: 'ignore', url: '', tls: '', persist: false, proxy: '', insecureHTTPParser: false, authType: '', senderr: false, headers: [], x: 700, y: 650, wires: [[id('thumb-res')]] });
  fn('thumb-res', 'picture', 'thumbnail-response.js', 870, 650, ['thumb-out']);
  add({ id: id('thumb-out'), type: 'http response', z, name: '', statusCode: '', headers: {}, x: 1030, y: 650, wires: [] });

  // ---- Queue page.
  comment('c-queue', 'Queue page: GET /queue on every queue_update (at most once a second) and every 3 s, the local files to queue from; add, priority, hold, release, cancel', 390, 730);
  inject('tick-queue', 'every 3 s', 3, 140, 770, 'queue-requests');
  // The queue node's output (every queue_update from /ws) refreshes the page at once; a burst of updates
  // (copies starting together) becomes one read a second, the last ones caught by the next tick.
  add({ id: id('queue-updates'), type: TYPES.queue, z, name: 'queue updates', server: id('server'), property: 'payload', propertyType: 'msg', printer: '', copies: 1, priority: 0, x: 150, y: 850, wires: [[id('queue-burst')]] });
  add({ id: id('queue-burst'), type: 'delay', z, name: 'at most 1/s', pauseType: 'rate', timeout: '5', timeoutUnits: 'seconds', rate: '1', nbRateUnits: '1', rateUnits: 'second', randomFirst: '1', randomLast: '5', randomUnits: 'seconds', drop: true, allowrate: false, outputs: 1, x: 320, y: 850, wires: [[id('queue-requests')]] });
  linkIn('refresh-queue', 'refresh', ['refresh-out'], 135, 810, 'queue-requests');
  fn('queue-requests', 'queue reads', 'queue-requests.js', 320, 770, ['call-queue']);
  call('call-queue', 490, 770, ['queue-state']);
  linkIn('list-queue', 'printer list', ['list-out'], 515, 820, 'queue-state');
  fn('queue-state', 'queue state', 'queue-state.js', 670, 790, ['queue-board']);
  template('queue-board', 'queue', 'g-queue', 'queue-board.vue', 850, 790, 'queue-action');
  fn('queue-action', 'queue button', 'queue-action.js', 1030, 790, ['call-queue-action']);
  call('call-queue-action', 1210, 790, ['action-result']);

  // ---- Jobs page.
  comment('c-jobs', 'Jobs page: GET /jobs with the toolbar\'s filter, every 10 s', 260, 890);
  inject('tick-jobs', 'every 10 s', 10, 140, 930, 'jobs-query', 'refresh');
  linkIn('list-jobs', 'printer list', ['list-out'], 135, 970, 'jobs-query');
  fn('jobs-query', 'jobs query', 'jobs-query.js', 320, 950, ['call-jobs']);
  call('call-jobs', 490, 950, ['jobs-rows']);
  fn('jobs-rows', 'rows', 'jobs-rows.js', 650, 950, ['jobs-table', 'jobs-bar']);
  add({ id: id('jobs-table'), type: 'ui-table', z, group: id('g-jobs'), name: 'job history', label: '', order: 1, width: 0, height: 0, maxrows: 0, passthru: false, autocols: true, showSearch: false, deselect: true, selectionType: 'none', columns: [], mobileBreakpoint: 'sm', mobileBreakpointType: 'defaults', action: 'replace', className: '', x: 840, y: 930, wires: [] });
  template('jobs-bar', 'filter and pages', 'g-jobs-bar', 'jobs-toolbar.vue', 850, 990, 'jobs-query');

  // ---- Statistics page.
  comment('c-stats', 'Statistics page: the stats node per day or week, and per printer, every 60 s', 310, 1050);
  inject('tick-stats', 'every 60 s', 60, 140, 1090, 'stats-requests', 'refresh');
  linkIn('list-stats', 'printer list', ['list-out'], 135, 1130, 'stats-requests');
  fn('stats-requests', 'requests', 'stats-requests.js', 310, 1110, ['stats']);
  add({ id: id('stats'), type: TYPES.stats, z, name: 'statistics', server: id('server'), scope: 'overview', printer: '', period: 'week', interval: '', x: 480, y: 1110, wires: [[id('stats-collect')]] });
  add({ id: id('catch-stats'), type: 'catch', z, name: 'statistics errors', scope: [id('stats')], uncaught: false, x: 490, y: 1160, wires: [[id('stats-collect')]] });
  fn('stats-collect', 'collect', 'stats-collect.js', 680, 1110, ['stats-summary', 'chart-rate', 'chart-hours', 'chart-filament', 'chart-util']);
  template('stats-summary', 'summary', 'g-stats', 'stats-summary.vue', 870, 1050, 'stats-requests');
  chart('chart-rate', 'success rate', 'g-rate', 'line', 870, 1090, { ymin: '0', ymax: '100' });
  chart('chart-hours', 'print hours', 'g-hours', 'bar', 870, 1130);
  chart('chart-filament', 'filament', 'g-filament', 'bar', 870, 1170, { colors: ['#ed6c02'], width: 12 });
  chart('chart-util', 'utilisation', 'g-util', 'bar', 870, 1210, { colors: ['#00897b'], ymin: '0', ymax: '100', width: 12, height: 7, chartOptions: UTILISATION_OPTIONS });

  // ---- Filament page.
  comment('c-filament', 'Filament page: GET /spools every 5 s (low ones first), the printers\' slots from the printer list; load a spool into a slot, take it out', 420, 1410);
  inject('tick-spools', 'every 5 s', 5, 140, 1450, 'get-spools');
  linkIn('refresh-filament', 'refresh', ['refresh-out'], 135, 1490, 'get-spools');
  inline('get-spools', 'GET /spools', "msg.path = '/spools?archived=false&limit=100&order_by=remaining_weight_g&order_dir=asc';\nmsg.kind = 'spools';\nreturn msg;", 320, 1450, ['call-spools']);
  call('call-spools', 490, 1450, ['filament-state']);
  linkIn('list-filament', 'printer list', ['list-out'], 515, 1500, 'filament-state');
  fn('filament-state', 'filament state', 'filament-state.js', 680, 1470, ['filament-board']);
  template('filament-board', 'spools', 'g-spools', 'filament-board.vue', 860, 1470, 'filament-action');
  fn('filament-action', 'spool button', 'filament-action.js', 1040, 1470, ['call-filament-action']);
  call('call-filament-action', 1220, 1470, ['action-result']);

  // ---- The service's API, called from the server (link call "printfarm API").
  comment('c-api', 'printfarm API: msg.path, msg.method, msg.payload -> msg.payload, msg.apiError (every answer returns to its caller)', 380, 1270);
  add({ id: id('api-in'), type: 'link in', z, name: 'printfarm API', links: [], x: 135, y: 1310, wires: [[id('api-req')]] });
  fn('api-req', 'request', 'api-request.js', 290, 1310, ['api-http']);
  // persist false: see GET thumbnail.
  add({ id: id('api-http'), type: 'http request', z, name: 'Printfarm service', method: 'use', ret: 'obj', paytoqs: 'ignore', url: '', tls: '', persist: false, proxy: '', insecureHTTPParser: false, authType: '', senderr: false, headers: [], x: 480, y: 1310, wires: [[id('api-res')]] });
  fn('api-res', 'answer', 'api-response.js', 660, 1310, ['api-out']);
  add({ id: id('api-out'), type: 'link out', z, name: 'return', mode: 'return', links: [], x: 795, y: 1310, wires: [] });

  // Examples are imported into the tab the user is on (Node-RED's examples carry no tab of their own).
  if (options.example) return nodes.filter((n) => n.type !== 'tab').map(({ z: _z, ...n }) => n);
  return nodes;
}

module.exports = { buildDashboardFlow, TYPES, UTILISATION_OPTIONS };
