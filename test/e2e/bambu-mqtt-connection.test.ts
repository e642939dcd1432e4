/**
 * The service's own MQTT connection (service/printers/bambu/mqtt-connection.ts)
 * against the simulated printer's broker (aedes behind TLS): it connects and
 * subscribes, gets reports, sends a QoS 1 command and learns that it was
 * acknowledged, keeps an idle link up with its pings, notices a broker that
 * stopped answering, hears a refused access code, and ends cleanly.
 */
import type { AddressInfo } from 'node:net';
import tls from 'node:tls';
import { BambuSimulator } from '../../service/simulators/bambu';
import { SimMqtt } from '../../service/simulators/bambu/mqtt';
import { MqttConnection, type MqttConnectionEvents } from '../../service/printers/bambu/mqtt-connection';
import type { Json } from '../../service/printers/bambu/values';

const serial = '01S00C000000077';
let broker: SimMqtt;
let credentials: { key: string; cert: string };
const requests: Json[] = [];
const open: MqttConnection[] = [];

beforeAll(async () => {
  credentials = await BambuSimulator.tlsCredentials(serial);
  const { key, cert } = credentials;
  broker = await SimMqtt.start({ key, cert, serial, accessCode: '12345678', onRequest: (m) => requests.push(m) });
});

afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.end()));
});

afterAll(() => broker.close());

interface Seen {
  connack: number[];
  messages: Array<{ topic: string; text: string }>;
  errors: Array<Error & { code?: unknown }>;
  closed: boolean;
}

function connection(password: string, keepaliveSeconds = 30, port = broker.port): { conn: MqttConnection; seen: Seen } {
  const seen: Seen = { connack: [], messages: [], errors: [], closed: false };
  const events: MqttConnectionEvents = {
    connack: (code) => seen.connack.push(code),
    message: (topic, payload) => seen.messages.push({ topic, text: payload.toString('utf8') }),
    error: (err) => seen.errors.push(err),
    refused: (err) => seen.errors.push(err),
    close: () => (seen.closed = true),
  };
  const conn = new MqttConnection(
    { host: '127.0.0.1', port, clientId: `test_${open.length}`, username: 'bblp', password, keepaliveSeconds, maxPacketBytes: 1024 * 1024, tls: { rejectUnauthorized: false, maxVersion: 'TLSv1.2' } },
    events,
    (fn) => fn,
  );
  open.push(conn);
  return { conn, seen };
}

