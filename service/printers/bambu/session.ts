/**
 * One MQTT session with a Bambu printer: the client of one connection attempt
 * and, once the printer accepted it, the link it becomes (PROTOCOLS.md §1).
 *
 * The session owns everything tied to that one client (mqtt-connection.ts):
 * the connect deadline, the report subscription and the report watchdog. It
 * tells the driver what happened through `events`; the driver decides about
 * link state, backoff and retries. After end() a session reports nothing
 * more, so late events of an old client can never touch a newer link.
 */
import { DriverError } from '../driver';
import { mqttErrorOf } from './link';
import { MqttConnection, type MqttConnectionOptions } from './mqtt-connection';
import type { Guard } from '../guard';

export interface SessionEvents {
  /** CONNACK and SUBACK received: reports will flow. */
  up(): void;
  message(topic: string, payload: Buffer): void;
  /** The attempt failed before the link was up, or the printer refused the access code. */
  failed(err: DriverError): void;
  /** The link that was up closed (`message` says why). */
  lost(message: string): void;
  /** No report arrived within the watchdog period while the link was up. */
  silent(seconds: number): void;
  /** The printer sent something hostile (an oversized packet). */
  fault(reason: string): void;
}

export interface SessionParams {
  /** host:port, for messages. */
  where: string;
  /** The report topic to subscribe to (`device/{serial}/report`, or `+` while the serial is unknown). */
  reportTopic: string;
  connectTimeoutMs: number;
  watchdogMs: number;
  /** Wraps every network and timer callback (the driver's fault guard). */
  guard: Guard;
  events: SessionEvents;
}

export class BambuSession {
  private readonly client: MqttConnection;
  private ended = false;
  private linkUp = false;
  private connectTimer: NodeJS.Timeout | null = null;
  private watchdog: NodeJS.Timeout | null = null;
  private lastMessageAt = 0;

  constructor(options: MqttConnectionOptions, private readonly p: SessionParams) {
    const { guard, events, where } = p;
    let lastError: DriverError | null = null;
    // The error is made when it happens: made up front, it and its stack stayed in this closure for the session's life.
    const timedOut = () => this.fail(new DriverError('TIMEOUT', `no MQTT answer from ${where} within ${Math.round(p.connectTimeoutMs / 1000)} s`));
    this.connectTimer = setTimeout(guard(timedOut), p.connectTimeoutMs);
    this.client = new MqttConnection(
      options,
      {
        connack: (returnCode) => {
          if (returnCode === 0) this.onConnack();
          else if (!this.ended) this.fail(mqttErrorOf(Object.assign(new Error(`CONNACK ${returnCode}`), { code: returnCode }), where));
        },
        message: (topic, payload) => this.onMessage(topic, payload),
        error: (err) => {
          if (!this.ended) lastError = mqttErrorOf(err, where);
        },
        refused: (err) => {
          if (!this.ended) events.fault(`the printer sent ${err.message}`);
        },
        close: () => {
          if (this.ended) return;
          if (this.linkUp) events.lost(lastError?.message ?? 'connection lost');
          else this.fail(lastError ?? new DriverError('OFFLINE', `connection to ${where} closed before the printer accepted it`));
        },
      },
      guard,
    );
  }

  /** CONNACK and SUBACK received, and not ended since. */
  get up(): boolean {
    return this.linkUp && !this.ended;
  }

  publish(topic: string, body: string, qos: 0 | 1, sent?: (err?: Error) => void): void {
    this.client.publish(topic, body, qos, sent);
  }

  /** Ends the client and every timer; no event is reported after this. */
  end(): Promise<void> {
    this.ended = true;
    this.linkUp = false;
    this.clearConnectTimer();
    if (this.watchdog) clearTimeout(this.watchdog);
    this.watchdog = null;
    return this.client.end();
  }

  private fail(err: DriverError): void {
    if (!this.ended) this.p.events.failed(err);
  }

  private onConnack(): void {
    if (this.ended) return;
    const { reportTopic: topic, guard } = this.p;
    this.client.subscribe(topic, 0, guard((err: Error | null, granted?: number[]) => {
      if (this.ended) return;
      if (err || !granted || granted.some((code) => code === 0x80)) {
        this.fail(new DriverError('PROTOCOL', `the printer refused the subscription to ${topic}`));
        return;
      }
      this.clearConnectTimer();
      this.linkUp = true;
      this.lastMessageAt = Date.now();
      this.watchdog = setTimeout(guard(() => this.onWatchdog()), watchdogLookMs(this.p.watchdogMs));
      this.p.events.up();
    }));
  }

  private onMessage(topic: string, payload: Buffer): void {
    if (this.ended) return;
    // The watchdog is not re-armed per message (that costs a timer-list insert per report): it looks at the last
    // message's time when it fires.
    this.lastMessageAt = Date.now();
    this.p.events.message(topic, payload);
  }

  private onWatchdog(): void {
    if (this.ended || !this.linkUp || !this.watchdog) return;
    const quietMs = Date.now() - this.lastMessageAt;
    if (quietMs < this.p.watchdogMs) {
      // The same timer again, for the same period: no new timer, and every printer's in one timer list (a new
      // delay for each printer made a timer and a timer list per printer, kept for the watchdog period).
      this.watchdog.refresh();
      return;
    }
    this.p.events.silent(Math.round(quietMs / 1000));
  }

  private clearConnectTimer(): void {
    if (this.connectTimer) clearTimeout(this.connectTimer);
    this.connectTimer = null;
  }
}

/**
 * How often the report watchdog looks: a quarter of its period, so a silence is seen between watchdogMs and a
 * quarter later.
 */
export function watchdogLookMs(watchdogMs: number): number {
  return Math.max(1, Math.ceil(watchdogMs / 4));
}
