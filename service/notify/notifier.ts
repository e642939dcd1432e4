/**
 * Turns what happens in the farm into events worth telling a person, once per cause: a print that finished
 * or failed, a fatal or serious attention entry, a printer offline for longer than `offline_notify_s`, a
 * plate that needs clearing, a queue item that failed, a spool running low (where the service has spools).
 * Each goes out as a `notification` event (/ws, the Node-RED `printfarm-events` node) and to the webhooks.
 * It only listens to the event bus: nothing here slows a report or a request down. What a notification reads
 * from the database is read one notification at a time, in the order of the events (util/work-queue.ts): a
 * burst of 10 000 job ends queues 10 000 small tasks here, not 20 000 statements on the database's connection,
 * so a request that needs the database is not stuck behind them. Most need no statement at all: a job's end
 * carries the job's name (the job tracker's and the jobs API's events), and a printer's name is read once and
 * then kept from its printer_status events (created, updated, deleted: the only ways a name changes).
 */
import type { Logger } from 'pino';
import type { AttentionChange, AttentionEntry } from '../attention/book';
import type { Store } from '../db';
import type { EventBus, PrinterStatusEvent } from '../events';
import type { SettingsService } from '../settings';
import { nowIso } from '../util/time';
import { WorkQueue } from '../util/work-queue';
import { notifyText, type Notification, type NotifyFacts, type NotifyKind, type NotifyLanguage, type NotifySeverity } from './kinds';

/** Causes remembered for de-duplication (the oldest are forgotten first). */
const MAX_TOLD = 5000;
/**
 * Notifications waiting for their names from the database. Beyond it a notification goes out at once with the
 * names its event carries and the printer names kept (the printer's id for one not kept): every notification is
 * kept, only its wording may suffer.
 */
const MAX_WAITING = 100_000;
/** Printer names kept (a farm has fewer printers; beyond, the names are read again). */
const MAX_NAMES = 10_000;

/** Whether a task may read the database (false: the backlog was full, it uses what its event carries and the names kept). */
type Lookups = boolean;

export interface NotifierDeps {
  bus: EventBus;
  store: Store;
  settings: SettingsService;
  log: Logger;
  /** The printer's attention now (why a print failed). */
  attentionOf(printerId: string): AttentionEntry[];
  /** An attention cause's words in English and German. */
  attentionTexts(printerId: string, entry: AttentionEntry): Partial<Record<NotifyLanguage, { message: string; action: string }>>;
  /** Webhook delivery (never waits). */
  deliver(notification: Notification): void;
  /** Notifications waiting at most for their names (default MAX_WAITING; tests make it small). */
  maxWaiting?: number;
}

export class Notifier {
  private readonly told = new Set<string>();
  private readonly offline = new Map<string, { timer: NodeJS.Timeout; since: number; reason: string | null }>();
  private readonly plates = new Map<string, string>();
  /** Printer names as last read or announced (null: no such printer). */
  private readonly names = new Map<string, string | null>();
  private readonly unsubscribe: () => void;
  private closed = false;
  /** One at a time: notifications go out in the order of their events. */
  readonly work: WorkQueue;

  constructor(private readonly deps: NotifierDeps) {
    this.work = new WorkQueue({
      name: 'notifications',
      concurrency: 1,
      maxBacklog: deps.maxWaiting ?? MAX_WAITING,
      log: deps.log,
      whenFull: 'notifications go out at once without the names read from the database',
    });
    this.unsubscribe = deps.bus.onAny((type, data) => {
      try {
        this.hear(type as string, data as Record<string, unknown>);
      } catch (err) {
        deps.log.error({ err, type }, 'notification failed');
      }
    }, { telemetry: false });
  }

  /** Stops listening; notifications still waiting are dropped (webhooks close next), the one under way ends. */
  async close(): Promise<void> {
    this.closed = true;
    this.unsubscribe();
    for (const { timer } of this.offline.values()) clearTimeout(timer);
    this.offline.clear();
    await this.work.close();
  }

  /** Waits until every notification heard so far went out (tests). */
  idle(): Promise<void> {
    return this.work.idle();
  }

