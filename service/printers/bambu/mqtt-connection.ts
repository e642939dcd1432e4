/**
 * One MQTT 3.1.1 client connection over TLS to a printer's broker: CONNECT,
 * SUBSCRIBE, PUBLISH (QoS 0 and 1, both ways), keepalive and DISCONNECT,
 * nothing else (no reconnect, no store, no will: the session and the driver
 * decide what happens after a close). Packets: mqtt-packets.ts.
 *
 * Every socket and timer callback runs through `guard`, so nothing a printer
 * sends can throw into the process; a packet the reader refuses closes the
 * connection after `events.refused`.
 */
import tls from 'node:tls';
import { settledWithin } from '../../util/time';
import { connectPacket, DISCONNECT, MqttProtocolError, PacketReader, PINGREQ, pubackPacket, publishPacket, subscribePacket, type InboundPacket } from './mqtt-packets';
import type { Guard } from '../guard';

/** How long end() waits for the socket's close after DISCONNECT before it destroys it. */
const END_WAIT_MS = 1000;
/**
 * Most bytes left unsent before the broker counts as not reading: what the service writes is small (commands,
 * pings, and a PUBACK per QoS 1 message), so a broker that sends and never reads cannot make it buffer without end.
 */
const MAX_UNSENT_BYTES = 1024 * 1024;

export interface MqttConnectionOptions {
  host: string;
  port: number;
  clientId: string;
  username: string;
  password: string;
  keepaliveSeconds: number;
  /** Largest packet accepted, header included (bytes). */
  maxPacketBytes: number;
  /** TLS options of the printer's quirks (link.ts). */
  tls: Pick<tls.ConnectionOptions, 'rejectUnauthorized' | 'maxVersion' | 'servername' | 'secureContext'>;
}

export interface MqttConnectionEvents {
  /** CONNACK: 0 accepted, else the broker's refusal (4 bad user name or password, 5 not authorised). */
  connack(returnCode: number): void;
  message(topic: string, payload: Buffer): void;
  /** A socket error, no PINGRESP within a keepalive period (code ETIMEDOUT) or a broker that stopped reading; a close follows. */
  error(err: Error & { code?: unknown }): void;
  /** The broker sent a packet over the size limit or one that is not MQTT; the connection is closed. */
  refused(err: MqttProtocolError): void;
  close(): void;
}

export class MqttConnection {
  private readonly socket: tls.TLSSocket;
  private readonly reader: PacketReader;
  private readonly acks = new Map<number, (err?: Error) => void>();
  private readonly subscriptions = new Map<number, (err: Error | null, granted?: number[]) => void>();
  private nextId = 0;
  private keepalive: NodeJS.Timeout | null = null;
  private awaitingPong = false;
  private closed = false;

  constructor(
    private readonly o: MqttConnectionOptions,
    private readonly events: MqttConnectionEvents,
    private readonly guard: Guard,
  ) {
    this.reader = new PacketReader(o.maxPacketBytes);
    const socket = tls.connect({ host: o.host, port: o.port, ...o.tls });
    this.socket = socket;
    socket.setNoDelay(true);
    socket.on('secureConnect', guard(() => socket.write(connectPacket(o))));
    socket.on('data', guard((chunk: Buffer) => this.onData(chunk)));
    socket.on('error', guard((err: Error) => events.error(err)));
    socket.on('close', guard(() => this.onClose()));
  }

  subscribe(topic: string, qos: 0 | 1, done: (err: Error | null, granted?: number[]) => void): void {
    const id = this.packetId();
    this.subscriptions.set(id, done);
    this.write(subscribePacket(id, topic, qos));
  }

  /** QoS 0: `sent` when written; QoS 1: when the broker acknowledged it. Either way with an error if the connection closed first. */
  publish(topic: string, body: string, qos: 0 | 1, sent?: (err?: Error) => void): void {
    if (this.closed) {
      sent?.(new Error('connection closed'));
      return;
    }
    const id = qos > 0 ? this.packetId() : 0;
    if (qos > 0 && sent) this.acks.set(id, sent);
    this.write(publishPacket(topic, Buffer.from(body, 'utf8'), qos, id), qos === 0 ? sent : undefined);
  }

  /** DISCONNECT, then the socket's close (bounded: a broker that never closes is destroyed). */
  end(): Promise<void> {
    const closed = new Promise<void>((resolve) => {
      if (this.closed || this.socket.destroyed) return resolve();
      this.socket.once('close', () => resolve());
      if (this.socket.writable && !this.socket.connecting) this.socket.end(DISCONNECT);
      else this.socket.destroy();
    });
    return settledWithin(closed, END_WAIT_MS).then(() => {
      this.socket.destroy();
    });
  }

  private onData(chunk: Buffer): void {
    if (this.closed) return;
    this.awaitingPong = false;
    try {
      this.reader.feed(chunk, (p) => this.onPacket(p));
    } catch (err) {
      if (!(err instanceof MqttProtocolError)) throw err;
      this.closed = true;
      this.socket.destroy();
      this.events.refused(err);
    }
  }

  private onPacket(p: InboundPacket): void {
    if (this.closed) return;
    switch (p.type) {
      case 'publish':
        if (p.qos === 1) this.write(pubackPacket(p.id));
        this.events.message(p.topic, p.payload);
        return;
      case 'connack':
        if (p.returnCode === 0) this.startKeepalive();
        this.events.connack(p.returnCode);
        return;
      case 'suback': {
        const done = this.subscriptions.get(p.id);
        this.subscriptions.delete(p.id);
        done?.(null, p.granted);
        return;
      }
      case 'puback': {
        const sent = this.acks.get(p.id);
        this.acks.delete(p.id);
        sent?.();
        return;
      }
      default:
        return; // pingresp (awaitingPong is cleared by any data), unsuback
    }
  }

  /** One timer per connection, not re-armed per packet: every period a PINGREQ, and no answer to the last one means the link is dead. */
  private startKeepalive(): void {
    if (this.keepalive || this.o.keepaliveSeconds <= 0) return;
    this.keepalive = setInterval(this.guard(() => {
      if (this.awaitingPong) {
        this.events.error(Object.assign(new Error('keepalive timeout: no PINGRESP'), { code: 'ETIMEDOUT' }));
        this.socket.destroy();
        return;
      }
      this.awaitingPong = true;
      this.write(PINGREQ);
    }), this.o.keepaliveSeconds * 1000);
  }

  private onClose(): void {
    this.closed = true;
    if (this.keepalive) clearInterval(this.keepalive);
    this.keepalive = null;
    const lost = new Error('connection closed');
    for (const sent of this.acks.values()) sent(lost);
    for (const done of this.subscriptions.values()) done(lost);
    this.acks.clear();
    this.subscriptions.clear();
    this.events.close();
  }

  private write(bytes: Buffer, written?: (err?: Error) => void): void {
    if (this.closed || !this.socket.writable) {
      written?.(new Error('connection closed'));
      return;
    }
    if (this.socket.writableLength > MAX_UNSENT_BYTES) {
      written?.(new Error('connection closed'));
      this.events.error(new Error(`the printer stopped reading (over ${MAX_UNSENT_BYTES} bytes unsent)`));
      this.socket.destroy();
      return;
    }
    this.socket.write(bytes, written ? (err?: Error | null) => written(err ?? undefined) : undefined);
  }

  /** Packet ids 1..65535, in turn (0 is not a valid id). */
  private packetId(): number {
    this.nextId = (this.nextId % 0xffff) + 1;
    return this.nextId;
  }
}
