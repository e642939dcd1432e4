/**
 * A hostile "Bambu printer": the simulator's real MQTT-over-TLS broker
 * (aedes behind node:tls, user bblp + access code) that answers pushall with
 * an ordinary idle report and then sends whatever the test wants on the
 * report topic: reports nested thousands deep, floods with invented keys or
 * changing job names, raw bytes.
 */
import { BambuSimulator } from '../../service/simulators/bambu';
import { SimMqtt } from '../../service/simulators/bambu/mqtt';

export interface HostileBambu {
  serial: string;
  accessCode: string;
  /** Body for POST /api/v1/printers. */
  printer: Record<string, unknown>;
  /** How many pushall requests arrived (one per connection). */
  pushalls: number;
  /** Sends a push_status with these fields (merged into `{command:'push_status', msg:1}`). */
  report(fields: Record<string, unknown>): Promise<void>;
  /** Sends bytes as they are on the report topic. */
  raw(payload: Buffer | string): Promise<void>;
  close(): Promise<void>;
}

export const IDLE_REPORT = {
  command: 'push_status',
  msg: 0,
  gcode_state: 'IDLE',
  nozzle_temper: 24,
  bed_temper: 23,
  nozzle_target_temper: 0,
  bed_target_temper: 0,
  mc_percent: 0,
  subtask_name: '',
  gcode_file: '',
  hms: [],
};

export async function startHostileBambu(id: string, serial = '01P00A123456789', onPushall?: (peer: HostileBambu) => void): Promise<HostileBambu> {
  const accessCode = '12345678';
  const { key, cert } = await BambuSimulator.tlsCredentials(serial);
  const topic = `device/${serial}/report`;
  let peer: HostileBambu;
  const mqtt = await SimMqtt.start({
    key,
    cert,
    serial,
    accessCode,
    onRequest: (message) => {
      const pushing = message.pushing as { command?: string } | undefined;
      if (pushing?.command !== 'pushall') return;
      peer.pushalls++;
      void mqtt.publish(topic, { print: IDLE_REPORT }).then(() => onPushall?.(peer));
    },
  });
  peer = {
    serial,
    accessCode,
    pushalls: 0,
    printer: { id, name: `Hostile ${id}`, type: 'bambu_lab', model: 'P1S', ip_address: '127.0.0.1', serial_number: serial, access_code: accessCode, mqtt_port: mqtt.port },
    report: (fields) => mqtt.publish(topic, { print: { command: 'push_status', msg: 1, ...fields } }),
    raw: (payload) => mqtt.publishRaw(topic, payload),
    close: () => mqtt.close(),
  };
  return peer;
}

/** A push_status whose `payload` field nests `depth` objects deep (about 6 bytes per level). */
export function deepReport(depth: number): string {
  return `{"print":{"command":"push_status","msg":1,"payload":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}}`;
}