  private hear(type: string, data: Record<string, unknown>): void {
    switch (type) {
      case 'printer_attention':
        return this.attention(data as unknown as AttentionChange);
      case 'job_update':
        if (data.change === 'status' && (data.status === 'completed' || data.status === 'failed')) this.later((lookups) => this.jobEnded(data, lookups));
        return;
      case 'printer_status':
        return this.printerStatus(data as PrinterStatusEvent);
      case 'queue_update':
        if (data.status === 'failed') this.later((lookups) => this.queueFailed(data, lookups));
        return;
      case 'spool_low':
        // Sent by the spool inventory where the service has one.
        return this.later((lookups) => this.spoolLow(data, lookups));
    }
  }

  /** Queues `work`; with the backlog full it runs at once without reading the database (see MAX_WAITING). */
  private later(work: (lookups: Lookups) => Promise<void>): void {
    if (this.work.push(() => work(true))) return;
    if (!this.closed) work(false).catch((err) => this.deps.log.error({ err }, 'notification failed'));
  }

  private attention(change: AttentionChange): void {
    const severe = change.appeared.filter((e) => e.severity === 'fatal' || e.severity === 'serious');
    if (!severe.length) return;
    // One message per change: the causes a printer reports together (an AMS runout is an HMS and a print_error) are one event.
    const worst = severe[0];
    const cause = `attention:${change.printer_id}:${severe.map((e) => `${e.source}:${e.code}`).join(',')}:${worst.since}`;
    const words = this.deps.attentionTexts(change.printer_id, worst);
    const facts = (language: NotifyLanguage) => words[language] ?? words.en ?? { message: worst.message, action: worst.action };
    this.later((lookups) => this.tell(lookups, 'attention', change.printer_id, worst.severity, cause, facts, { attention: severe, all: change.attention }));
  }

  private async jobEnded(data: Record<string, unknown>, lookups: Lookups): Promise<void> {
    const id = Number(data.job_id ?? data.id);
    const printerId = String(data.printer_id ?? '');
    const failed = data.status === 'failed';
    // A cause told already needs no job read (an event heard twice).
    if (this.closed || this.told.has(`job:${id}:${data.status}`)) return;
    // The event's name is the job's at its end; only an event without one (null is a name too) reads the job.
    const carried = 'job_name' in data || !lookups || !Number.isFinite(id);
    const job = carried ? { job_name: typeof data.job_name === 'string' ? data.job_name : null, customer_info: null } : await this.deps.store.jobs.get(id);
    // Why a print lost to a Klipper crash or power loss failed: the end carries it (the job's end_reason), since the
    // printer's attention is empty again once Klipper restarted or the power came back. A cause there is more specific.
    const stored = job?.customer_info?.end_reason;
    const reason = typeof data.end_reason === 'string' ? data.end_reason : typeof stored === 'string' ? stored : undefined;
    const why = failed ? (this.deps.attentionOf(printerId)[0]?.message ?? reason) : undefined;
    await this.tell(lookups, failed ? 'print_failed' : 'print_finished', printerId, failed ? 'serious' : 'info', `job:${id}:${data.status}`, { job: job?.job_name ?? undefined, message: why }, {
      job_id: id,
      job_name: job?.job_name ?? null,
      status: data.status,
      ...(failed && reason ? { end_reason: reason } : {}),
    });
  }

  private printerStatus(e: PrinterStatusEvent): void {
    const id = e.printer_id;
    if (e.change !== 'state') this.rename(id, e.change === 'deleted' ? null : e.name);
    if (e.change === 'deleted') {
      this.backOnline(id);
      this.plates.delete(id);
      return;
    }
    // A deactivated printer is offline on purpose.
    if (e.status === 'offline' && e.change === 'state') this.wentOffline(id, typeof e.reason === 'string' ? e.reason : null);
    else if (e.status !== 'offline' || e.is_active === false) this.backOnline(id);
    const plate = typeof e.plate_state === 'string' ? e.plate_state : null;
    if (plate) {
      const before = this.plates.get(id);
      this.plates.set(id, plate);
      if (plate === 'needs_clearing' && before === 'clear') this.later((lookups) => this.tell(lookups, 'plate_needs_clearing', id, 'common', `plate:${id}:${Date.now()}`, {}, { plate_state: plate }));
    }
  }

