/**
 * The fleet: one driver per active printer. It starts and stops drivers as
 * printers are added, changed, (de)activated and removed; turns what drivers
 * report into the printer's stored status, the live status cache and /ws
 * frames; and carries out commands. A printer that hangs never blocks the
 * API or another printer: every driver call has its own timeout.
 */
import type { Logger } from 'pino';
import { DomainError } from '../errors';
import type { Store } from '../db';
import type { PrinterRecord } from '../db/repositories/printers';
import type { EventBus, PrinterStatusEvent } from '../events';
import type { StatusCache } from '../monitoring/status-cache';
import type { SettingsService } from '../settings';
import { KeyedSerial } from '../util/keyed-serial';
import { nowIso, settledWithin } from '../util/time';
import { cancelledRunOf, cancelledRuns, type CancelledRun } from '../monitoring/cancelled-runs';
import type { ConnectionChange, DriverConfig, PrinterDriver, PrinterState, PrintProgress } from './driver';
import { sameApartFromTemperatures } from './state-equality';
import { connectionTest } from './connection-test';
import { commandError, connectionChanged, driverConfigOf, FrameShown, offlineError, printerStatusOf, statusEvent, type FleetTimings } from './fleet-status';
import { LAST_SEEN_WRITE_MS, LastSeenWriter } from './last-seen';

export { printerStatusOf, type FleetTimings } from './fleet-status';

/** How long removing a printer (or stopping) waits for its driver to let go of the printer. */
const DRIVER_CLOSE_WAIT_MS = 5000;

export type DriverFactory = (type: PrinterRecord['type'], config: DriverConfig) => PrinterDriver;

interface Member {
  record: PrinterRecord;
  driver: PrinterDriver;
  status: string;
  connection: string;
  message: string | null;
  /** What the last printer_status frame showed. */
  shown: FrameShown;
  /** The state the report listeners were last given (null after a link change: the next report reaches all of them). */
  reported: PrinterState | null;
  lastSeenWritten: number;
  /** Serialises db writes of one printer so that they land in report order. */
  writes: Promise<unknown>;
}

export type ReportListener = (printerId: string, state: PrinterState) => void;

/**
 * Which reports that moved only temperatures (telemetry) a listener hears: all (true, the default), none (false)
 * or a printer's while the function says so (a failed update waiting for its retry, a queued start watched).
 */
export interface ReportListenOptions {
  telemetry?: boolean | TelemetryWanted;
}
type TelemetryWanted = (printerId: string, state: PrinterState) => boolean;
interface ChoosyListener {
  listener: ReportListener;
  wants: TelemetryWanted;
}

export class Fleet {
  private readonly members = new Map<string, Member>();
  private readonly reportListeners: ReportListener[] = [];
  /** The report listeners that also hear reports which moved only temperatures (most reports of a farm). */
  private readonly telemetryListeners: ReportListener[] = [];
  /** The report listeners that hear a printer's telemetry when they ask for it. */
  private readonly choosyListeners: ChoosyListener[] = [];
  private readonly linkUpListeners: ((printerId: string) => void)[] = [];
  private closed = false;
  private readonly lastSeen: LastSeenWriter;
  /** One change of a printer's driver at a time: an edit's restart and a removal must not both act on what they read. */
  private readonly changes = new KeyedSerial();

  constructor(
    private readonly store: Store,
    private readonly cache: StatusCache,
    private readonly bus: EventBus,
    private readonly settings: SettingsService,
    private readonly log: Logger,
    private readonly createDriver: DriverFactory,
    private readonly timings: FleetTimings = {},
  ) {
    this.lastSeen = new LastSeenWriter(store, log);
    // Drivers read the period live; a waiting poll loop starts over with it now (an hour's wait would hide the change).
    settings.onChange((keys) => keys.includes('monitoring_interval') && this.members.forEach((m) => m.driver.pollIntervalChanged?.()));
  }

  /** Every state a connected printer reports goes to `listener`, but the telemetry it declines (ReportListenOptions). */
  onReport(listener: ReportListener, options: ReportListenOptions = {}): void {
    this.reportListeners.push(listener);
    const { telemetry = true } = options;
    if (typeof telemetry === 'function') this.choosyListeners.push({ listener, wants: telemetry });
    else if (telemetry) this.telemetryListeners.push(listener);
  }

  /** `listener` hears of every printer whose link comes up (connection test passed, reconnect). */
  onLinkUp(listener: (printerId: string) => void): void {
    this.linkUpListeners.push(listener);
  }

  /** Whether a printer's link is up now (called on every report: no list is built). */
  isConnected = (printerId: string): boolean => this.members.get(printerId)?.driver.connection === 'connected';

