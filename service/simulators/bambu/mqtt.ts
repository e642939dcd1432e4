/**
 * The simulated printer's MQTT broker: aedes behind node:tls (TLS from the
 * first byte, as on port 8883), user `bblp` + the LAN access code, a wrong
 * password refused with CONNACK 5 ("not authorized", as the printer's
 * mosquitto answers). Requests on `device/{serial}/request` go to the
 * printer; the printer publishes on `device/{serial}/report`.
 */
import { Aedes, type AuthenticateError } from 'aedes';
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
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      this.broker.publish({ cmd: 'publish', topic, payload: Buffer.from(JSON.stringify(message)), qos: 0, retain: false, dup: false }, () => resolve());
    });
  }

  /** Publishes bytes as they are (fault injection: broken or hostile reports). */
  publishRaw(topic: string, payload: Buffer | string): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      this.broker.publish({ cmd: 'publish', topic, payload: Buffer.from(payload), qos: 0, retain: false, dup: false }, () => resolve());
    });
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