  private wentOffline(id: string, reason: string | null): void {
    if (this.offline.has(id) || this.closed) return;
    const since = Date.now();
    const wait = this.deps.settings.get('offline_notify_s') * 1000;
    const timer = setTimeout(() => {
      const minutes = Math.max(1, Math.round((Date.now() - since) / 60_000));
      this.later((lookups) => this.tell(lookups, 'printer_offline', id, 'serious', `offline:${id}:${since}`, { minutes, reason: reason ?? undefined }, { offline_since: new Date(since).toISOString() }));
    }, wait);
    timer.unref();
    this.offline.set(id, { timer, since, reason });
  }

  private backOnline(id: string): void {
    const spell = this.offline.get(id);
    if (!spell) return;
    clearTimeout(spell.timer);
    this.offline.delete(id);
  }

  private async queueFailed(item: Record<string, unknown>, lookups: Lookups): Promise<void> {
    const dispatches = Array.isArray(item.dispatches) ? (item.dispatches as Array<Record<string, unknown>>) : [];
    const last = dispatches[dispatches.length - 1];
    const printerId = typeof last?.printer_id === 'string' ? last.printer_id : null;
    const reason = typeof last?.error === 'string' ? last.error : undefined;
    await this.tell(lookups, 'queue_item_failed', printerId, 'serious', `queue:${String(item.id)}:failed`, { item: typeof item.name === 'string' ? item.name : undefined, reason }, { item_id: item.id, name: item.name });
  }

  private async spoolLow(data: Record<string, unknown>, lookups: Lookups): Promise<void> {
    const printerId = typeof data.printer_id === 'string' ? data.printer_id : null;
    const spoolId = data.spool_id ?? data.id ?? null;
    const name = [data.name, data.material ?? data.type, data.color_name ?? data.color].find((v) => typeof v === 'string' && v.trim()) as string | undefined;
    const grams = typeof data.remaining_grams === 'number' ? `${Math.round(data.remaining_grams)} g` : typeof data.remaining_percent === 'number' ? `${Math.round(data.remaining_percent)} %` : undefined;
    await this.tell(lookups, 'spool_low', printerId, 'common', `spool:${String(spoolId)}:${grams ?? ''}`, { spool: name, remaining: grams }, { ...data });
  }

  private async tell(
    lookups: Lookups,
    kind: NotifyKind,
    printerId: string | null,
    severity: NotifySeverity,
    cause: string,
    facts: Omit<NotifyFacts, 'printer'> | ((language: NotifyLanguage) => Omit<NotifyFacts, 'printer'>),
    data: Record<string, unknown>,
  ): Promise<void> {
    if (this.closed || this.told.has(cause)) return;
    this.remember(cause);
    // With the backlog full nothing is read, but a name kept from the printer's frames costs nothing.
    const printerName = (printerId ? (lookups ? await this.printerName(printerId) : this.names.get(printerId)) : null) ?? printerId;
    if (this.closed) return;
    const factsIn = (language: NotifyLanguage) => ({ ...(typeof facts === 'function' ? facts(language) : facts), printer: printerName ?? '' });
    const texts = { en: notifyText(kind, factsIn('en'), 'en'), de: notifyText(kind, factsIn('de'), 'de') };
    const { title, message } = texts[this.deps.settings.get('language') === 'de' ? 'de' : 'en'];
    const notification: Notification = { kind, title, message, printer_id: printerId, printer_name: printerName, severity, at: nowIso(), data, cause, texts };
    this.deps.bus.emit('notification', notification);
    this.deps.deliver(notification);
  }

  /** The printer's name, read once and then kept (see rename). */
  private async printerName(printerId: string): Promise<string | null> {
    const known = this.names.get(printerId);
    if (known !== undefined) return known;
    const name = (await this.deps.store.printers.get(printerId))?.name ?? null;
    // A printer_status of the printer heard during the read is newer than what was read.
    if (!this.names.has(printerId)) {
      if (this.names.size >= MAX_NAMES) this.names.clear();
      this.names.set(printerId, name);
    }
    return name;
  }

  /** A printer was created, changed or removed: its name as announced (read again when the event has none). */
  private rename(printerId: string, name: unknown): void {
    if (typeof name === 'string' || name === null) {
      if (this.names.size >= MAX_NAMES) this.names.clear();
      this.names.set(printerId, name);
    } else this.names.delete(printerId);
  }

  private remember(cause: string): void {
    this.told.add(cause);
    if (this.told.size > MAX_TOLD) this.told.delete(this.told.values().next().value as string);
  }
}