  /** Ids of the printers connected now. */
  connectedPrinters(): string[] {
    return [...this.members.values()].filter((m) => m.driver.connection === 'connected').map((m) => m.record.id);
  }

  /** Connects every active printer (without waiting for them). */
  async start(): Promise<void> {
    const records = await this.store.printers.list({ active: true });
    const cancelled = await cancelledRuns(this.store, records.map((r) => r.id));
    const launched = records.map((record) => this.launch(record, cancelled.get(record.id)));
    // Ready once each printer's start is in its history (immediate on SQLite; a round trip on PostgreSQL).
    await Promise.all(launched.map((member) => member.writes));
  }

  /** Brings the running driver in line with the stored configuration: start, restart or stop. */
  sync(printerId: string): Promise<void> {
    return this.changes.run(printerId, async () => {
      if (this.closed) return;
      const record = await this.store.printers.get(printerId);
      const member = this.members.get(printerId);
      if (member && (!record || !record.is_active || connectionChanged(member.record, record))) await this.retire(printerId);
      else if (member && record) member.record = record;
      if (!record?.is_active || this.members.has(printerId) || this.closed) return;
      const cancelled = await cancelledRunOf(this.store, printerId, this.log);
      // Closed meanwhile: no driver starts after the fleet's shutdown retired the others.
      if (!this.closed) this.launch(record, cancelled);
    });
  }

  /** The last state a printer reported, or undefined when it has no running driver or no report yet. */
  stateOf(printerId: string): PrinterState | undefined {
    return this.members.get(printerId)?.driver.state ?? undefined;
  }

  /** The printer_status frame a running printer shows now (what its last frame said, with today's figures), or null. */
  statusEventOf(printerId: string): PrinterStatusEvent | null {
    const member = this.members.get(printerId);
    return member ? statusEvent(member.record, member.status, member.connection, this.cache.get(printerId), member.driver.state) : null;
  }

  async pause(printerId: string): Promise<void> {
    await this.command(printerId, 'pause', (d) => d.pause());
  }

  async resume(printerId: string): Promise<void> {
    await this.command(printerId, 'resume', (d) => d.resume());
  }

  async stop(printerId: string): Promise<void> {
    await this.command(printerId, 'stop', (d) => d.stop());
  }

  async startPrint(printerId: string, path: string): Promise<void> {
    await this.command(printerId, 'print', (d) => d.startPrint(path));
  }

  /**
   * Stops the print on a printer that is printing, for a job cancel: nothing to do when the printer is idle,
   * not managed (inactive, removed) or prints something `isThePrint` says is not the job's; 502 when it should
   * be printing but can't be reached.
   */
  async stopIfPrinting(printerId: string, isThePrint: (print: PrintProgress | null) => boolean = () => true): Promise<void> {
    const member = this.members.get(printerId);
    if (!member) return;
    if (member.driver.connection !== 'connected') throw this.offline(printerId, member);
    const state = member.driver.state;
    if (state && ['printing', 'paused', 'preparing'].includes(state.state) && isThePrint(state.job)) await this.stop(printerId);
  }

  /** The driver of a connected printer, for file transfers. */
  driverOf(printerId: string): PrinterDriver {
    const member = this.members.get(printerId);
    if (!member || member.driver.connection !== 'connected') throw this.offline(printerId, member);
    return member.driver;
  }

  /** A printer's plate state changed: its record follows and a printer_status frame says so. False when it has no driver. */
  announcePlate(printerId: string, plate: 'clear' | 'needs_clearing'): boolean {
    const member = this.members.get(printerId);
    if (!member) return false;
    member.record.plate_state = plate;
    this.frame(member, true);
    return true;
  }

  /** Reconnects a printer now and reports whether it answers. */
  async testConnection(printerId: string): Promise<{ ok: boolean; status: string; connection_status: string; message: string | null }> {
    const member = await this.changes.run(printerId, async () => {
      const record = await this.store.printers.get(printerId);
      if (!record) throw new DomainError(404, 'PRINTER_NOT_FOUND', `Printer "${printerId}" not found`, { printer_id: printerId });
      if (!record.is_active || this.closed) return null;
      await this.retire(printerId);
      const cancelled = await cancelledRunOf(this.store, printerId, this.log);
      return this.closed ? null : this.launch(record, cancelled);
    });
    if (!member) return { ok: false, status: 'offline', connection_status: 'disconnected', message: this.closed ? 'the service is stopping' : 'printer is inactive' };
    await member.connected;
    const m = this.members.get(printerId);
    const ok = m?.connection === 'connected';
    return { ok, status: m?.status ?? 'offline', connection_status: m?.connection ?? 'disconnected', message: m?.message ?? null };
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.lastSeen.flush();
    const at = nowIso();
    // The status history ends its monitoring: time while the service is down is not uptime.
    await Promise.all([...this.members.keys()].map((id) => this.retire(id).then(() => this.recordHistory(id, 'offline', 'disconnected', at))));
  }

