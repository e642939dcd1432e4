'use strict';
/**
 * The farm dashboard's camera parts (flow.js calls it with its node makers): the Cameras page (a wall
 * of live tiles, fed by the farm state like the farm page) and the routes through which the browser
 * gets the pictures from Node-RED:
 *
 *   GET /printfarm-dashboard/camera/<printer id>/snapshot  one JPEG (the cards, every few seconds)
 *   GET /printfarm-dashboard/camera/<printer id>/stream    the live MJPEG stream (the wall, a card's click)
 *
 * Both go through a printer node (msg.topic "snapshot" / "stream"), i.e. through the pack's client with
 * the server node's address and token.
 */

/**
 * @param {object} m node makers of flow.js: id, z, add, fn, template, comment, page, group, TYPES
 * @returns {string} the id of the camera wall template (the farm state feeds it)
 */
function addCameras(m) {
  const { id, z, add, fn, template, comment, page, group, TYPES } = m;
  page('page-cameras', 'Cameras', '/cameras', 'cctv', 5);
  group('g-cameras', 'Cameras', 'page-cameras', 12, 1, false);
  template('cameras-wall', 'camera wall', 'g-cameras', 'cameras-wall.vue', 1150, 170, null);
  // Styles of the camera pictures on every page (kept apart from dashboard.css).
  template('cameras-css', 'camera styles', null, 'cameras.css', 130, 130, null, { templateScope: 'site:style', ui: id('ui'), storeOutMessages: false, resendOnRefresh: false });

  comment('c-cameras', 'Camera pictures for the cards and the Cameras page: snapshot and live stream through a printer node', 370, 1390);
  add({ id: id('camera-in'), type: 'http in', z, name: '', url: '/printfarm-dashboard/camera/:printer/:kind', method: 'get', upload: false, swaggerDoc: '', x: 250, y: 1430, wires: [[id('camera-req')]] });
  fn('camera-req', 'camera request', 'camera-request.js', 520, 1430, ['camera-relay', 'camera-out']);
  add({ id: id('camera-relay'), type: TYPES.printer, z, name: 'cameras', server: id('server'), printer: '', register: false, printerName: '', printerType: 'bambu_lab', model: '', ipAddress: '', serialNumber: '', mqttPort: '', ftpsPort: '', httpPort: '', updates: 'changes', throttle: 60, x: 700, y: 1430, wires: [[id('camera-res')]] });
  fn('camera-res', 'picture', 'camera-response.js', 860, 1430, ['camera-out']);
  add({ id: id('camera-catch'), type: 'catch', z, name: 'no picture', scope: [id('camera-relay')], uncaught: false, x: 700, y: 1480, wires: [[id('camera-err')]] });
  fn('camera-err', 'camera error', 'camera-error.js', 870, 1480, ['camera-out']);
  add({ id: id('camera-out'), type: 'http response', z, name: '', statusCode: '', headers: {}, x: 1040, y: 1450, wires: [] });
  return 'cameras-wall';
}

module.exports = { addCameras };
