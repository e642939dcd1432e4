/**
 * The printer configurations and their views: create, change, delete, and
 * the list/detail shapes of the API (stored configuration + the live state
 * the drivers report + the job on the printer).
 */
import { DomainError, conflict, notFound } from '../errors';
import { isUniqueViolation } from '../db/connection';
import type { AttentionEntry } from '../attention/book';
import type { Store } from '../db';
import type { PrinterRecord } from '../db/repositories/printers';
import type { JobRecord } from '../db/repositories/jobs';
import type { EventBus } from '../events';
import { isPrintOf } from '../monitoring/print-identity';
import type { StatusCache } from '../monitoring/status-cache';
import type { CreatePrinterInput, PrinterDetailView, PrinterView, UpdatePrinterInput } from '../schemas/printers';
import { creationIso, nowIso } from '../util/time';
import { capabilitiesOf } from './capabilities';
import type { PrinterMaterial, PrinterState } from './driver';
import { isHost } from './host';
import { isMaskedForm, maskCameraUrl } from '../cameras/camera-url';
import type { CameraView } from '../cameras/hub';

/** What the registry needs of the fleet: keep drivers in line with the configuration, and what printers reported. */
export interface FleetView {
  sync(printerId: string): Promise<void>;
  stateOf(printerId: string): PrinterState | undefined;
}

/** What the printers need from a person (the attention book). */
export interface AttentionView {
  of(printerId: string): AttentionEntry[];
}

/** Changing one of these reconnects the printer (and tests the connection again). */
const CONNECTION_FIELDS = ['ip_address', 'access_code', 'serial_number', 'mqtt_port', 'ftps_port', 'http_port', 'auth_method'] as const;

export class PrinterRegistry {
  constructor(
    private readonly store: Store,
    private readonly cache: StatusCache,
    private readonly bus: EventBus,
    private readonly fleet: FleetView,
    /** `camera` of the views (the camera hub); without it, no printer shows a camera. */
    private readonly cameras?: { viewOf(record: PrinterRecord): CameraView },
    private readonly attention: AttentionView = { of: () => [] },
    /** Adds the spool of each slot (filament tracking); without it the slots show no spool. */
    private readonly spoolsOf: (printerId: string, materials: readonly PrinterMaterial[]) => PrinterView['materials'] = (_id, ms) =>
      ms.map((m) => ({ slot: m.slot, type: m.type, color: m.color, remaining_percent: m.remaining_percent, spool_id: null, remaining_weight_g: null })),
  ) {}

  async list(filter: { active?: boolean; type?: string }) {
    const [records, counts] = await Promise.all([this.store.printers.list(filter), this.store.printers.counts()]);
    const jobs = await this.store.jobs.activeByPrinter(records.map((r) => r.id));
    return {
      printers: records.map((r) => this.view(r, this.currentJob(r, jobs.get(r.id) ?? []))),
      total_count: counts.total,
      active_count: counts.active,
    };
  }

  async detail(id: string): Promise<PrinterDetailView> {
    const record = await this.require(id);
    const [jobs, statistics] = await Promise.all([this.store.jobs.activeByPrinter([id]), this.store.jobs.printerTotals(id)]);
    const job = this.currentJob(record, jobs.get(id) ?? []);
    const base = this.view(record, job);
    const live = this.cache.get(id);
    return {
      ...base,
      access_code: record.access_code,
      firmware_version: record.firmware_version,
      status_message: record.status_message,
      temperatures: { ...base.temperatures, nozzle_target: live.temperatures.nozzle_target, bed_target: live.temperatures.bed_target },
      current_job:
        base.current_job && job
          ? {
              ...base.current_job,
              layer_current: live.layer_current ?? job.layer_current,
              layer_total: live.layer_total ?? job.layer_total,
              started_at: job.start_time,
            }
          : null,
      statistics,
      capabilities: this.fleet.stateOf(id)?.capabilities ?? capabilitiesOf(record.type, record.model),
      updated_at: record.updated_at,
      mqtt_port: record.mqtt_port,
      ftps_port: record.ftps_port,
      http_port: record.http_port,
      power_watts: record.power_watts,
      auth_method: record.auth_method as PrinterDetailView['auth_method'],
      camera_port: record.camera_port ?? null,
      camera_url: maskCameraUrl(record.camera_url ?? null),
    };
  }

