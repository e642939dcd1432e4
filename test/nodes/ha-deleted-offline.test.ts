/**
 * flows/home-assistant.json and a printer deleted while the flow did not run: its removal was never seen live, so
 * its retained discovery configs (a device in Home Assistant) would stay on the broker for ever. On start the flow
 * learns what it published before from the broker's retained configs and which printers exist from the printer
 * node's `list`, and clears the deleted printer's topics (empty retained payloads); the other printer's stay.
 * A real Node-RED (the `npm start` launcher, which loads dist/: build first), a real MQTT broker (aedes), the
 * service and simulated printers.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Aedes } from 'aedes';
import mqtt from 'mqtt';
import { createService, type Service } from '../../service/app';
import { PrintfarmClient, type CreatePrinterInput } from '../../service/client';
import { startFarm, type SimulatedFarm } from '../../service/simulators';
import { startNodeRed, type RunningNodeRed } from '../helpers/launcher';
import { SERVICE_OPTIONS, tempDir, until, type FlowNode } from '../helpers/node-red';

const root = path.join(__dirname, '..', '..');
const ENTITIES = [
  ...['progress', 'nozzle_temperature', 'bed_temperature', 'remaining_time', 'job_name', 'status'].map((k) => `sensor/%/${k}`),
  'binary_sensor/%/printing',
  ...['pause', 'resume', 'stop'].map((k) => `button/%/${k}`),
];
const configTopics = (sid: string) => ENTITIES.map((e) => `homeassistant/${e.replace('%', `printfarm_${sid}`)}/config`);
const allTopics = (sid: string) => [...configTopics(sid), `printfarm/${sid}/state`, `printfarm/${sid}/availability`];
/** Whether a topic is one of a printer's (its configs, or its state and availability). */
const ofPrinter = (sid: string) => (topic: string) => topic.startsWith(`printfarm/${sid}/`) || topic.includes(`/printfarm_${sid}/`);

describe('flows/home-assistant.json: a printer deleted while the flow did not run', () => {
  let farm: SimulatedFarm;
  let svc: Service;
  let broker: Aedes;
  let brokerServer: net.Server;
  let nodeRed: RunningNodeRed | null = null;
  let ha: mqtt.MqttClient | null = null;
  const seen: { topic: string; payload: string }[] = [];

  beforeAll(async () => {
    [farm, svc, broker] = await Promise.all([
      startFarm({ bambu: 2, prusa: 0, speed: 100 }),
      createService({ ...SERVICE_OPTIONS, host: '127.0.0.1', port: 0, dataDir: tempDir(), logLevel: 'silent' }),
      Aedes.createBroker(),
    ]);
    brokerServer = net.createServer(broker.handle);
    await new Promise<void>((r) => brokerServer.listen(0, '127.0.0.1', r));
  }, 30_000);
  afterAll(async () => {
    await nodeRed?.stop();
    await ha?.endAsync();
    await new Promise<void>((r) => broker.close(() => r()));
    await new Promise((r) => brokerServer.close(r));
    await svc?.close();
    await farm?.close();
  });

  /** Every retained message under `patterns` now: the patterns' retained messages come in order, a sentinel last. */
  async function retainedNow(port: number, patterns: string[]): Promise<{ topic: string; payload: string }[]> {
    const sentinel = `test/sentinel/${Date.now()}`;
    await ha!.publishAsync(sentinel, 'end', { retain: true, qos: 1 });
    const reader = await mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, { clientId: `reader-${Date.now()}` });
    const got: { topic: string; payload: string }[] = [];
    let done = false;
    reader.on('message', (topic, payload, packet) => {
      if (topic === sentinel) done = true;
      else if (packet.retain) got.push({ topic, payload: payload.toString() });
    });
    await reader.subscribeAsync([...patterns, sentinel]);
    await until(() => done, 'the retained messages');
    await reader.endAsync();
    await ha!.publishAsync(sentinel, '', { retain: true, qos: 1 });
    return got;
  }

  test('on start, the deleted printer’s retained configs, state and availability are cleared; the other printer’s stay', async () => {
    const { port } = brokerServer.address() as net.AddressInfo;
    ha = await mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, { clientId: 'home-assistant' });
    ha.on('message', (topic, payload) => seen.push({ topic, payload: payload.toString() }));
    await ha.subscribeAsync(['homeassistant/#', 'printfarm/#']);

    const flow = JSON.parse(fs.readFileSync(path.join(root, 'flows', 'home-assistant.json'), 'utf8')) as FlowNode[];
    Object.assign(flow.find((n) => n.type === 'mqtt-broker')!, { broker: '127.0.0.1', port: String(port) });
    Object.assign(flow.find((n) => n.type === 'printfarm-server')!, { mode: 'remote', url: svc.url });
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'ha-flow.json'), JSON.stringify(flow));
    const start = () => startNodeRed({ userDir: path.join(dir, 'user'), flows: path.join(dir, 'ha-flow.json') });

    const client = new PrintfarmClient(svc.url);
    const [gone, kept] = farm.printers.map((p) => p.printer);
    for (const printer of [gone, kept]) await client.printers.create(printer as unknown as CreatePrinterInput);
    const [goneSid, keptSid] = [gone, kept].map((p) => String(p.id).replace(/[^a-zA-Z0-9_-]/g, '_'));

    // The bridge publishes both printers.
    nodeRed = await start();
    for (const topic of [...configTopics(goneSid), ...configTopics(keptSid)]) await until(() => seen.find((m) => m.topic === topic && m.payload !== ''), topic, 15_000);
    expect(await nodeRed.stop()).toBe(0);
    nodeRed = null;

    // Deleted while the bridge is down: nobody tells Home Assistant.
    await client.printers.remove(String(gone.id));
    const before = seen.length;

    // The bridge again: it finds the deleted printer's retained topics and clears them.
    nodeRed = await start();
    const cleared = (topic: string) => seen.slice(before).some((m) => m.topic === topic && m.payload === '');
    for (const topic of allTopics(goneSid)) await until(() => cleared(topic), `an empty ${topic}`, 15_000);
    await until(() => seen.slice(before).some((m) => m.topic === `printfarm/${keptSid}/state`), 'the kept printer’s state again', 15_000);

    const left = await retainedNow(port, [`homeassistant/+/printfarm_${goneSid}/+/config`, `printfarm/${goneSid}/#`, `homeassistant/+/printfarm_${keptSid}/+/config`, `printfarm/${keptSid}/#`]);
    expect(left.filter((m) => ofPrinter(goneSid)(m.topic))).toEqual([]);
    expect(left.filter((m) => ofPrinter(keptSid)(m.topic) && m.payload !== '').map((m) => m.topic).sort()).toEqual([...allTopics(keptSid)].sort());
    expect(seen.filter((m) => ofPrinter(keptSid)(m.topic) && m.payload === '')).toEqual([]);
  }, 90_000);
});
