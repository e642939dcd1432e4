/**
 * The MQTT 3.1.1 packets a Bambu client sends and reads (OASIS MQTT 3.1.1
 * §2-§3), and a reader that frames them from a byte stream.
 *
 * Why the service speaks MQTT itself: a printer link needs five packet types
 * out (CONNECT, SUBSCRIBE, PUBLISH, PUBACK, PINGREQ, DISCONNECT) and six in,
 * and a general client paid for its generality on every report: a stream
 * pipeline, a packet store, a keepalive timer re-armed per packet and
 * debug-log calls that allocate even when logging is off (bench/fleet: about
 * a quarter of the service's allocations per report). The reader refuses an
 * oversized packet by its header, before it is buffered, and hands a publish's
 * payload on without copying when the packet arrived in one chunk.
 */

export class MqttProtocolError extends Error {
  /** Set when the packet was refused for its declared size (bytes, header included). */
  constructor(
    message: string,
    readonly oversizeBytes?: number,
  ) {
    super(message);
  }
}

export type InboundPacket =
  | { type: 'connack'; returnCode: number }
  | { type: 'publish'; topic: string; payload: Buffer; qos: number; id: number }
  | { type: 'puback'; id: number }
  | { type: 'suback'; id: number; granted: number[] }
  | { type: 'unsuback' | 'pingresp' };

export const PINGREQ = Buffer.from([0xc0, 0x00]);
export const DISCONNECT = Buffer.from([0xe0, 0x00]);

function lengthBytes(length: number): number[] {
  const out: number[] = [];
  do {
    let byte = length % 128;
    length = Math.floor(length / 128);
    if (length > 0) byte |= 0x80;
    out.push(byte);
  } while (length > 0);
  return out;
}

/** A packet of the given first byte and body parts (a string part is written with its 2-byte length, as MQTT strings are). */
function packet(first: number, parts: Array<Buffer | string | number[]>): Buffer {
  const encoded = parts.map((part) => {
    if (typeof part !== 'string') return Buffer.isBuffer(part) ? part : Buffer.from(part);
    const text = Buffer.from(part, 'utf8');
    if (text.length > 0xffff) throw new RangeError('an MQTT string is at most 65535 bytes');
    return Buffer.concat([Buffer.from([text.length >> 8, text.length & 0xff]), text]);
  });
  const bodyLength = encoded.reduce((sum, part) => sum + part.length, 0);
  return Buffer.concat([Buffer.from([first, ...lengthBytes(bodyLength)]), ...encoded]);
}

const u16 = (n: number): number[] => [(n >> 8) & 0xff, n & 0xff];

export function connectPacket(o: { clientId: string; username: string; password: string; keepaliveSeconds: number }): Buffer {
  // Protocol name "MQTT", level 4 (3.1.1), flags: user name, password, clean session.
  return packet(0x10, ['MQTT', [4, 0xc2, ...u16(o.keepaliveSeconds)], o.clientId, o.username, o.password]);
}

export function subscribePacket(id: number, topic: string, qos: number): Buffer {
  return packet(0x82, [u16(id), topic, [qos]]);
}

export function publishPacket(topic: string, payload: Buffer, qos: 0 | 1, id: number): Buffer {
  return packet(0x30 | (qos << 1), qos > 0 ? [topic, u16(id), payload] : [topic, payload]);
}

export function pubackPacket(id: number): Buffer {
  return Buffer.from([0x40, 0x02, ...u16(id)]);
}

/**
 * Frames packets from the bytes of one connection. feed() calls `onPacket`
 * for every complete packet and throws MqttProtocolError for a packet over
 * the limit or one a broker never sends; after a throw the connection is done.
 */
export class PacketReader {
  /** An incomplete fixed header carried to the next chunk (at most 4 bytes). */
  private head: Buffer | null = null;
  /** The packet being assembled across chunks, allocated at its declared size. */
  private partial: Buffer | null = null;
  private filled = 0;
  private partialHeader = 0;

  constructor(private readonly maxBytes: number) {}

  feed(chunk: Buffer, onPacket: (packet: InboundPacket) => void): void {
    if (this.head) {
      chunk = Buffer.concat([this.head, chunk]);
      this.head = null;
    }
    let at = 0;
    while (at < chunk.length) {
      if (this.partial) {
        const n = Math.min(this.partial.length - this.filled, chunk.length - at);
        chunk.copy(this.partial, this.filled, at, at + n);
        this.filled += n;
        at += n;
        if (this.filled < this.partial.length) return;
        const whole = this.partial;
        this.partial = null;
        onPacket(decode(whole, this.partialHeader));
        continue;
      }
      // Fixed header: the type byte, then 1 to 4 bytes of remaining length.
      let length = 0;
      let multiplier = 1;
      let i = at + 1;
      for (; ; i++) {
        if (i >= chunk.length) {
          this.head = Buffer.from(chunk.subarray(at));
          return;
        }
        if (i - at > 4) throw new MqttProtocolError('an MQTT length field longer than 4 bytes');
        length += (chunk[i] & 0x7f) * multiplier;
        multiplier *= 128;
        if ((chunk[i] & 0x80) === 0) break;
      }
      const headerLength = i + 1 - at;
      const total = headerLength + length;
      if (total > this.maxBytes) throw new MqttProtocolError(`an MQTT packet of ${total} bytes (limit ${this.maxBytes})`, total);
      if (at + total <= chunk.length) {
        onPacket(decode(chunk.subarray(at, at + total), headerLength));
        at += total;
        continue;
      }
      this.partial = Buffer.allocUnsafe(total);
      this.partialHeader = headerLength;
      this.filled = chunk.copy(this.partial, 0, at);
      return;
    }
  }
}

function decode(p: Buffer, at: number): InboundPacket {
  const type = p[0] >> 4;
  const end = p.length;
  const need = (n: number) => {
    if (at + n > end) throw new MqttProtocolError(`a truncated MQTT packet (type ${type})`);
  };
  switch (type) {
    case 2:
      need(2);
      return { type: 'connack', returnCode: p[at + 1] };
    case 3: {
      const qos = (p[0] >> 1) & 3;
      need(2);
      const topicEnd = at + 2 + p.readUInt16BE(at);
      need(topicEnd - at + (qos > 0 ? 2 : 0));
      const topic = p.toString('utf8', at + 2, topicEnd);
      const id = qos > 0 ? p.readUInt16BE(topicEnd) : 0;
      return { type: 'publish', topic, qos, id, payload: p.subarray(qos > 0 ? topicEnd + 2 : topicEnd, end) };
    }
    case 4:
      need(2);
      return { type: 'puback', id: p.readUInt16BE(at) };
    case 9:
      need(3);
      return { type: 'suback', id: p.readUInt16BE(at), granted: [...p.subarray(at + 2, end)] };
    case 11:
      return { type: 'unsuback' };
    case 13:
      return { type: 'pingresp' };
    default:
      throw new MqttProtocolError(`an MQTT packet of type ${type}, which a broker does not send`);
  }
}
