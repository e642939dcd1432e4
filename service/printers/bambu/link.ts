/**
 * The MQTT side of a Bambu link that needs no driver state: the driver's
 * options, the client options (TLS quirks of the printers) and what a client
 * error means.
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { DriverError, type DriverConfig } from '../driver';
import type { ReconnectOptions } from '../reconnects';
import { MAX_PACKET_BYTES } from './limits';
import { printerTlsContext } from './tls-context';
import type { MqttConnectionOptions } from './mqtt-connection';

export function mqttOptions(
  config: DriverConfig,
  serial: string | null,
  port: number,
  timings: { keepaliveSeconds: number },
): MqttConnectionOptions {
  return {
    host: config.ip_address,
    port,
    username: 'bblp',
    password: config.access_code ?? '',
    clientId: `printfarm_${randomBytes(6).toString('hex')}`,
    keepaliveSeconds: timings.keepaliveSeconds,
    maxPacketBytes: MAX_PACKET_BYTES,
    tls: {
      // The printer presents a certificate from Bambu's private "BBL CA" for CN = serial, not
      // the IP; the LAN access code is the authentication, as in Bambu Studio's LAN mode and
      // most third-party clients (PROTOCOLS.md §1). Pinning the CA would need Bambu's bundle.
      rejectUnauthorized: false,
      // TLS 1.2 at most (PROTOCOLS.md §1), in the context all printers share.
      secureContext: printerTlsContext(),
      ...(serial && net.isIP(serial) === 0 ? { servername: serial } : {}),
    },
  };
}

/** A refused access code (CONNACK 4/5) or else the network fault behind a connection error. */
export function mqttErrorOf(err: Error & { code?: unknown }, where: string): DriverError {
  const code = err.code;
  if (code === 4 || code === 5) return new DriverError('AUTH', `access code rejected (MQTT CONNACK ${code})`);
  if (typeof code === 'string' && ['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET', 'ENOTFOUND', 'EPIPE'].includes(code))
    return new DriverError('OFFLINE', `printer unreachable at ${where} (${code})`);
  if (code === 'ETIMEDOUT') return new DriverError('TIMEOUT', `printer at ${where} did not answer (ETIMEDOUT)`);
  return new DriverError('OFFLINE', `MQTT connection to ${where} failed: ${err.message}`);
}

/** The smallest Logger surface the driver uses (pino fits). */
export interface BambuDriverLogger {
  debug(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface BambuDriverOptions extends ReconnectOptions {
  /** How long one connection attempt may take up to the report subscription (ms, default 10 000). */
  connectTimeoutMs?: number;
  /** MQTT keepalive (s, default 30). */
  keepaliveSeconds?: number;
  /** How long a new link's state waits for its first full report (the pushall answer) before its deltas are shown (ms, default 5000). */
  firstReportWaitMs?: number;
  /** FTPS inactivity timeout (ms, default max(command_timeout_ms, 15 000)). */
  ftpTimeoutMs?: number;
  logger?: BambuDriverLogger;
}