  /** Starts a printer's driver; `cancelled`: its last job's run, when that job ended cancelled (cancelled-runs.ts). */
  private launch(record: PrinterRecord, cancelled?: CancelledRun): Member & { connected: Promise<void> } {
    const config = driverConfigOf(record, this.timings, () => this.settings.get('monitoring_interval') * 1000, cancelled);
    const driver = this.createDriver(record.type, config);
    const member: Member = {
      record,
      driver,
      status: record.status,
      connection: 'testing',
      message: null,
      shown: new FrameShown(),
      reported: null,
      lastSeenWritten: 0,
      writes: Promise.resolve(),
    };
    this.members.set(record.id, member);
    // Monitoring (re)starts with a connection test: not connected until it answers, in the record too (after a
    // restart or a crash it said 'connected', the last process's link, until the test ended). Then its history.
    const testing = { connection_status: member.connection, status_message: null };
    Object.assign(record, testing);
    const stored = this.store.printers.update(record.id, testing).catch((err) => this.log.error({ err, printer_id: record.id }, 'could not store printer status'));
    member.writes = stored.then(() => this.recordHistory(record.id, member.status, member.connection, nowIso()));
    // Nothing a driver emits may throw into the driver or reach the process: a failure here marks this printer only.
    driver.on('connection', (change: ConnectionChange) => this.guarded(member, () => this.onConnection(member, change)));
    driver.on('state', (state: PrinterState) => this.guarded(member, () => this.onState(member, state)));
    driver.on('error', (err: unknown) => this.guarded(member, () => this.onConnection(member, { connection: 'error', message: `driver failed: ${(err as Error)?.message ?? err}` })));
    // The connection test (connection-test.ts): what the first connect shows; the driver keeps retrying after a failure.
    const connected = connectionTest(driver, this.timings.connectTimeoutMs ?? 15_000).then((change) => this.guarded(member, () => this.onConnection(member, change)));
    return Object.assign(member, { connected });
  }

  private async retire(printerId: string): Promise<void> {
    const member = this.members.get(printerId);
    if (!member) return;
    this.members.delete(printerId);
    member.driver.removeAllListeners('state');
    member.driver.removeAllListeners('connection');
    member.driver.removeAllListeners('error');
    const closing = member.driver.close().catch((err) => this.log.warn({ err, printer_id: printerId }, 'driver close failed'));
    // A printer that never lets go must not hold the service's shutdown (or a removal) forever.
    if (!(await settledWithin(closing, DRIVER_CLOSE_WAIT_MS))) this.log.warn({ printer_id: printerId, waited_ms: DRIVER_CLOSE_WAIT_MS }, 'driver did not close in time; left behind');
    await member.writes;
  }

  /** Runs a handler of a driver event; an exception marks the printer `error` with the reason instead of escaping. */
  private guarded(member: Member, handle: () => void): void {
    try {
      handle();
    } catch (err) {
      this.log.error({ err, printer_id: member.record.id }, 'printer event handling failed');
      try {
        if (this.isCurrent(member) && member.status !== 'error') this.onConnection(member, { connection: 'error', message: `printer data could not be handled: ${(err as Error)?.message ?? err}` });
      } catch {
        // Already logged: the farm goes on.
      }
    }
  }

  /** A driver's counts of dropped reports and faults, when it keeps them. */
  driverStats(printerId: string): Record<string, number> | null {
    return this.members.get(printerId)?.driver.faultStats ?? null;
  }

  private isCurrent(member: Member): boolean {
    return this.members.get(member.record.id) === member;
  }

  private onConnection(member: Member, change: ConnectionChange): void {
    if (!this.isCurrent(member)) return;
    const before = { status: member.status, connection: member.connection };
    member.connection = change.connection;
    member.message = change.message;
    member.reported = null;
    if (change.connection === 'connected') {
      member.status = member.driver.state ? printerStatusOf(member.driver.state.state) : 'online';
    } else {
      member.status = change.connection === 'error' ? 'error' : 'offline';
    }
    if (before.status === member.status && before.connection === member.connection) return;
    const id = member.record.id;
    this.persist(member, {
      status: member.status,
      connection_status: member.connection,
      status_message: member.message,
      ...(change.connection === 'connected' ? { last_seen: nowIso() } : {}),
    });
    this.frame(member, true);
    if (change.connection === 'connected') for (const listener of this.linkUpListeners) listener(id);
    if (change.connection !== 'connected') {
      this.alert('warning', `Printer ${member.record.name} is ${member.status}${change.message ? `: ${change.message}` : ''}`, id, {
        status: member.status,
        reason: change.message,
      });
    } else if (before.connection !== 'testing') {
      this.alert('info', `Printer ${member.record.name} is back online`, id, { status: member.status });
    }
  }

