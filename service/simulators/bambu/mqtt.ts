/**
 * The simulated printer's MQTT broker: aedes behind node:tls (TLS from the
 * first byte, as on port 8883), user `bblp` + the LAN access code, a wrong
 * password refused with CONNACK 5 ("not authorized", as the printer's
 * mosquitto answers). Requests on `device/{serial}/request` go to the
 * printer; the printer publishes on `device/{serial}/report`.
 *
 * What the printer publishes is written to its subscribers at once, as the
 * printer's broker does. aedes would hold every QoS 0 delivery until the
 * event loop's next check phase (setImmediate); in a process that simulates
 * many printers, all reports of one timer pass then left together, at its
 * end: a burst no farm of separate printers sends.
 */
import { Aedes, type AuthenticateError, type Client } from 'aedes';
import type tls from 'node:tls';
import { GatedTlsListener, StallGate, type LinkMode } from './gate';
import type { Json } from './printer';

export interface SimMqttOptions {
  key: string;
  cert: string;
  serial: string;
  accessCode: string;
  /** A message a client published on the request topic (already parsed; invalid JSON is dropped like the printer does). */
  onRequest: (message: Json) => void;
}

export class SimMqtt {
  readonly stats = { connections: 0, auth_failures: 0 };
  private readonly gates = new Set<StallGate>();
  private mode: LinkMode = 'online';
  private closed = false;
  /** Who subscribed to what (topic filters, as granted). */
  private readonly subscribers = new Map<Client, Set<string>>();
  /** Messages published to more than one subscriber (which of them is written first turns with it). */
  private published = 0;

  private constructor(
    private readonly broker: Aedes,
    private readonly listener: GatedTlsListener,
  ) {}

  static async start(options: SimMqttOptions): Promise<SimMqtt> {
    const requestTopic = `device/${options.serial}/request`;
    let sim: SimMqtt | null = null;
    const broker = await Aedes.createBroker({
      heartbeatInterval: 60_000,
      authenticate: (_client, username, password, done) => {
        if (username === 'bblp' && password !== undefined && password.toString('utf8') === options.accessCode) {
          if (sim) sim.stats.connections++;
          done(null, true);
          return;
        }
        if (sim) sim.stats.auth_failures++;
        const err = new Error('Not authorized') as AuthenticateError;
        (err as { returnCode: number }).returnCode = 5;
        done(err, null);
      },
    });
    broker.on('publish', (packet, client) => {
      if (!client || packet.topic !== requestTopic) return;
      let message: unknown;
      try {
        message = JSON.parse(packet.payload.toString());
      } catch {
        return;
      }
      if (typeof message === 'object' && message !== null && !Array.isArray(message)) options.onRequest(message as Json);
    });
    const listener = new GatedTlsListener({ key: options.key, cert: options.cert }, (socket: tls.TLSSocket) => {
      const owner = sim;
      if (!owner || owner.closed) {
        socket.destroy();
        return;
      }
      socket.on('error', () => undefined);
      const gate = new StallGate(socket, owner.mode === 'stalled');
      gate.on('error', () => undefined);
      owner.gates.add(gate);
      gate.once('close', () => owner.gates.delete(gate));
      broker.handle(gate);
    });
    sim = new SimMqtt(broker, listener);
    const subscribers = sim.subscribers;
    broker.on('subscribe', (subscriptions, client) => {
      let filters = subscribers.get(client);
      if (!filters) subscribers.set(client, (filters = new Set()));
      // 128: refused (aedes sets the granted QoS here).
      for (const s of subscriptions) if ((s.qos as number) !== 128) filters.add(s.topic);
    });
    broker.on('unsubscribe', (topics, client) => topics.forEach((topic) => subscribers.get(client)?.delete(topic)));
    broker.on('clientDisconnect', (client) => subscribers.delete(client));
    await listener.listen(0);
    return sim;
  }

  get port(): number {
    return this.listener.port;
  }

  get connectedClients(): number {
    return this.gates.size;
  }

  publish(topic: string, message: Json): Promise<void> {
    return this.publishRaw(topic, JSON.stringify(message));
  }

  /**
   * Publishes bytes as they are (fault injection: broken or hostile reports). QoS 0: written now, to every
   * subscriber. With several subscribers, each publish starts one further along the list: whoever is written
   * first gets the message a write earlier, and no subscriber (bench/fleet's service and its baseline, both
   * subscribed to every printer) is always the one written last.
   */
  publishRaw(topic: string, payload: Buffer | string): Promise<void> {
    if (this.closed) return Promise.resolve();
    let packet: Buffer | null = null;
    const receivers: Client[] = [];
    for (const [client, filters] of this.subscribers) {
      if (client.closed) {
        this.subscribers.delete(client);
        continue;
      }
      if (client.connected && takes(filters, topic)) receivers.push(client);
    }
    const first = receivers.length > 1 ? this.published++ % receivers.length : 0;
    for (let i = 0; i < receivers.length; i++) {
      packet ??= publishPacket(topic, Buffer.from(payload));
      // A stalled link holds it (StallGate), as a printer's socket buffer would.
      receivers[(first + i) % receivers.length].conn.write(packet);
    }
    return Promise.resolve();
  }

  async setMode(mode: LinkMode): Promise<void> {
    this.mode = mode;
    for (const gate of this.gates) gate.setStalled(mode === 'stalled');
    await this.listener.setMode(mode);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const gate of this.gates) gate.destroy();
    await this.listener.close();
    await new Promise<void>((resolve) => this.broker.close(() => resolve()));
  }
}

/** Whether any of a subscriber's filters takes `topic`. */
function takes(filters: Set<string>, topic: string): boolean {
  for (const filter of filters) if (topicMatches(filter, topic)) return true;
  return false;
}

/** Whether an MQTT topic filter (`+` one level, `#` the rest) takes `topic`. */
export function topicMatches(filter: string, topic: string): boolean {
  if (filter === topic) return true;
  const want = filter.split('/');
  const levels = topic.split('/');
  for (let i = 0; i < want.length; i++) {
    if (want[i] === '#') return true;
    if (i >= levels.length || (want[i] !== '+' && want[i] !== levels[i])) return false;
  }
  return want.length === levels.length;
}

/** A QoS 0 PUBLISH packet (MQTT 3.1.1, section 3.3): fixed header, remaining length, topic, payload. */
export function publishPacket(topic: string, payload: Buffer): Buffer {
  const name = Buffer.from(topic, 'utf8');
  let remaining = 2 + name.length + payload.length;
  const header = [0x30];
  do {
    const digit = remaining % 128;
    remaining = Math.floor(remaining / 128);
    header.push(remaining > 0 ? digit | 0x80 : digit);
  } while (remaining > 0);
  return Buffer.concat([Buffer.from(header), Buffer.from([name.length >> 8, name.length & 0xff]), name, payload]);
}
