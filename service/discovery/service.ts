/**
 * Printer discovery: the SSDP listener for Bambu announcements, PrusaLink probes on request, and the list
 * with what is already added. `fromDiscovery` turns an entry into the body of a new printer, so that adding
 * a discovered printer needs only its access code.
 */
import type { Logger } from 'pino';
import type { Store } from '../db';
import { DomainError, notFound } from '../errors';
import type { EventBus } from '../events';
import type { CreatePrinterInput } from '../schemas/printers';
import type { SettingsService } from '../settings';
import { probePrusaLink } from './prusa-probe';
import { DiscoveryRegistry, type DiscoveredPrinter } from './registry';
import { SsdpListener, type SsdpOptions } from './ssdp-listener';
import { expandTargets, TargetError } from './targets';

export interface DiscoveryOptions {
  /** UDP port of the SSDP listener; 0 turns it off ("ephemeral": a free port, for tests). */
  ssdpPort: number | 'ephemeral';
  searchTargets?: SsdpOptions['searchTargets'];
}

export interface DiscoveredView {
  type: DiscoveredPrinter['type'];
  model: string | null;
  name: string | null;
  serial_number: string | null;
  ip_address: string;
  port: number | null;
  source: DiscoveredPrinter['source'];
  first_seen: string;
  last_seen: string;
  added: boolean;
  printer_id: string | null;
  auth_required: boolean;
}

export class DiscoveryService {
  readonly registry: DiscoveryRegistry;
  private readonly ssdp: SsdpListener | null;
  private scanning: AbortController | null = null;

  constructor(
    private readonly store: Store,
    bus: EventBus,
    settings: SettingsService,
    log: Logger,
    options: DiscoveryOptions,
  ) {
    this.registry = new DiscoveryRegistry(bus, () => settings.get('discovery_ttl_s'));
    this.ssdp = options.ssdpPort === 0 ? null : new SsdpListener(this.registry, log, { port: options.ssdpPort === 'ephemeral' ? 0 : options.ssdpPort, searchTargets: options.searchTargets });
  }

  async start(): Promise<void> {
    await this.ssdp?.start();
  }

  /** The UDP port announcements are heard on (null: off or not open). */
  get ssdpPort(): number | null {
    return this.ssdp?.listening ? this.ssdp.port : null;
  }

  async list(): Promise<DiscoveredView[]> {
    const printers = await this.store.printers.list();
    return this.registry.list().map((d) => {
      const match = printers.find((p) =>
        d.serial_number && p.type === 'bambu_lab' ? p.serial_number?.toUpperCase() === d.serial_number : p.type === d.type && p.ip_address === d.ip_address && (p.http_port ?? 80) === (d.ports.http ?? 80),
      );
      return {
        type: d.type,
        model: d.model,
        name: d.name,
        serial_number: d.serial_number,
        ip_address: d.ip_address,
        port: d.ports.http ?? null,
        source: d.source,
        first_seen: d.first_seen,
        last_seen: d.last_seen,
        added: !!match,
        printer_id: match?.id ?? null,
        auth_required: d.auth_required ?? false,
      };
    });
  }

  /** Sends an M-SEARCH and probes `targets` for PrusaLink; answers when the probes ended. */
  async scan(targets: readonly string[]): Promise<{ probed: number; found: number; ssdp_search: boolean }> {
    let expanded;
    try {
      expanded = expandTargets(targets);
    } catch (err) {
      if (err instanceof TargetError) throw new DomainError(422, 'VALIDATION_ERROR', `Invalid body: targets: ${err.message}`, { location: 'body', fields: [{ field: 'targets', message: err.message, code: 'invalid_target' }] });
      throw err;
    }
    if (this.scanning) throw new DomainError(409, 'SCAN_RUNNING', 'A discovery scan is running; try again when it has ended');
    this.ssdp?.search();
    const controller = new AbortController();
    this.scanning = controller;
    try {
      const hits = await probePrusaLink(expanded, controller.signal, (hit) =>
        this.registry.seen({
          type: 'prusa_core',
          model: hit.model,
          name: hit.name,
          serial_number: null,
          ip_address: hit.ip,
          source: 'probe',
          ports: hit.port === 80 ? {} : { http: hit.port },
          firmware_version: hit.firmware_version,
          auth_required: hit.auth_required,
        }),
      );
      return { probed: expanded.length, found: hits.length, ssdp_search: this.ssdp?.listening ?? false };
    } finally {
      this.scanning = null;
    }
  }

  /** The body of a new printer from a discovered one ("<serial>", "<ip>" or "<ip>:<port>"). */
  fromDiscovery(input: { discovered: string; access_code: string; name?: string; id?: string }): CreatePrinterInput {
    const d = this.registry.find(input.discovered);
    if (!d) throw notFound('DISCOVERED_PRINTER_NOT_FOUND', `No discovered printer "${input.discovered}" (GET /api/v1/discovery lists them)`, { discovered: input.discovered });
    const name = input.name ?? d.name ?? [d.model ?? (d.type === 'bambu_lab' ? 'Bambu Lab' : 'Prusa'), d.serial_number?.slice(-4) ?? d.ip_address].join(' ');
    return {
      ...(input.id ? { id: input.id } : {}),
      name,
      type: d.type,
      ...(d.model ? { model: d.model } : {}),
      ip_address: d.ip_address,
      access_code: input.access_code,
      ...(d.serial_number ? { serial_number: d.serial_number } : {}),
      is_active: true,
      ...(d.ports.mqtt ? { mqtt_port: d.ports.mqtt } : {}),
      ...(d.ports.ftps ? { ftps_port: d.ports.ftps } : {}),
      ...(d.ports.http ? { http_port: d.ports.http } : {}),
    };
  }

  async close(): Promise<void> {
    this.scanning?.abort();
    await this.ssdp?.close();
  }
}
