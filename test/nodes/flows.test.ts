/**
 * The shipped flows: every example and flow imports cleanly (each pack node
 * carries its editor defaults, references a config node that is there, wires
 * to nodes that exist; every node type has an example); flows/farm.json
 * deploys (the queue node counts the empty queue); flows/home-assistant.json, deployed in a real Node-RED (the
 * `npm start` launcher) against a real MQTT broker (aedes), publishes every
 * printer to Home Assistant by MQTT discovery, a press of its pause
 * button pauses the printer, a rename reaches the device, a removed printer
 * leaves no retained topic behind, and a service that stops answering makes
 * every entity unavailable.
 */
import fs from 'node:fs';
import path from 'node:path';
import mqtt from 'mqtt';
import { PrintfarmClient, type CreatePrinterInput } from '../../service/client';
import { registerEditor } from '../helpers/editor-scripts';
import { useHomeAssistantRig } from '../helpers/ha-rig';
import { collect, control, helper, NODES, SERVICE_OPTIONS, simState, statusOf, tempDir, until, type FlowNode } from '../helpers/node-red';

const root = path.join(__dirname, '..', '..');
const PACK_TYPES = ['printfarm-server', 'printfarm-printer', 'printfarm-job-watcher', 'printfarm-file-download', 'printfarm-gcode-preview', 'printfarm-stats', 'printfarm-queue', 'printfarm-events'];
const readJson = (file: string) => JSON.parse(fs.readFileSync(file, 'utf8')) as FlowNode[];
/** Every flow file the package ships: whatever is in examples/ and flows/ (new ones are checked without listing them here). */
const shipped = ['examples', 'flows'].flatMap((dir) =>
  fs
    .readdirSync(path.join(root, dir))
    .filter((f) => f.endsWith('.json'))
    .map((f) => path.join(dir, f)),
);

/** The defaults each node's editor html declares (from the source html). */
function editorDefaults(type: string): string[] {
  return Object.keys(registerEditor(path.join(root, 'nodes'), type).get(type)!.defaults);
}

describe('examples and flows', () => {
  test.each(shipped)('%s imports cleanly', (file) => {
    const nodes = readJson(path.join(root, file));
    expect(Array.isArray(nodes)).toBe(true);
    const ids = new Set(nodes.map((n) => n.id));
    expect(ids.size).toBe(nodes.length);
    for (const n of nodes) {
      for (const out of n.wires ?? []) for (const target of out) expect(ids.has(target)).toBe(true);
      if (!PACK_TYPES.includes(n.type)) continue;
      expect(Object.keys(n)).toEqual(expect.arrayContaining(editorDefaults(n.type)));
      if (n.type !== 'printfarm-server') expect(nodes.find((c) => c.id === n.server)?.type).toBe('printfarm-server');
    }
    if (file.startsWith('examples')) {
      expect(nodes.some((n) => n.type === 'comment')).toBe(true);
      expect(nodes.every((n) => n.z === undefined)).toBe(true);
    }
  });

  test('no two shipped flows share a node id (an import of one never meets the config node of another)', () => {
    const owner = new Map<string, string>();
    const shared: string[] = [];
    for (const file of shipped) {
      for (const n of readJson(path.join(root, file))) {
        const first = owner.get(n.id);
        if (first && first !== file) shared.push(`${n.id} (${first}, ${file})`);
        owner.set(n.id, first ?? file);
      }
    }
    expect(shipped.length).toBeGreaterThanOrEqual(7);
    expect(shared).toEqual([]);
  });

  test('embedded config nodes of different files use different ports and data dirs; none exposes the service', () => {
    const embedded = shipped.flatMap((file) => readJson(path.join(root, file)).filter((n) => n.type === 'printfarm-server' && n.mode === 'embedded'));
    expect(embedded.length).toBeGreaterThan(1);
    expect(new Set(embedded.map((n) => String(n.port))).size).toBe(embedded.length);
    expect(new Set(embedded.map((n) => String(n.dataDir))).size).toBe(embedded.length);
    expect(embedded.filter((n) => n.expose !== false)).toEqual([]);
  });

  test('every node type of the pack has an example', () => {
    const used = new Set(shipped.filter((f) => f.startsWith('examples')).flatMap((f) => readJson(path.join(root, f)).map((n) => n.type)));
    expect(PACK_TYPES.filter((t) => !used.has(t))).toEqual([]);
  });
});

/** How far a comment reaches left of its x: the editor draws it centred, at about 7 px a character. */
const leftEdge = (n: FlowNode) => (n.x as number) - (30 + 7 * String(n.name).length) / 2;

describe('the editor shows every comment of the shipped flows whole', () => {
  test.each(shipped)('%s: no comment runs off the left edge of the canvas', (file) => {
    const cut = readJson(path.join(root, file)).filter((n) => n.type === 'comment' && n.name && leftEdge(n) < 0);
    expect(cut.map((n) => `${n.id}: ${n.name}`)).toEqual([]);
  });
});