  async create(input: CreatePrinterInput) {
    this.checkConfig(input.type, input);
    let id = input.id ?? (await this.freeId(input.name));
    const now = creationIso();
    const record: PrinterRecord = {
      id,
      name: input.name,
      type: input.type,
      model: input.model ?? null,
      ip_address: input.ip_address,
      serial_number: input.serial_number ?? null,
      access_code: input.access_code ?? null,
      is_active: input.is_active,
      // A new printer is "configuring" while its connection test runs; an inactive one is not contacted.
      status: input.is_active ? 'configuring' : 'offline',
      connection_status: input.is_active ? 'testing' : 'disconnected',
      status_message: null,
      firmware_version: null,
      last_seen: null,
      created_at: now,
      updated_at: now,
      mqtt_port: input.mqtt_port ?? null,
      ftps_port: input.ftps_port ?? null,
      http_port: input.http_port ?? null,
      power_watts: input.power_watts ?? null,
      plate_state: 'clear',
      plate_auto_clear: input.plate_auto_clear ?? false,
      auth_method: input.auth_method ?? null,
      camera_port: input.camera_port ?? null,
      camera_url: input.camera_url || null,
    };
    for (;;) {
      try {
        await this.store.printers.insert(record);
        break;
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
        // An id made from the name, taken by a printer added since it was found free: the next free one (the
        // caller asked for no id). The same id again means it was not the id that clashed.
        const next = input.id === undefined ? await this.freeId(input.name) : id;
        if (next === id) throw conflict('PRINTER_EXISTS', `A printer with id "${id}" already exists`, { printer_id: id });
        id = record.id = next;
      }
    }
    await this.store.statusHistory.record(id, record.status, record.connection_status, now);
    this.publish(record, 'created');
    await this.fleet.sync(id);
    return {
      id,
      name: record.name,
      type: record.type,
      status: record.status,
      connection_status: record.connection_status,
      message: record.is_active ? 'Printer created; connection test started' : 'Printer created (inactive)',
      created_at: now,
    };
  }

  async update(id: string, input: UpdatePrinterInput) {
    const current = await this.require(id);
    this.checkConfig(current.type, { ...current, ...input });
    const now = nowIso();
    const patch: Partial<PrinterRecord> = { ...input, updated_at: now };
    // A camera URL written back as it was shown (masked) keeps the stored one; empty removes it.
    if (input.camera_url !== undefined) {
      if (input.camera_url !== null && isMaskedForm(input.camera_url, current.camera_url ?? null)) delete patch.camera_url;
      else patch.camera_url = input.camera_url || null;
    }
    const deactivated = { status: 'offline', connection_status: 'disconnected', status_message: 'deactivated' } as const;
    if (input.is_active === false) Object.assign(patch, deactivated);
    const linkChanged = CONNECTION_FIELDS.some((k) => input[k] !== undefined && input[k] !== current[k]);
    const reconnect = (input.is_active === true && !current.is_active) || (current.is_active && input.is_active !== false && linkChanged);
    // Removed since it was read: nothing is recorded or announced for a printer that no longer exists.
    if (!(await this.store.printers.update(id, patch))) throw this.gone(id);
    // "Testing" only while still active: a deactivation since the read above must not leave it configuring for ever.
    const testing = { status: 'configuring', connection_status: 'testing', status_message: null } as const;
    if (reconnect && (await this.store.printers.updateWhile(true, id, testing))) Object.assign(patch, testing);
    if (input.is_active === false) {
      // The driver stops first: a status it was storing as it went ("connected") lands before "deactivated", not after.
      await this.fleet.sync(id);
      await this.store.printers.updateWhile(false, id, deactivated);
    }
    // (De)activation and reconnects change the status: the status history keeps uptime right.
    if (patch.status !== undefined && patch.connection_status !== undefined) await this.store.statusHistory.record(id, patch.status, patch.connection_status, now);
    this.publish((await this.store.printers.get(id)) ?? ({ ...current, ...patch } as PrinterRecord), 'updated');
    // A deactivation synced above: a second sync would re-read the record and could act on another request's change.
    if (input.is_active !== false) await this.fleet.sync(id);
    return { id, message: 'Printer updated', updated_at: now };
  }

  async remove(id: string) {
    const current = await this.require(id);
    // Removed by another request since it was read: that one announced it (once).
    if (!(await this.store.printers.delete(id))) throw this.gone(id);
    await this.fleet.sync(id);
    this.cache.delete(id);
    const now = nowIso();
    // The history outlives the printer (like its jobs); its removal ends the printer's uptime.
    await this.store.statusHistory.record(id, 'offline', 'disconnected', now);
    this.publish({ ...current, status: 'offline', connection_status: 'disconnected' }, 'deleted');
    return { id, message: 'Printer deleted', deleted_at: now };
  }

  /**
   * The job a printer shows as current: while it is connected, the job of the print it reports (none while it
   * prints nothing; the newest active one when none names its file); otherwise the newest active job, all we know.
   */
  private currentJob(record: PrinterRecord, active: readonly JobRecord[]): JobRecord | undefined {
    const state = record.connection_status === 'connected' ? this.fleet.stateOf(record.id) : undefined;
    if (!state) return active[0];
    if (!['printing', 'paused', 'preparing'].includes(state.state)) return undefined;
    return active.find((j) => isPrintOf(state.job, j)) ?? active[0];
  }

