/**
 * The simulated printer's broker writes what the printer publishes to its
 * subscribers itself (service/simulators/bambu/mqtt.ts): real MQTT clients
 * (mqtt.js over TLS) subscribe with exact topics and wildcards and must get
 * every payload, whole and in order, at every size of the remaining-length
 * field, and nothing of topics they did not ask for.
 */
import { connect as mqttConnect, type MqttClient } from 'mqtt';
import { BambuSimulator } from '../../service/simulators/bambu';
import { publishPacket, SimMqtt, topicMatches } from '../../service/simulators/bambu/mqtt';

const serial = '01S00C000000042';
const topic = `device/${serial}/report`;
let broker: SimMqtt;
const clients: MqttClient[] = [];

beforeAll(async () => {
  const { key, cert } = await BambuSimulator.tlsCredentials(serial);
  broker = await SimMqtt.start({ key, cert, serial, accessCode: '12345678', onRequest: () => undefined });
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.endAsync(true)));
  await broker.close();
});

/** A client subscribed to `filter` that keeps the payloads it gets. */
async function subscriber(filter: string): Promise<{ client: MqttClient; got: Buffer[] }> {
  const client = mqttConnect({ protocol: 'mqtts', host: '127.0.0.1', port: broker.port, username: 'bblp', password: '12345678', rejectUnauthorized: false, reconnectPeriod: 0 });
  clients.push(client);
  const got: Buffer[] = [];
  client.on('message', (_topic, payload) => got.push(payload));
  await new Promise<void>((resolve, reject) => {
    client.once('connect', () => resolve());
    client.once('error', reject);
  });
  await client.subscribeAsync(filter);
  return { client, got };
}

async function until(what: string, check: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('topic filters: exact, + for one level, # for the rest', () => {
  expect(topicMatches(topic, topic)).toBe(true);
  expect(topicMatches('device/+/report', topic)).toBe(true);
  expect(topicMatches('device/#', topic)).toBe(true);
  expect(topicMatches('#', topic)).toBe(true);
  expect(topicMatches('device/+', topic)).toBe(false);
  expect(topicMatches('device/+/report/x', topic)).toBe(false);
  expect(topicMatches('device/other/report', topic)).toBe(false);
});

test('a PUBLISH packet carries its remaining length in one to four bytes', () => {
  const lengthBytes = (size: number) => {
    const packet = publishPacket('t', Buffer.alloc(size));
    return packet.length - 1 - 3 - size; // fixed header byte, topic length and topic, payload
  };
  expect(lengthBytes(10)).toBe(1);
  expect(lengthBytes(200)).toBe(2);
  expect(lengthBytes(20_000)).toBe(3);
  expect(lengthBytes(3_000_000)).toBe(4);
  expect(publishPacket('t', Buffer.from('x'))[0]).toBe(0x30); // PUBLISH, QoS 0, no retain
});

test('every subscriber whose filter takes the topic gets every payload, whole and in order; others get none', async () => {
  const exact = await subscriber(topic);
  const wildcard = await subscriber('device/+/report');
  const other = await subscriber('device/other/report');
  const payloads = [Buffer.from('{"print":{"a":1}}'), Buffer.alloc(300, 'b'), Buffer.alloc(40_000, 'c'), Buffer.alloc(3_000_000, 'd'), Buffer.from('{"print":{"z":26}}')];
  // Published in one loop turn: each is written as it is published.
  for (const payload of payloads) void broker.publishRaw(topic, payload);
  await until('all payloads at both subscribers', () => exact.got.length === payloads.length && wildcard.got.length === payloads.length);
  for (const { got } of [exact, wildcard]) got.forEach((payload, i) => expect(payload.equals(payloads[i])).toBe(true));
  expect(other.got).toHaveLength(0);

  await exact.client.unsubscribeAsync(topic);
  await broker.publish(topic, { print: { after: true } });
  await until('the wildcard subscriber has it', () => wildcard.got.length === payloads.length + 1);
  expect(JSON.parse(wildcard.got[payloads.length].toString())).toEqual({ print: { after: true } });
  // The unsubscribed client does not get it: it would have come before the wildcard client's copy, and 100 ms more.
  await new Promise((r) => setTimeout(r, 100));
  expect(exact.got).toHaveLength(payloads.length);
});

test('with several subscribers, the one written first turns with each publish (none always comes last)', async () => {
  const first = await subscriber(topic);
  const second = await subscriber(topic);
  const start = first.got.length;
  // Which connection each write went to, in order: the broker's own view (aedes' client.conn).
  const subscribers = (broker as unknown as { subscribers: Map<{ id: string; conn: { write: (b: Buffer) => boolean } }, Set<string>> }).subscribers;
  const order: string[] = [];
  const restore: Array<() => void> = [];
  for (const client of subscribers.keys()) {
    const write = client.conn.write;
    client.conn.write = (b: Buffer) => (order.push(client.id), write.call(client.conn, b));
    restore.push(() => (client.conn.write = write));
  }
  try {
    for (let i = 0; i < 4; i++) void broker.publishRaw(topic, Buffer.from(`{"n":${i}}`));
    await until('four payloads at both', () => first.got.length === start + 4 && second.got.length === start + 4);
  } finally {
    restore.forEach((r) => r());
  }
  // Only these two: the earlier test's wildcard subscriber is still there (three receivers turn alike).
  const ours = new Set([first.client.options.clientId, second.client.options.clientId]);
  const pairs = order.filter((id) => ours.has(id));
  expect(pairs).toHaveLength(8);
  const leads = [pairs[0], pairs[2], pairs[4], pairs[6]];
  expect(new Set(pairs)).toEqual(ours);
  // Of three receivers, the first written moves one along per publish: ours lead each other in turn.
  expect(new Set(leads)).toEqual(ours);
});
