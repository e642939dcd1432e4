/**
 * The service's own MQTT 3.1.1 packets, checked against mqtt-packet (the
 * parser and generator of mqtt.js and aedes): what the service writes parses
 * there to the fields meant, and what a broker writes there is framed here to
 * the same packets, whole or cut anywhere. Oversized and foreign packets are
 * refused by their header, before they are buffered.
 */
import { createHash } from 'node:crypto';
import mqttPacket from 'mqtt-packet';
import {
  connectPacket,
  DISCONNECT,
  MqttProtocolError,
  PacketReader,
  PINGREQ,
  pubackPacket,
  publishPacket,
  subscribePacket,
  type InboundPacket,
} from '../../service/printers/bambu/mqtt-packets';

function parseThere(bytes: Buffer): mqttPacket.Packet[] {
  const parser = mqttPacket.parser({ protocolVersion: 4 });
  const out: mqttPacket.Packet[] = [];
  const errors: Error[] = [];
  parser.on('packet', (p) => out.push(p));
  parser.on('error', (e) => errors.push(e));
  parser.parse(bytes);
  expect(errors).toEqual([]);
  return out;
}

/** A packet with its payload as a digest (jest compares a 2 MB Buffer byte by byte, slowly). */
const comparable = (p: InboundPacket) => ('payload' in p ? { ...p, payload: createHash('sha1').update(p.payload).digest('hex') } : p);

function readHere(bytes: Buffer, cut: number[] = [], max = 4 * 1024 * 1024): object[] {
  const reader = new PacketReader(max);
  const out: object[] = [];
  let from = 0;
  for (const at of [...cut, bytes.length]) {
    reader.feed(bytes.subarray(from, at), (p) => out.push(comparable(p)));
    from = at;
  }
  return out;
}

describe('the packets the service writes', () => {
  it('CONNECT, SUBSCRIBE, PUBLISH at QoS 0 and 1, PUBACK, PINGREQ and DISCONNECT parse as meant', () => {
    const body = 'x'.repeat(70_000);
    const packets = parseThere(
      Buffer.concat([
        connectPacket({ clientId: 'printfarm_ab12', username: 'bblp', password: '12345678', keepaliveSeconds: 30 }),
        subscribePacket(7, 'device/01S00A/report', 0),
        publishPacket('device/01S00A/request', Buffer.from('{"pushing":{}}'), 0, 0),
        publishPacket('device/01S00A/request', Buffer.from(body), 1, 65535),
        pubackPacket(300),
        PINGREQ,
        DISCONNECT,
      ]),
    );
    expect(packets.map((p) => p.cmd)).toEqual(['connect', 'subscribe', 'publish', 'publish', 'puback', 'pingreq', 'disconnect']);
    expect(packets[0]).toMatchObject({ protocolId: 'MQTT', protocolVersion: 4, clean: true, keepalive: 30, clientId: 'printfarm_ab12', username: 'bblp' });
    expect(String((packets[0] as mqttPacket.IConnectPacket).password)).toBe('12345678');
    expect(packets[1]).toMatchObject({ messageId: 7, subscriptions: [{ topic: 'device/01S00A/report', qos: 0 }] });
    expect(packets[2]).toMatchObject({ topic: 'device/01S00A/request', qos: 0 });
    expect(String((packets[2] as mqttPacket.IPublishPacket).payload)).toBe('{"pushing":{}}');
    expect(packets[3]).toMatchObject({ qos: 1, messageId: 65535 });
    expect(String((packets[3] as mqttPacket.IPublishPacket).payload)).toBe(body);
    expect(packets[4]).toMatchObject({ messageId: 300 });
  });
});

