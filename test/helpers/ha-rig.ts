/**
 * What the Home Assistant flow tests run against: simulated Bambu printers, the service, a real MQTT broker
 * (aedes) and Home Assistant's side, a client on the broker that records every message under homeassistant/#
 * and printfarm/#. The flow is the shipped flows/home-assistant.json, pointed at this broker and service, in
 * a real Node-RED (the `npm start` launcher, which loads dist/: build first). Everything is closed after the
 * file's tests.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Aedes } from 'aedes';
import mqtt from 'mqtt';
import { createService, type Service } from '../../service/app';
import { startFarm, type SimulatedFarm } from '../../service/simulators';
import { startNodeRed, type RunningNodeRed } from './launcher';
import { SERVICE_OPTIONS, tempDir, type FlowNode } from './node-red';

export interface HaMessage {
  topic: string;
  payload: string;
  retain: boolean;
}

export interface HomeAssistantRig {
  farm: SimulatedFarm;
  svc: Service;
  /** The broker's port on 127.0.0.1. */
  port: number;
  /** Every message Home Assistant's client got, oldest first. */
  seen: HaMessage[];
  /** Home Assistant's client, once connectHa() ran. */
  ha: mqtt.MqttClient | null;
  /** The Node-RED running the flow, if any (stopped after the tests). */
  nodeRed: RunningNodeRed | null;
  /** Connects Home Assistant's client and subscribes it to everything the flow publishes. */
  connectHa(): Promise<mqtt.MqttClient>;
  /** Starts a Node-RED with the shipped flow (the same user dir each time: a restart of the same bridge). */
  startBridge(): Promise<RunningNodeRed>;
}

const root = path.join(__dirname, '..', '..');

export function useHomeAssistantRig(printers: { bambu: number }): HomeAssistantRig {
  let broker: Aedes;
  let brokerServer: net.Server;
  let flowDir: string | null = null;
  const rig = { seen: [] as HaMessage[], ha: null, nodeRed: null } as unknown as HomeAssistantRig;

  rig.connectHa = async () => {
    const ha = await mqtt.connectAsync(`mqtt://127.0.0.1:${rig.port}`, { clientId: 'home-assistant' });
    ha.on('message', (topic, payload, packet) => rig.seen.push({ topic, payload: payload.toString(), retain: packet.retain }));
    await ha.subscribeAsync(['homeassistant/#', 'printfarm/#']);
    return (rig.ha = ha);
  };

  rig.startBridge = async () => {
    if (!flowDir) {
      const flow = JSON.parse(fs.readFileSync(path.join(root, 'flows', 'home-assistant.json'), 'utf8')) as FlowNode[];
      Object.assign(flow.find((n) => n.type === 'mqtt-broker')!, { broker: '127.0.0.1', port: String(rig.port) });
      Object.assign(flow.find((n) => n.type === 'printfarm-server')!, { mode: 'remote', url: rig.svc.url });
      flowDir = tempDir();
      fs.writeFileSync(path.join(flowDir, 'ha-flow.json'), JSON.stringify(flow));
    }
    return (rig.nodeRed = await startNodeRed({ userDir: path.join(flowDir, 'user'), flows: path.join(flowDir, 'ha-flow.json') }));
  };

  beforeAll(async () => {
    [rig.farm, rig.svc, broker] = await Promise.all([
      startFarm({ bambu: printers.bambu, prusa: 0, speed: 100 }),
      createService({ ...SERVICE_OPTIONS, host: '127.0.0.1', port: 0, dataDir: tempDir(), logLevel: 'silent' }),
      Aedes.createBroker(),
    ]);
    brokerServer = net.createServer(broker.handle);
    await new Promise<void>((r) => brokerServer.listen(0, '127.0.0.1', r));
    rig.port = (brokerServer.address() as net.AddressInfo).port;
  }, 30_000);

  afterAll(async () => {
    await rig.nodeRed?.stop();
    await rig.ha?.endAsync();
    await new Promise<void>((r) => broker.close(() => r()));
    await new Promise((r) => brokerServer.close(r));
    await rig.svc?.close();
    await rig.farm?.close();
  });

  return rig;
}