describe('flows/farm.json in Node-RED', () => {
  beforeEach(async () => {
    helper.settings({ printfarmServerOptions: { ...SERVICE_OPTIONS, port: 0, host: '127.0.0.1', dataDir: tempDir(), logLevel: 'silent' } });
    await helper.startServer();
  });
  afterEach(async () => {
    await helper.unload();
    await helper.stopServer();
  });

  test('deploys: the farm connects, every node shows its state, the buttons and the statistics work', async () => {
    /* eslint-disable @typescript-eslint/no-require-imports */
    const core = [require('@node-red/nodes/core/common/20-inject.js'), require('@node-red/nodes/core/common/21-debug.js'), require('@node-red/nodes/core/common/90-comment.js'), require('@node-red/nodes/core/function/rbe.js')];
    /* eslint-enable @typescript-eslint/no-require-imports */
    const flow = readJson(path.join(root, 'flows', 'farm.json'));
    // Watch what the statistics and the printers send.
    const tab = flow[0].id;
    flow.push({ id: 'watch', type: 'helper', z: tab });
    flow.find((n) => n.id === 'pf-stats')!.wires = [['watch']];
    await helper.load([...core, ...NODES], flow);
    // Each node reaches its state on its own (REST answers, the /ws connection): wait for each, not just the first.
    await until(() => statusOf(helper.getNode('pf-all')).text === '0 of 0 printing', 'farm status');
    await until(() => statusOf(helper.getNode('pf-p1')).text === 'unknown printer', 'printer status');
    expect(statusOf(helper.getNode('pf-p1'))).toEqual({ fill: 'red', shape: 'ring', text: 'unknown printer' });
    await until(() => statusOf(helper.getNode('pf-jobs')).text === 'connected', 'job watcher connected');
    expect(statusOf(helper.getNode('pf-jobs'))).toEqual({ fill: 'green', shape: 'dot', text: 'connected' });
    await until(() => statusOf(helper.getNode('pf-downloads')).text === 'idle (0 done, 0 failed)', 'download queue idle');
    await until(() => statusOf(helper.getNode('pf-queue')).text === '0 queued, 0 printing', 'print queue counted');
    const watch = collect(helper.getNode('watch'));
    helper.getNode('pf-i-stats').receive({});
    expect(await watch.next()).toMatchObject({ topic: 'overview', payload: { period: 'day', printers: { total_active: 0 } } });
    // Nothing finished: no "0 % ok", which would read as every print failed.
    expect(statusOf(helper.getNode('pf-stats')).text).toBe('0 jobs, none finished');
  });
});