async function until(what: string, check: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function subscribed(conn: MqttConnection, topic: string): Promise<number[]> {
  return new Promise((resolve, reject) => conn.subscribe(topic, 0, (err, granted) => (err ? reject(err) : resolve(granted ?? []))));
}

test('connects, subscribes, gets reports in order and has a QoS 1 command acknowledged', async () => {
  const { conn, seen } = connection('12345678');
  await until('CONNACK', () => seen.connack.length > 0);
  expect(seen.connack).toEqual([0]);
  expect(await subscribed(conn, `device/${serial}/report`)).toEqual([0]);
  for (let i = 0; i < 5; i++) await broker.publish(`device/${serial}/report`, { print: { seq: i } });
  await until('five reports', () => seen.messages.length === 5);
  expect(seen.messages.map((m) => JSON.parse(m.text).print.seq)).toEqual([0, 1, 2, 3, 4]);
  expect(seen.messages[0].topic).toBe(`device/${serial}/report`);
  const acked = await new Promise<Error | undefined>((resolve) => conn.publish(`device/${serial}/request`, JSON.stringify({ print: { command: 'pause' } }), 1, resolve));
  expect(acked).toBeUndefined();
  await until('the command at the printer', () => requests.some((r) => (r.print as { command?: string })?.command === 'pause'));
  expect(seen.errors).toEqual([]);
});

test('an idle link stays up on its pings, past the broker\'s keepalive deadline', async () => {
  const { conn, seen } = connection('12345678', 1);
  await until('CONNACK', () => seen.connack.length > 0);
  await subscribed(conn, `device/${serial}/report`);
  // The broker drops a client silent for 1.5 keepalive periods; nothing but pings is sent for 3.5 s.
  await new Promise((r) => setTimeout(r, 3500));
  expect(seen.closed).toBe(false);
  await broker.publish(`device/${serial}/report`, { print: { alive: true } });
  await until('a report after the idle time', () => seen.messages.length === 1);
});

test('a broker that stops answering is noticed by its missing PINGRESP', async () => {
  // A hung printer: it accepts the connection and answers CONNACK, then reads on and never writes again.
  const hung = tls.createServer({ key: credentials.key, cert: credentials.cert }, (socket) => {
    socket.once('data', () => socket.write(Buffer.from([0x20, 0x02, 0x00, 0x00])));
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve));
  try {
    const { conn, seen } = connection('12345678', 1, (hung.address() as AddressInfo).port);
    await until('CONNACK', () => seen.connack.length > 0);
    await until('the close', () => seen.closed, 5000);
    expect(seen.errors.map((e) => e.code)).toEqual(['ETIMEDOUT']);
    // Nothing more is sent once closed: a command fails at once.
    const result = await new Promise<Error | undefined>((resolve) => conn.publish(`device/${serial}/request`, '{}', 1, resolve));
    expect(result?.message).toBe('connection closed');
  } finally {
    await new Promise((resolve) => hung.close(resolve));
  }
});

test('a broker that sends and never reads is dropped once 1 MB waits unsent, not buffered without end', async () => {
  // A hostile printer: CONNACK, then it stops reading and floods QoS 1 publishes, each of which the client
  // must answer with a PUBACK that can no longer leave.
  const flood = Buffer.alloc(9 * 10_000);
  for (let i = 0; i < 10_000; i++) flood.set([0x32, 0x07, 0x00, 0x01, 0x74, ((i + 1) >> 8) & 0xff, (i + 1) & 0xff, 0x7b, 0x7d], i * 9);
  const hostile = tls.createServer({ key: credentials.key, cert: credentials.cert }, (socket) => {
    socket.on('error', () => undefined);
    socket.once('data', async () => {
      socket.write(Buffer.from([0x20, 0x02, 0x00, 0x00]));
      socket.pause();
      while (!socket.destroyed && !socket.writableEnded) {
        if (!socket.write(flood)) {
          // Whichever comes first; the other listener goes too (one per round piled up past Node's warning).
          await new Promise<void>((resolve) => {
            const done = () => {
              socket.off('drain', done).off('close', done);
              resolve();
            };
            socket.once('drain', done).once('close', done);
          });
        }
      }
    });
  });
  await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
  try {
    let messages = 0;
    const errors: Error[] = [];
    let closed = false;
    const conn = new MqttConnection(
      { host: '127.0.0.1', port: (hostile.address() as AddressInfo).port, clientId: 'test_flood', username: 'bblp', password: '12345678', keepaliveSeconds: 30, maxPacketBytes: 1024 * 1024, tls: { rejectUnauthorized: false, maxVersion: 'TLSv1.2' } },
      { connack: () => undefined, message: () => messages++, error: (err) => errors.push(err), refused: (err) => errors.push(err), close: () => (closed = true) },
      (fn) => fn,
    );
    open.push(conn);
    await until('the close', () => closed, 30_000);
    expect(errors.map((e) => e.message)).toEqual(['the printer stopped reading (over 1048576 bytes unsent)']);
    // Every message before it was taken: a PUBACK each, over a megabyte of them waiting.
    expect(messages).toBeGreaterThan(1024 * 1024 / 4);
  } finally {
    await new Promise((resolve) => hostile.close(resolve));
  }
});

test('a refused access code is CONNACK 5, then the broker closes', async () => {
  const { seen } = connection('wrong');
  await until('the close', () => seen.closed);
  expect(seen.connack).toEqual([5]);
});

test('end() sends DISCONNECT and the broker lets the client go', async () => {
  const { conn, seen } = connection('12345678');
  await until('CONNACK', () => seen.connack.length > 0);
  await until('the broker counts it', () => broker.connectedClients === 1);
  await conn.end();
  expect(seen.closed).toBe(true);
  await until('the broker lets it go', () => broker.connectedClients === 0);
  expect(seen.errors).toEqual([]);
});
