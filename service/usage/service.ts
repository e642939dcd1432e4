/**
 * Opt-in usage statistics, client side.
 *
 *  - Opted out by default: before opt-in nothing is counted, stored or sent.
 *    Opting in creates a random installation id (a UUID, derived from nothing).
 *  - Counted: event kinds (app start, jobs created/completed/failed, files
 *    downloaded/uploaded, printer connects/disconnects, errors) and uptime,
 *    in hourly counters in the service's database.
 *  - Sent: the counters since the last submission with the fleet's printer
 *    type counts, the country from the time zone, platform, deployment mode,
 *    app version and feature usage (see UsageSubmission).
 *  - Scheduler: a first check 5 minutes after start, then hourly; it submits
 *    when opted in and the last submission is usage_stats_submission_interval_days
 *    old (or there was none yet).
 *  - Nothing here may disturb the service: every background failure is caught
 *    and logged.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { DomainError } from '../errors';
import type { Store } from '../db';
import type { UsageEventRecord, UsageState, UsageStatePatch } from '../db/repositories/usage';
import type { EventBus } from '../events';
import type { DeploymentMode, UsageSubmission } from '../schemas/usage';
import type { SettingsService } from '../settings';
import { nowIso } from '../util/time';
import { UPTIME_TYPE, UsageCollector } from './collector';
import { keepAfterFailure, readPending, storePending, type PendingSubmission } from './outbox';
import { assemblePayload, detectDeploymentMode } from './payload';
import { deleteRemote } from './remote-delete';
import { submitWithRetry, SubmissionError, type HttpsTarget } from './submitter';

// Kept importable from here, where it has always been.
export { detectDeploymentMode };

export interface UsageOptions {
  /** Extra CA certificate(s) (PEM) trusted for the aggregation service, besides the system CAs: a private aggregator, tests. */
  ca?: string | Buffer | (string | Buffer)[];
  /** How the service is deployed; default docker when /.dockerenv exists, else standalone. The Node-RED config node passes node-red. */
  deploymentMode?: DeploymentMode;
}

export const FIRST_CHECK_MS = 5 * 60 * 1000;
export const CHECK_INTERVAL_MS = 60 * 60 * 1000;
const DAY_MS = 24 * 60 * 60 * 1000;

export interface SubmitOutcome {
  status: 'submitted';
  installation_id: string;
  submitted_at: string;
  attempts: number;
  events_submitted: number;
  payload: UsageSubmission;
}

interface Deps {
  store: Store;
  bus: EventBus;
  settings: SettingsService;
  log: Logger;
  version: string;
}

export class UsageService {
  private state: UsageState;
  private readonly collector: UsageCollector;
  private readonly deploymentMode: DeploymentMode;
  private readonly log: Logger;
  /** Counter writes, one after the other; never rejects. */
  private writes: Promise<void> = Promise.resolve();
  /**
   * Counts not yet written, per type and hour. A burst of events while the database is slow adds to these
   * numbers instead of queueing one write (and its closure) per event: the queue holds at most one flush.
   */
  private readonly unwritten = new Map<string, { type: string; n: number; at: string }>();
  private flushQueued = false;
  private submitting: Promise<SubmitOutcome> | undefined;
  private ticking = false;
  private uptimeMark = Date.now();
  private firstTimer: NodeJS.Timeout | undefined;
  private intervalTimer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private readonly abort = new AbortController();
  /** Stops the running submission (attempts and backoff waits): an opt-out must end sending at once, not after the retries. */
  private submissionAbort: AbortController | undefined;
  private closed = false;

  private constructor(
    private readonly deps: Deps,
    state: UsageState,
    private readonly options: UsageOptions,
  ) {
    this.state = state;
    this.log = deps.log.child({ component: 'usage-stats' });
    this.deploymentMode = detectDeploymentMode(options.deploymentMode);
    this.collector = new UsageCollector((type, n) => this.count(type, n));
  }

  static async create(deps: Deps, options: UsageOptions = {}): Promise<UsageService> {
    return new UsageService(deps, await deps.store.usage.state(), options);
  }