describe('flows/home-assistant.json in a real Node-RED with a real MQTT broker', () => {
  const rig = useHomeAssistantRig({ bambu: 1 });
  const seen = rig.seen;

  const next = (match: (m: (typeof seen)[number]) => boolean, what: string, ms = 15_000) => until(() => seen.find(match), what, ms);

  test('discovery configs and states arrive on the right topics; the pause button reaches the printer; a rename, a removal and an unreachable service reach Home Assistant', async () => {
    const { farm, svc, port } = rig;
    // Home Assistant's side: a client on the broker that sees everything; the flow as shipped, pointed at this broker and this service.
    const ha = await rig.connectHa();
    await rig.startBridge();
    await next((m) => m.topic === 'printfarm/bridge/availability' && m.payload === 'online', 'the birth message');

    const { printer, control_url } = farm.printers[0];
    const client = new PrintfarmClient(svc.url);
    await client.printers.create(printer as unknown as CreatePrinterInput);
    const sid = printer.id.replace(/[^a-zA-Z0-9_-]/g, '_');
    const config = (component: string, key: string) => next((m) => m.topic === `homeassistant/${component}/printfarm_${sid}/${key}/config`, `${component} ${key} config`);

    const progress = JSON.parse((await config('sensor', 'progress')).payload);
    expect(progress).toMatchObject({
      unique_id: `printfarm_${sid}_progress`,
      name: 'Progress',
      state_topic: `printfarm/${sid}/state`,
      value_template: '{{ value_json.progress }}',
      unit_of_measurement: '%',
      availability_mode: 'all',
      availability: [{ topic: 'printfarm/bridge/availability' }, { topic: 'printfarm/bridge/service' }, { topic: `printfarm/${sid}/availability` }],
      device: { identifiers: [`printfarm_${sid}`], name: printer.name, manufacturer: 'Bambu Lab' },
      origin: { name: 'Printfarm' },
    });
    for (const key of ['nozzle_temperature', 'bed_temperature']) expect(JSON.parse((await config('sensor', key)).payload)).toMatchObject({ device_class: 'temperature', unit_of_measurement: '°C' });
    expect(JSON.parse((await config('sensor', 'remaining_time')).payload)).toMatchObject({ device_class: 'duration', unit_of_measurement: 's' });
    expect(JSON.parse((await config('sensor', 'job_name')).payload)).toMatchObject({ value_template: '{{ value_json.job_name }}' });
    expect(JSON.parse((await config('binary_sensor', 'printing')).payload)).toMatchObject({ state_topic: `printfarm/${sid}/state` });
    for (const key of ['pause', 'resume', 'stop']) {
      const button = await config('button', key);
      expect(JSON.parse(button.payload)).toMatchObject({ command_topic: `printfarm/${sid}/command`, payload_press: key, device: { identifiers: [`printfarm_${sid}`] } });
    }
    // The configs are retained: a Home Assistant that connects later gets them.
    const late = await mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, { clientId: 'late-home-assistant' });
    const retained: string[] = [];
    late.on('message', (topic, _payload, packet) => packet.retain && retained.push(topic));
    await late.subscribeAsync(`homeassistant/+/printfarm_${sid}/+/config`);
    await until(() => retained.length >= 10, 'retained discovery configs');
    await late.endAsync();
    const expectedConfigs = [
      ...['progress', 'nozzle_temperature', 'bed_temperature', 'remaining_time', 'job_name', 'status'].map((k) => `homeassistant/sensor/printfarm_${sid}/${k}/config`),
      `homeassistant/binary_sensor/printfarm_${sid}/printing/config`,
      ...['pause', 'resume', 'stop'].map((k) => `homeassistant/button/printfarm_${sid}/${k}/config`),
    ];
    expect(retained.sort()).toEqual([...expectedConfigs].sort());
    await next((m) => m.topic === `printfarm/${sid}/availability` && m.payload === 'online', 'printer available');
    const idle = await next((m) => m.topic === `printfarm/${sid}/state` && JSON.parse(m.payload).status === 'online', 'idle state');
    expect(JSON.parse(idle.payload)).toMatchObject({ printing: false, nozzle_temperature: expect.any(Number), bed_temperature: expect.any(Number), job_name: '' });

    // A print: the state follows.
    const file = (await simState(control_url)).files.find((f) => /\.3mf$/.test(f))!;
    await control(control_url, 'print', { file });
    const printing = await next((m) => m.topic === `printfarm/${sid}/state` && JSON.parse(m.payload).printing === true && JSON.parse(m.payload).progress > 0, 'printing state');
    expect(JSON.parse(printing.payload)).toMatchObject({ status: 'printing', job_name: expect.any(String), remaining_time: expect.any(Number) });

    // Home Assistant presses "Pause".
    await ha.publishAsync(`printfarm/${sid}/command`, 'pause');
    await until(async () => /pause/i.test((await simState(control_url)).status), 'the simulator paused', 10_000);
    await next((m) => m.topic === `printfarm/${sid}/state` && JSON.parse(m.payload).status === 'paused', 'paused state');

    // Home Assistant restarts: everything is announced again.
    const before = seen.filter((m) => m.topic.endsWith('/progress/config')).length;
    await ha.publishAsync('homeassistant/status', 'online');
    await until(() => seen.filter((m) => m.topic.endsWith('/progress/config')).length > before, 'discovery again');

    // Renamed in the farm: Home Assistant's device gets the new name (the configs go out again).
    await client.printers.update(printer.id, { name: 'Renamed X1C' });
    const renamed = await next((m) => m.topic === `homeassistant/sensor/printfarm_${sid}/progress/config` && m.payload !== '' && JSON.parse(m.payload).device.name === 'Renamed X1C', 'the config under the new name');
    expect(JSON.parse(renamed.payload)).toMatchObject({ unique_id: `printfarm_${sid}_progress`, device: { identifiers: [`printfarm_${sid}`] } });

    // Removed from the farm: an empty retained payload on every topic of it (Home Assistant deletes the
    // entities), and a Home Assistant that connects later finds nothing retained of it.
    await client.printers.remove(printer.id);
    const topics = [...expectedConfigs, `printfarm/${sid}/state`, `printfarm/${sid}/availability`];
    // (A live subscriber sees the retain flag cleared, MQTT 3.1.1: that they are retained shows below.)
    for (const topic of topics) await next((m) => m.topic === topic && m.payload === '', `an empty ${topic}`);
    const after = await mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, { clientId: 'after-removal' });
    const left: string[] = [];
    after.on('message', (topic, payload, packet) => packet.retain && payload.length && left.push(topic));
    await after.subscribeAsync([`homeassistant/+/printfarm_${sid}/+/config`, `printfarm/${sid}/#`]);
    await new Promise((r) => setTimeout(r, 300));
    await after.endAsync();
    expect(left).toEqual([]);

    // The service stops answering: every entity unavailable (their last state is not current any more).
    expect(seen.find((m) => m.topic === 'printfarm/bridge/service')?.payload).toBe('online');
    await svc.close();
    await next((m) => m.topic === 'printfarm/bridge/service' && m.payload === 'offline', 'the service unavailable');

    // Stopping Node-RED says the bridge is gone.
    expect(await rig.nodeRed!.stop()).toBe(0);
    rig.nodeRed = null;
    await next((m) => m.topic === 'printfarm/bridge/availability' && m.payload === 'offline', 'offline on close');
    await control(control_url, 'cancel');
  }, 60_000);
});
