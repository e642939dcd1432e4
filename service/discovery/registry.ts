/**
 * The printers found on the LAN: Bambu printers by their SSDP announcements, PrusaLink printers by a probe.
 * Bounded (MAX_ENTRIES; the longest unseen goes first) and forgetful (an entry unseen for `discovery_ttl_s`
 * is dropped). A `discovery_update` event goes out when a printer is first found or what is known of it
 * changes, never per announcement.
 */
import type { EventBus } from '../events';

export const MAX_ENTRIES = 1024;
/** discovery_update events a second at most: a LAN host inventing printers must not flood /ws (GET /discovery has them all). */
export const MAX_EVENTS_PER_SECOND = 20;

export interface DiscoveredPrinter {
  type: 'bambu_lab' | 'prusa_core';
  model: string | null;
  name: string | null;
  serial_number: string | null;
  ip_address: string;
  source: 'ssdp' | 'probe';
  first_seen: string;
  last_seen: string;
  /** Port overrides the printer needs (a PrusaLink printer found on another port than 80, the simulators). */
  ports: { mqtt?: number; ftps?: number; http?: number };
  /** Bambu: "lan"/"cloud" and "free"/"occupied", when announced. */
  connect?: string | null;
  bind?: string | null;
  firmware_version?: string | null;
  /** PrusaLink: the printer answered 401 with a Digest challenge (a password is needed). */
  auth_required?: boolean;
}

type Found = Omit<DiscoveredPrinter, 'first_seen' | 'last_seen'>;

/** One printer, one entry: Bambu by serial number, PrusaLink by address and port. */
export function entryKey(p: Pick<DiscoveredPrinter, 'type' | 'serial_number' | 'ip_address' | 'ports'>): string {
  return p.type === 'bambu_lab' && p.serial_number ? `bambu:${p.serial_number}` : `${p.type}:${p.ip_address}:${p.ports.http ?? 80}`;
}

/** What makes an update worth an event (not last_seen). */
const shapeOf = (p: DiscoveredPrinter) => JSON.stringify([p.model, p.name, p.ip_address, p.ports, p.connect, p.bind, p.firmware_version, p.auth_required]);

export class DiscoveryRegistry {
  private readonly entries = new Map<string, DiscoveredPrinter>();
  private eventSecond = 0;
  private eventsThisSecond = 0;

  constructor(
    private readonly bus: EventBus,
    private readonly ttlSeconds: () => number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Records a printer seen now. */
  seen(found: Found): DiscoveredPrinter {
    this.expire();
    const key = entryKey(found);
    const at = new Date(this.now()).toISOString();
    const old = this.entries.get(key);
    const entry: DiscoveredPrinter = { ...found, first_seen: old?.first_seen ?? at, last_seen: at };
    // Re-inserted: the map's order is the order of last sight, so the first key is the longest unseen.
    this.entries.delete(key);
    this.entries.set(key, entry);
    while (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as string);
    if ((!old || shapeOf(old) !== shapeOf(entry)) && this.mayAnnounce()) this.bus.emit('discovery_update', { change: old ? 'updated' : 'found', printer: publicView(entry) });
    return entry;
  }

  /** Every printer seen within the TTL, the most recently seen first. */
  list(): DiscoveredPrinter[] {
    this.expire();
    return [...this.entries.values()].reverse();
  }

  /** The entry for a serial number or an IP address (with ":port" for a PrusaLink printer on another port). */
  find(ref: string): DiscoveredPrinter | undefined {
    const wanted = ref.trim();
    const list = this.list();
    return (
      list.find((p) => p.serial_number !== null && p.serial_number.toUpperCase() === wanted.toUpperCase()) ??
      list.find((p) => `${p.ip_address}:${p.ports.http ?? 80}` === wanted) ??
      list.find((p) => p.ip_address === wanted)
    );
  }

  private mayAnnounce(): boolean {
    const second = Math.floor(this.now() / 1000);
    if (second !== this.eventSecond) {
      this.eventSecond = second;
      this.eventsThisSecond = 0;
    }
    return ++this.eventsThisSecond <= MAX_EVENTS_PER_SECOND;
  }

  get size(): number {
    return this.entries.size;
  }

  private expire(): void {
    const oldest = this.now() - this.ttlSeconds() * 1000;
    // In order of last sight: the first entry still fresh ends the sweep.
    for (const [key, entry] of this.entries) {
      if (Date.parse(entry.last_seen) >= oldest) break;
      this.entries.delete(key);
    }
  }
}

/** The entry as events and the API show it. */
export function publicView(p: DiscoveredPrinter): DiscoveredPrinter {
  return { ...p, ports: { ...p.ports } };
}