  /** Listens to the bus, counts the start (when opted in) and starts the scheduler. */
  start(): void {
    this.unsubscribe = this.deps.bus.onAny((type, data) => this.collector.handle(type, data), { telemetry: false });
    this.count('app_start');
    this.firstTimer = setTimeout(() => {
      this.firstTimer = undefined;
      this.intervalTimer = setInterval(() => void this.tick(), CHECK_INTERVAL_MS);
      this.intervalTimer.unref();
      void this.tick();
    }, FIRST_CHECK_MS);
    this.firstTimer.unref();
  }

  get optedIn(): boolean {
    return this.state.opted_in;
  }

  /** Counts one event; a no-op unless opted in. Never throws. */
  count(type: string, n = 1): void {
    if (!this.state.opted_in || this.closed || n <= 0) return;
    const at = nowIso();
    const key = `${type}\u0000${at.slice(0, 13)}`;
    const open = this.unwritten.get(key);
    if (open) open.n += n;
    else this.unwritten.set(key, { type, n, at });
    if (this.flushQueued) return;
    this.flushQueued = true;
    this.enqueue(async () => {
      // Counts that come while this batch is written go into the next one.
      this.flushQueued = false;
      const batch = [...this.unwritten.values()];
      this.unwritten.clear();
      for (const c of batch) await this.deps.store.usage.add(c.type, c.n, c.at);
    });
  }

  private enqueue(work: () => Promise<unknown>): Promise<void> {
    this.writes = this.writes.then(
      () => work().then(() => undefined),
      () => undefined,
    );
    this.writes = this.writes.catch((err) => this.log.error({ err }, 'could not store a usage counter'));
    return this.writes;
  }

  /** Adds the uptime since the last mark (while opted in). */
  private flushUptime(): void {
    const now = Date.now();
    const seconds = Math.floor((now - this.uptimeMark) / 1000);
    if (seconds <= 0) return;
    this.uptimeMark += seconds * 1000;
    this.count(UPTIME_TYPE, seconds);
  }

  /** Local uploads have no bus event: they are counted from the file catalog since the last look. */
  private syncUploads(): Promise<void> {
    if (!this.state.opted_in) return this.writes;
    return this.enqueue(async () => {
      const since = this.state.uploads_seen_at ?? this.state.opted_in_at ?? nowIso();
      const { count, newest } = await this.deps.store.usage.uploadsSince(since);
      if (count > 0 && newest) {
        await this.deps.store.usage.add('file_uploaded', count, nowIso());
        await this.setState({ uploads_seen_at: newest });
      }
    });
  }

  private async setState(patch: UsageStatePatch): Promise<void> {
    const at = nowIso();
    await this.deps.store.usage.updateState(patch, at);
    this.state = { ...this.state, ...patch, updated_at: at };
  }

  /** Brings the counters up to date (uptime, uploads) and waits for pending writes. */
  private async settle(): Promise<void> {
    this.flushUptime();
    await this.syncUploads();
    await this.writes;
  }

  async optIn(): Promise<{ opted_in: true; installation_id: string; opted_in_at: string; message: string }> {
    await this.writes;
    if (this.state.opted_in && this.state.installation_id && this.state.opted_in_at) {
      return { opted_in: true, installation_id: this.state.installation_id, opted_in_at: this.state.opted_in_at, message: 'Already opted in' };
    }
    const now = nowIso();
    const installationId = this.state.installation_id ?? randomUUID();
    await this.setState({ opted_in: true, installation_id: installationId, opted_in_at: now, opted_out_at: null, uploads_seen_at: now });
    this.uptimeMark = Date.now();
    this.log.info({ installation_id: installationId }, 'usage statistics: opted in');
    return {
      opted_in: true,
      installation_id: installationId,
      opted_in_at: now,
      message: 'Opted in: anonymous usage statistics are collected and sent periodically. View them at GET /usage-stats/local.',
    };
  }

  async optOut(): Promise<{ opted_in: false; opted_out_at: string; local_events_kept: number; message: string }> {
    this.flushUptime();
    await this.writes;
    const now = nowIso();
    if (this.state.opted_in) await this.setState({ opted_in: false, opted_out_at: now });
    // A submission still retrying (up to usage_stats_retry_count attempts with growing waits) sends nothing more.
    this.submissionAbort?.abort('opted out');
    await this.submitting?.catch(() => undefined);
    this.log.info('usage statistics: opted out');
    return {
      opted_in: false,
      opted_out_at: this.state.opted_out_at ?? now,
      local_events_kept: await this.deps.store.usage.countEvents(),
      message: 'Opted out: nothing more is collected or sent. Collected counters stay until DELETE /usage-stats/delete-all.',
    };
  }