describe('PacketReader', () => {
  const payloadOf = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => 97 + (i % 26)));
  // Remaining lengths that take 1, 2, 3 and 4 bytes.
  const sizes = [0, 100, 200, 20_000, 2_100_000];
  const stream = Buffer.concat([
    mqttPacket.generate({ cmd: 'connack', returnCode: 0, sessionPresent: false }),
    ...sizes.map((n, i) => mqttPacket.generate({ cmd: 'publish', topic: `device/S${i}/report`, payload: payloadOf(n), qos: 0, dup: false, retain: false })),
    mqttPacket.generate({ cmd: 'publish', topic: 'device/S/report', payload: Buffer.from('{"a":1}'), qos: 1, messageId: 513, dup: false, retain: false }),
    mqttPacket.generate({ cmd: 'suback', messageId: 1, granted: [0, 128] }),
    mqttPacket.generate({ cmd: 'puback', messageId: 42 }),
    mqttPacket.generate({ cmd: 'pingresp' }),
  ]);
  const expected = ([
    { type: 'connack', returnCode: 0 },
    ...sizes.map((n, i): InboundPacket => ({ type: 'publish', topic: `device/S${i}/report`, payload: payloadOf(n), qos: 0, id: 0 })),
    { type: 'publish', topic: 'device/S/report', payload: Buffer.from('{"a":1}'), qos: 1, id: 513 },
    { type: 'suback', id: 1, granted: [0, 128] },
    { type: 'puback', id: 42 },
    { type: 'pingresp' },
  ] as InboundPacket[]).map(comparable);

  it('frames what a broker writes, in one chunk', () => {
    expect(readHere(stream)).toEqual(expected);
  });

  it('frames the same packets however the bytes are cut (inside headers, lengths and bodies)', () => {
    expect(readHere(stream, [1, 2, 3, 5, 6, 7, 300, 301, 302, 20_500, 20_501, 2_000_000, stream.length - 3])).toEqual(expected);
    const steps: number[] = [];
    for (let at = 997; at < stream.length; at += 997) steps.push(at);
    expect(readHere(stream, steps)).toEqual(expected);
    const small = stream.subarray(0, 400);
    const everyByte = Array.from({ length: small.length - 1 }, (_, i) => i + 1);
    expect(readHere(small, everyByte)).toEqual(readHere(small));
  });

  it('refuses a packet by its declared length before its body arrives, across chunk boundaries', () => {
    const reader = new PacketReader(1000);
    const seen: InboundPacket[] = [];
    const small = mqttPacket.generate({ cmd: 'publish', topic: 't', payload: Buffer.alloc(900), qos: 0, dup: false, retain: false });
    for (let i = 0; i < small.length; i += 7) reader.feed(small.subarray(i, i + 7), (p) => seen.push(p));
    expect(seen).toHaveLength(1);
    reader.feed(Buffer.from([0x30]), (p) => seen.push(p));
    reader.feed(Buffer.from([0x80, 0x80, 0x80]), (p) => seen.push(p));
    let refused: unknown = null;
    try {
      reader.feed(Buffer.from([0x01]), (p) => seen.push(p));
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(MqttProtocolError);
    expect((refused as MqttProtocolError).oversizeBytes).toBe(5 + 2 ** 21);
    expect((refused as Error).message).toBe(`an MQTT packet of ${5 + 2 ** 21} bytes (limit 1000)`);
  });

  it.each([
    ['a length field of five bytes', Buffer.from([0x30, 0xff, 0xff, 0xff, 0xff, 0x01])],
    ['a CONNECT, which a broker never sends', mqttPacket.generate({ cmd: 'connect', clientId: 'x', protocolId: 'MQTT', protocolVersion: 4 })],
    ['a publish whose topic runs past the packet', Buffer.from([0x30, 0x03, 0x00, 0x09, 0x61])],
    ['a CONNACK without its return code', Buffer.from([0x20, 0x01, 0x00])],
  ])('refuses %s', (_name, bytes) => {
    expect(() => readHere(bytes)).toThrow(MqttProtocolError);
  });

  it('random bytes either frame as packets or are refused as MqttProtocolError, nothing else', () => {
    // A seeded generator: the same bytes on every run.
    let seed = 0x2f6b1d;
    const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
    let refused = 0;
    for (let round = 0; round < 3000; round++) {
      const bytes = Buffer.from(Array.from({ length: 1 + (next() % 64) }, () => next() & 0xff));
      const reader = new PacketReader(1024);
      try {
        for (let at = 0; at < bytes.length; ) {
          const step = 1 + (next() % 8);
          reader.feed(bytes.subarray(at, at + step), () => undefined);
          at += step;
        }
      } catch (err) {
        expect(err).toBeInstanceOf(MqttProtocolError);
        refused++;
      }
    }
    expect(refused).toBeGreaterThan(0);
  });
});
