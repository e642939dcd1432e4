/**
 * Simulated Bambu printers announce themselves like real ones: an SSDP NOTIFY every few seconds, here to
 * 127.0.0.1:<port> (the simulators live on this machine; real printers broadcast to 255.255.255.255:2021),
 * with their port overrides so that a discovered simulator can be added like a real printer.
 */
import dgram from 'node:dgram';
import { bambuAnnouncement, modelCodeOf } from '../discovery/bambu-ssdp';

export interface Announced {
  serial_number: string;
  name: string;
  model: string;
  mqtt_port?: number;
  ftps_port?: number;
}

export function startAnnouncer(port: number, printers: readonly Announced[], intervalMs = 5000): { close(): Promise<void> } {
  const socket = dgram.createSocket('udp4');
  socket.on('error', () => undefined);
  const datagrams = printers.map((p) =>
    bambuAnnouncement({ serial: p.serial_number, ip: '127.0.0.1', modelCode: modelCodeOf(p.model), name: p.name, ports: { mqtt: p.mqtt_port, ftps: p.ftps_port } }),
  );
  const announce = () => {
    for (const d of datagrams) socket.send(d, port, '127.0.0.1', () => undefined);
  };
  announce();
  const timer = setInterval(announce, intervalMs);
  timer.unref();
  return {
    close: () => {
      clearInterval(timer);
      return new Promise((resolve) => socket.close(() => resolve()));
    },
  };
}