  /** What is sent next: the stored submission still on its way (outbox.ts), else a new one. */
  private async nextSubmission(): Promise<PendingSubmission & { resend: boolean }> {
    const pending = readPending(this.state);
    if (!pending) return { ...(await this.buildPayload()), resend: false };
    await this.settle();
    return { ...pending, resend: true };
  }

  /** What would be sent now, and the counter rows it covers. */
  private async buildPayload(): Promise<PendingSubmission> {
    await this.settle();
    const { store, settings, version } = this.deps;
    const events = await store.usage.pending();
    const typeCounts = await store.usage.printerTypeCounts();
    const payload = assemblePayload({ state: this.state, settings, version, deploymentMode: this.deploymentMode, events, typeCounts, now: nowIso() });
    return { payload, captured: events.map((e) => ({ id: e.id, count: e.count })) };
  }

  private target(signal: AbortSignal = this.abort.signal): HttpsTarget {
    const { settings } = this.deps;
    return {
      apiKey: settings.get('usage_stats_api_key'),
      timeoutMs: settings.get('usage_stats_timeout') * 1000,
      ca: this.options.ca,
      signal,
    };
  }

  /**
   * Sends the statistics now (manual, or from the scheduler). Refused (409) when opted out; 502 when the
   * aggregation service could not be reached or refused. A second call while one runs joins it.
   */
  submit(trigger: 'manual' | 'scheduled' = 'manual'): Promise<SubmitOutcome> {
    if (!this.state.opted_in || !this.state.installation_id) {
      return Promise.reject(
        new DomainError(409, 'USAGE_STATS_OPTED_OUT', 'Usage statistics are opted out: opt in first (POST /usage-stats/opt-in)', { opted_in: false }),
      );
    }
    if (this.closed) return Promise.reject(new DomainError(503, 'SERVICE_UNAVAILABLE', 'The service is shutting down', {}));
    this.submitting ??= this.runSubmission(trigger).finally(() => {
      this.submitting = undefined;
    });
    return this.submitting;
  }

  private async runSubmission(trigger: 'manual' | 'scheduled'): Promise<SubmitOutcome> {
    // Set before anything is awaited: an opt-out or a deletion while the payload is still being built stops it too.
    const abort = (this.submissionAbort = new AbortController());
    try {
      return await this.send(trigger, AbortSignal.any([this.abort.signal, abort.signal]));
    } finally {
      if (this.submissionAbort === abort) this.submissionAbort = undefined;
    }
  }

  private async send(trigger: 'manual' | 'scheduled', signal: AbortSignal): Promise<SubmitOutcome> {
    const { settings, store } = this.deps;
    const { payload, captured, resend } = await this.nextSubmission();
    // Stored before it leaves: until answered, every attempt (after a failure or a restart too) sends this very one.
    await this.setState({ last_attempt_at: resend ? nowIso() : payload.submitted_at, pending_submission: storePending({ payload, captured }) });
    this.log.info({ trigger, installation_id: payload.installation_id, period_start: payload.period_start, resend }, 'usage statistics: submitting');
    try {
      const res = await submitWithRetry(payload, { ...this.target(signal), endpoint: settings.get('usage_stats_endpoint'), retries: settings.get('usage_stats_retry_count') }, this.log);
      const marked = await store.usage.markSubmitted(captured, payload.submitted_at);
      await this.setState({ last_submission_at: payload.submitted_at, last_error: null, submission_count: this.state.submission_count + 1, pending_submission: null });
      this.log.info({ trigger, attempts: res.attempts, status: res.status, events_submitted: marked }, 'usage statistics submitted');
      return { status: 'submitted', installation_id: payload.installation_id, submitted_at: payload.submitted_at, attempts: res.attempts, events_submitted: marked, payload };
    } catch (err) {
      const e = err instanceof SubmissionError ? err : new SubmissionError((err as Error).message, 0, null, false);
      await this.setState({ last_error: e.message, ...(keepAfterFailure(e) ? {} : { pending_submission: null }) }).catch((dbErr) => this.log.error({ err: dbErr }, 'could not store the submission error'));
      throw new DomainError(502, 'USAGE_SUBMISSION_FAILED', `Usage statistics could not be submitted: ${e.message}`, {
        attempts: e.attempts,
        status: e.status,
        retryable: e.retryable,
      });
    }
  }

