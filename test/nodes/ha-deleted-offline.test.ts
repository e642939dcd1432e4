/**
 * flows/home-assistant.json and a printer deleted while the flow did not run: its removal was never seen live, so
 * its retained discovery configs (a device in Home Assistant) would stay on the broker for ever. On start the flow
 * learns what it published before from the broker's retained configs and which printers exist from the printer
 * node's `list`, and clears the deleted printer's topics (empty retained payloads); the other printer's stay.
 * A real Node-RED (the `npm start` launcher, which loads dist/: build first), a real MQTT broker (aedes), the
 * service and simulated printers.
 */
import mqtt from 'mqtt';
import { PrintfarmClient, type CreatePrinterInput } from '../../service/client';
import { useHomeAssistantRig } from '../helpers/ha-rig';
import { until } from '../helpers/node-red';

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
  const rig = useHomeAssistantRig({ bambu: 2 });

  /** Every retained message under `patterns` now: the patterns' retained messages come in order, a sentinel last. */
  async function retainedNow(port: number, patterns: string[]): Promise<{ topic: string; payload: string }[]> {
    const sentinel = `test/sentinel/${Date.now()}`;
    await rig.ha!.publishAsync(sentinel, 'end', { retain: true, qos: 1 });
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
    await rig.ha!.publishAsync(sentinel, '', { retain: true, qos: 1 });
    return got;
  }

  test('on start, the deleted printer’s retained configs, state and availability are cleared; the other printer’s stay', async () => {
    const { farm, svc, port, seen } = rig;
    await rig.connectHa();
    const client = new PrintfarmClient(svc.url);
    const [gone, kept] = farm.printers.map((p) => p.printer);
    for (const printer of [gone, kept]) await client.printers.create(printer as unknown as CreatePrinterInput);
    const [goneSid, keptSid] = [gone, kept].map((p) => String(p.id).replace(/[^a-zA-Z0-9_-]/g, '_'));

    // The bridge publishes both printers.
    const first = await rig.startBridge();
    for (const topic of [...configTopics(goneSid), ...configTopics(keptSid)]) await until(() => seen.find((m) => m.topic === topic && m.payload !== ''), topic, 15_000);
    expect(await first.stop()).toBe(0);
    rig.nodeRed = null;

    // Deleted while the bridge is down: nobody tells Home Assistant.
    await client.printers.remove(String(gone.id));
    const before = seen.length;

    // The bridge again: it finds the deleted printer's retained topics and clears them.
    await rig.startBridge();
    const cleared = (topic: string) => seen.slice(before).some((m) => m.topic === topic && m.payload === '');
    for (const topic of allTopics(goneSid)) await until(() => cleared(topic), `an empty ${topic}`, 15_000);
    await until(() => seen.slice(before).some((m) => m.topic === `printfarm/${keptSid}/state`), 'the kept printer’s state again', 15_000);

    const left = await retainedNow(port, [`homeassistant/+/printfarm_${goneSid}/+/config`, `printfarm/${goneSid}/#`, `homeassistant/+/printfarm_${keptSid}/+/config`, `printfarm/${keptSid}/#`]);
    expect(left.filter((m) => ofPrinter(goneSid)(m.topic))).toEqual([]);
    expect(left.filter((m) => ofPrinter(keptSid)(m.topic) && m.payload !== '').map((m) => m.topic).sort()).toEqual([...allTopics(keptSid)].sort());
    expect(seen.filter((m) => ofPrinter(keptSid)(m.topic) && m.payload === '')).toEqual([]);
  }, 90_000);
});