  private onState(member: Member, state: PrinterState): void {
    if (!this.isCurrent(member)) return;
    const id = member.record.id;
    // A driver's state is never changed once handed out: the cache keeps its temperatures as they are.
    this.cache.report(id, state);
    const status = member.connection === 'connected' ? printerStatusOf(state.state) : member.status;
    const now = Date.now();
    let patch: Partial<PrinterRecord> | null = null;
    if (status !== member.status) {
      const wasError = member.status === 'error';
      member.status = status;
      patch = { status, status_message: state.error?.message ?? null };
      if (status === 'error' && state.error) {
        this.alert('error', `Printer ${member.record.name} reports an error: ${state.error.message}`, id, { error_code: state.error.code, status });
      } else if (wasError) {
        this.alert('info', `Printer ${member.record.name} recovered`, id, { status });
      }
    }
    if (state.firmware_version && state.firmware_version !== member.record.firmware_version) (patch ??= {}).firmware_version = member.record.firmware_version = state.firmware_version;
    if (state.model && state.model !== member.record.model) (patch ??= {}).model = member.record.model = state.model;
    if (now - member.lastSeenWritten > LAST_SEEN_WRITE_MS) {
      member.lastSeenWritten = now;
      this.lastSeen.mark(id);
    }
    if (patch) this.persist(member, patch);
    this.frame(member, false);
    const telemetry = member.reported !== null && sameApartFromTemperatures(member.reported, state);
    member.reported = state;
    for (const listener of telemetry ? this.telemetryListeners : this.reportListeners) this.tell(listener, id, state);
    if (telemetry) for (const { listener, wants } of this.choosyListeners) this.tell(listener, id, state, wants);
  }

  /** Hands a report to a listener (when it wants it): what a listener throws is logged, never the driver's. */
  private tell(listener: ReportListener, id: string, state: PrinterState, wants?: TelemetryWanted): void {
    try {
      if (!wants || wants(id, state)) listener(id, state);
    } catch (err) {
      this.log.error({ err, printer_id: id }, 'report listener failed');
    }
  }

  /** Sends printer_status when what it shows changed (state, whole percent, temperatures to 0.5 °C). */
  private frame(member: Member, force: boolean): void {
    const state = member.driver.state;
    const news = member.shown.take(member.status, member.connection, state);
    if (news === 'none' && !force) return;
    const event = statusEvent(member.record, member.status, member.connection, this.cache.get(member.record.id), state);
    this.bus.emit('printer_status', event, news === 'telemetry' && !force);
  }

  private persist(member: Member, patch: Partial<PrinterRecord>): void {
    const id = member.record.id;
    // A change of status or connection also goes to the status history (one row per change).
    const change = patch.status !== undefined || patch.connection_status !== undefined ? { status: member.status, connection: member.connection, at: nowIso() } : null;
    member.writes = member.writes
      .then(() => this.store.printers.update(id, { ...patch, updated_at: patch.status ? nowIso() : member.record.updated_at }))
      .then(() => change && this.recordHistory(id, change.status, change.connection, change.at))
      .catch((err) => this.log.error({ err, printer_id: id }, 'could not store printer status'));
  }

  /** Appends to the status history (a no-op when nothing changed); never throws. */
  private recordHistory(printerId: string, status: string, connection: string, at: string): Promise<unknown> {
    return this.store.statusHistory.record(printerId, status, connection, at).catch((err) => this.log.error({ err, printer_id: printerId }, 'could not store status history'));
  }

  private alert(level: 'info' | 'warning' | 'error', message: string, printerId: string, extra: Record<string, unknown>): void {
    this.log.info({ printer_id: printerId, level, ...extra }, message);
    this.bus.emit('system_alert', { level, message, printer_id: printerId, ...extra });
  }

  private offline(printerId: string, member: Member | undefined): DomainError {
    return offlineError(printerId, member && { message: member.message, connection: member.connection, last_seen: member.record.last_seen });
  }

  private async command(printerId: string, name: string, run: (d: PrinterDriver) => Promise<void>): Promise<void> {
    const driver = this.driverOf(printerId);
    try {
      await run(driver);
    } catch (err) {
      throw commandError(printerId, name, err);
    }
  }
}
