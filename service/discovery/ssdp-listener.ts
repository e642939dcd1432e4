/**
 * Listens on UDP (default port 2021, where Bambu Lab printers broadcast their announcements) and records
 * every well-formed announcement; anything else is dropped and counted. The socket is shared with other
 * programs on the port (Bambu Studio listens there too); a port nobody can share is logged and skipped,
 * never fatal. `search()` sends an M-SEARCH so printers answer now.
 */
import dgram from 'node:dgram';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { bambuSearch, parseBambuAnnouncement, type BambuAnnouncement } from './bambu-ssdp';
import type { DiscoveryRegistry } from './registry';

export interface SsdpOptions {
  /** UDP port; 0 picks a free one (tests). */
  port: number;
  /** Where M-SEARCH goes (default: the LAN broadcast on 2021 and the SSDP multicast group on 1990). */
  searchTargets?: Array<{ address: string; port: number }>;
}

const DEFAULT_TARGETS = [
  { address: '255.255.255.255', port: 2021 },
  { address: '239.255.255.250', port: 1990 },
];

export class SsdpListener {
  private socket: dgram.Socket | null = null;
  /** Datagrams that were not a Bambu announcement. */
  ignored = 0;
  port = 0;

  constructor(
    private readonly registry: DiscoveryRegistry,
    private readonly log: Logger,
    private readonly options: SsdpOptions,
  ) {}

  /** Binds the port; resolves either way (a failure is logged: discovery by announcement is then off). */
  async start(): Promise<void> {
    const socket = dgram.createSocket({ type: 'udp4', reuseAddr: true });
    socket.on('message', (msg, rinfo) => this.take(msg, rinfo.address));
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('error', reject);
        socket.bind(this.options.port, () => {
          socket.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      socket.close();
      this.log.warn({ err, port: this.options.port }, 'printer discovery: the SSDP port cannot be opened; Bambu printers are not discovered by their announcements (DISCOVERY_SSDP_PORT)');
      return;
    }
    socket.on('error', (err) => this.log.warn({ err }, 'printer discovery: SSDP socket error'));
    try {
      socket.setBroadcast(true);
    } catch {
      // Broadcast only matters for M-SEARCH.
    }
    this.socket = socket;
    this.port = (socket.address() as AddressInfo).port;
  }

  get listening(): boolean {
    return this.socket !== null;
  }

  /** Asks the printers on the LAN to answer now. */
  search(): void {
    const socket = this.socket;
    if (!socket) return;
    const message = bambuSearch();
    for (const target of this.options.searchTargets ?? DEFAULT_TARGETS) {
      socket.send(message, target.port, target.address, (err) => {
        if (err) this.log.debug({ err, target: target.address }, 'printer discovery: M-SEARCH not sent');
      });
    }
  }

  async close(): Promise<void> {
    const socket = this.socket;
    this.socket = null;
    if (socket) await new Promise<void>((resolve) => socket.close(() => resolve()));
  }

  private take(datagram: Buffer, from: string): void {
    let found: BambuAnnouncement | null = null;
    try {
      found = parseBambuAnnouncement(datagram);
    } catch {
      found = null;
    }
    if (!found) {
      this.ignored++;
      return;
    }
    // The announcing address is the printer; a Location pointing elsewhere is taken only from loopback (simulators).
    const loopback = from.startsWith('127.');
    const ip = from === found.ip_address || loopback ? found.ip_address : from;
    this.registry.seen({
      type: 'bambu_lab',
      model: found.model,
      name: found.name,
      serial_number: found.serial_number,
      ip_address: ip,
      source: 'ssdp',
      // Port overrides are a simulator's (on this machine); a LAN host does not get to redirect the connection.
      ports: loopback ? found.ports : {},
      connect: found.connect,
      bind: found.bind,
      firmware_version: found.version,
    });
  }
}