  async require(id: string): Promise<PrinterRecord> {
    const record = await this.store.printers.get(id);
    if (!record) throw this.gone(id);
    return record;
  }

  private gone(id: string) {
    return notFound('PRINTER_NOT_FOUND', `Printer "${id}" not found`, { printer_id: id });
  }

  /** Well-formed but unusable configurations are 400 INVALID_PRINTER_CONFIG. */
  private checkConfig(
    type: string,
    c: {
      ip_address?: string;
      serial_number?: string | null;
      access_code?: string | null;
      mqtt_port?: number | null;
      ftps_port?: number | null;
      http_port?: number | null;
      auth_method?: string | null;
      camera_port?: number | null;
    },
  ): void {
    const problems: { field: string; message: string }[] = [];
    const foreignPorts = type === 'bambu_lab' ? ['http_port', 'auth_method'] : type === 'klipper' ? ['mqtt_port', 'ftps_port', 'auth_method', 'camera_port'] : ['mqtt_port', 'ftps_port', 'camera_port'];
    for (const field of foreignPorts) {
      if (c[field as keyof typeof c] != null) problems.push({ field, message: `does not apply to ${type} printers` });
    }
    if (c.ip_address !== undefined && !isHost(c.ip_address)) problems.push({ field: 'ip_address', message: 'must be an IP address or host name' });
    if (type === 'bambu_lab' && !c.serial_number) problems.push({ field: 'serial_number', message: 'is required for bambu_lab printers' });
    if (type === 'bambu_lab' && !c.access_code) problems.push({ field: 'access_code', message: 'is required for bambu_lab printers (LAN access code)' });
    if (problems.length) {
      throw new DomainError(400, 'INVALID_PRINTER_CONFIG', `Invalid printer configuration: ${problems.map((p) => `${p.field} ${p.message}`).join('; ')}`, {
        fields: problems,
      });
    }
  }

  /** An id from the name ("Prusa MK4 #2" -> "prusa-mk4-2"), numbered when taken. */
  private async freeId(name: string): Promise<string> {
    const base = name.normalize('NFKD').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 56) || 'printer';
    for (let n = 1; ; n++) {
      const candidate = n === 1 ? base : `${base}-${n}`;
      if (!(await this.store.printers.exists(candidate))) return candidate;
    }
  }

  private view(record: PrinterRecord, job: JobRecord | undefined): PrinterView {
    const live = this.cache.get(record.id);
    const { nozzle, bed, chamber } = live.temperatures;
    return {
      id: record.id,
      name: record.name,
      type: record.type,
      model: record.model,
      ip_address: record.ip_address,
      serial_number: record.serial_number,
      status: record.status as PrinterView['status'],
      connection_status: record.connection_status as PrinterView['connection_status'],
      current_job: job
        ? {
            id: job.id,
            name: job.job_name,
            status: job.status,
            progress: this.cache.has(record.id) ? live.progress : job.progress,
            estimated_remaining: live.remaining_seconds ?? remainingFrom(job),
          }
        : null,
      temperatures: record.type === 'bambu_lab' ? { nozzle, bed, chamber: chamber ?? 0 } : { nozzle, bed },
      is_active: record.is_active,
      last_seen: record.last_seen,
      created_at: record.created_at,
      nozzle_diameter: this.fleet.stateOf(record.id)?.nozzle_diameter ?? null,
      materials: this.spoolsOf(record.id, this.fleet.stateOf(record.id)?.materials ?? []),
      plate_state: record.plate_state ?? 'clear',
      plate_auto_clear: record.plate_auto_clear ?? false,
      attention: this.attention.of(record.id),
      camera: this.cameras?.viewOf(record) ?? { available: false, source: null, fps: 0 },
    };
  }

  private publish(record: PrinterRecord, change: 'created' | 'updated' | 'deleted'): void {
    const live = this.cache.get(record.id);
    this.bus.emit('printer_status', {
      printer_id: record.id,
      change,
      name: record.name,
      type: record.type,
      status: record.status,
      connection_status: record.connection_status,
      is_active: record.is_active,
      plate_state: record.plate_state ?? 'clear',
      progress: live.progress,
      temperatures: { nozzle: live.temperatures.nozzle, bed: live.temperatures.bed },
    });
  }
}

function remainingFrom(job: JobRecord): number | null {
  if (!job.estimated_completion) return null;
  return Math.max(0, Math.round((Date.parse(job.estimated_completion) - Date.now()) / 1000));
}