  /** True when the scheduler should submit now. */
  isDue(now = Date.now()): boolean {
    if (!this.state.opted_in || !this.state.installation_id) return false;
    const last = this.state.last_submission_at;
    if (!last) return true;
    return now - Date.parse(last) >= this.deps.settings.get('usage_stats_submission_interval_days') * DAY_MS;
  }

  private nextDueAt(): string | null {
    if (!this.state.opted_in) return null;
    const last = this.state.last_submission_at;
    if (!last) return this.state.opted_in_at;
    return new Date(Date.parse(last) + this.deps.settings.get('usage_stats_submission_interval_days') * DAY_MS).toISOString();
  }

  /** The hourly check. Never throws. */
  private async tick(): Promise<void> {
    if (this.ticking || this.closed) return;
    this.ticking = true;
    try {
      await this.settle();
      if (this.isDue()) await this.submit('scheduled');
    } catch (err) {
      // Already logged with its reason by the submitter when it was a submission failure.
      this.log.warn({ err: err instanceof DomainError ? { code: err.code, message: err.message } : err }, 'usage statistics: scheduled check failed');
    } finally {
      this.ticking = false;
    }
  }

  async local() {
    const { settings, store } = this.deps;
    const next = this.state.opted_in && this.state.installation_id ? (await this.nextSubmission()).payload : null;
    if (!next) await this.writes;
    const totals = await store.usage.totals();
    const pending = (await store.usage.pending()).length;
    const { uploads_seen_at: _seen, updated_at: _updated, pending_submission: _outbox, ...state } = this.state;
    return {
      ...state,
      next_submission_due_at: this.nextDueAt(),
      settings: {
        endpoint: settings.shown('usage_stats_endpoint'),
        api_key_set: settings.get('usage_stats_api_key') !== '',
        timeout_seconds: settings.get('usage_stats_timeout'),
        retry_count: settings.get('usage_stats_retry_count'),
        submission_interval_days: settings.get('usage_stats_submission_interval_days'),
      },
      event_totals: Object.fromEntries(totals.map((t) => [t.type, { pending: t.pending, total: t.total }])),
      pending_events: pending,
      next_submission: next,
    };
  }

  async export(): Promise<Awaited<ReturnType<UsageService['local']>> & { exported_at: string; events: UsageEventRecord[] }> {
    const local = await this.local();
    return { exported_at: nowIso(), ...local, events: await this.deps.store.usage.all() };
  }

  /**
   * Deletes every local counter and the installation id (a new random one is made when still opted in,
   * so nothing links old and new data). With `includeRemote`, first asks the aggregation service to
   * delete the installation's data.
   */
  async deleteAll(includeRemote = false) {
    // A submission still retrying would hold the deletion for its waits (up to 34 min at 10 retries) and then send what is being deleted.
    this.submissionAbort?.abort('local data deleted');
    await this.submitting?.catch(() => undefined);
    await this.writes;
    const previousId = this.state.installation_id;
    const remote = includeRemote ? await deleteRemote(this.deps.settings.get('usage_stats_endpoint'), previousId, this.target(), this.log) : null;
    const now = nowIso();
    const optedIn = this.state.opted_in;
    const fresh: UsageStatePatch = optedIn
      ? { opted_in: true, installation_id: randomUUID(), opted_in_at: now, uploads_seen_at: now }
      : { opted_in: false, opted_out_at: this.state.opted_out_at };
    const deleted = await this.deps.store.usage.deleteAll(fresh, now);
    this.state = await this.deps.store.usage.state();
    this.uptimeMark = Date.now();
    this.log.info({ deleted_events: deleted, remote: remote?.deleted ?? null }, 'usage statistics: local data deleted');
    return {
      deleted_events: deleted,
      opted_in: this.state.opted_in,
      installation_id: this.state.installation_id,
      remote,
      message: `Deleted ${deleted} local usage counter(s)${optedIn ? '; a new installation id was created' : ''}`,
    };
  }

  /** Stops the scheduler and any running submission, and stores the last uptime. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.flushUptime();
    this.closed = true;
    clearTimeout(this.firstTimer);
    clearInterval(this.intervalTimer);
    this.unsubscribe?.();
    this.abort.abort();
    await this.submitting?.catch(() => undefined);
    await this.writes;
  }
}
