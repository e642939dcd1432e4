/**
 * Delivers notifications to the `notify_webhooks` URLs: one HTTP POST per event and URL, in the background.
 * Nothing waits for a receiver: deliveries queue (at most MAX_PENDING; the oldest goes when full, counted),
 * at most CONCURRENCY run at once, each attempt ends after its timeout, and a failed one is tried again
 * with growing pauses up to `retries` times. Every outcome is counted for /metrics; URLs are never logged
 * whole (an ntfy topic or a token in the query is a secret), only their origin.
 */
import http from 'node:http';
import https from 'node:https';
import type { Logger } from 'pino';
import type { NotifyWebhookTarget } from '../schemas/notify';
import type { Notification, NotifySeverity } from './kinds';

export type WebhookResult = 'sent' | 'failed' | 'retried' | 'dropped';

export interface WebhookOptions {
  /** Per attempt (default 5 s). */
  timeoutMs?: number;
  /** Further attempts after a failure (default 3). */
  retries?: number;
  /** First pause before a retry, doubled each time (default 2 s). */
  backoffMs?: number;
}

const MAX_PENDING = 500;
const CONCURRENCY = 4;
const MAX_BODY = 64 * 1024;

interface Delivery {
  url: URL;
  ntfy: boolean;
  notification: Notification;
  attempt: number;
}

/** ntfy.sh and self-hosted ntfy servers (host names starting with "ntfy.") get ntfy's own headers. */
export function isNtfy(url: URL): boolean {
  return url.hostname === 'ntfy.sh' || url.hostname.startsWith('ntfy.');
}

const NTFY_PRIORITY: Record<NotifySeverity, string> = { fatal: '5', serious: '4', common: '3', info: '2' };
const NTFY_TAGS: Record<string, string> = {
  print_finished: 'white_check_mark',
  print_failed: 'x',
  attention: 'warning',
  printer_offline: 'electric_plug',
  plate_needs_clearing: 'broom',
  queue_item_failed: 'x',
  spool_low: 'thread',
};

/** A header value outside Latin-1 as RFC 2047 (ntfy decodes it; Node refuses raw non-Latin-1 headers). */
function headerText(text: string): string {
  const clean = text.replace(/[\r\n]+/g, ' ').slice(0, 250);
  return /^[\x20-\x7e]*$/.test(clean) ? clean : `=?UTF-8?B?${Buffer.from(clean, 'utf8').toString('base64')}?=`;
}

/** What is POSTed: the JSON body for every URL; for ntfy the message as text with Title, Priority and Tags. */
export function webhookRequest(notification: Notification, ntfy: boolean): { headers: Record<string, string>; body: Buffer } {
  if (ntfy) {
    return {
      headers: {
        'Content-Type': 'text/plain; charset=utf-8',
        Title: headerText(notification.title),
        Priority: NTFY_PRIORITY[notification.severity],
        Tags: NTFY_TAGS[notification.kind] ?? 'printer',
      },
      body: Buffer.from(notification.message.slice(0, 4000), 'utf8'),
    };
  }
  const { kind, title, message, printer_id, printer_name, severity, at, data } = notification;
  let body = Buffer.from(JSON.stringify({ kind, title, message, printer_id, printer_name, severity, at, data }), 'utf8');
  // A body beyond the bound goes without its data (the words are what a person reads).
  if (body.length > MAX_BODY) body = Buffer.from(JSON.stringify({ kind, title, message, printer_id, printer_name, severity, at, data: {} }), 'utf8');
  return { headers: { 'Content-Type': 'application/json' }, body };
}

export class WebhookSender {
  private readonly pending: Delivery[] = [];
  private readonly running = new Set<http.ClientRequest>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private closed = false;
  private readonly timeoutMs: number;
  private readonly retries: number;
  private readonly backoffMs: number;

  constructor(
    private readonly targets: () => readonly NotifyWebhookTarget[],
    private readonly count: (result: WebhookResult) => void,
    private readonly log: Logger,
    options: WebhookOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? 5000;
    this.retries = options.retries ?? 3;
    this.backoffMs = options.backoffMs ?? 2000;
  }

  /** Queues the event for every URL that wants its kind; returns at once. */
  send(notification: Notification): void {
    if (this.closed) return;
    for (const target of this.targets()) {
      if (target.kinds?.length && !target.kinds.includes(notification.kind)) continue;
      let url: URL;
      try {
        url = new URL(target.url);
      } catch {
        continue;
      }
      this.enqueue({ url, ntfy: isNtfy(url), notification, attempt: 0 });
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.pending.length = 0;
    for (const req of this.running) req.destroy();
    this.running.clear();
  }

  private enqueue(delivery: Delivery): void {
    if (this.pending.length >= MAX_PENDING) {
      this.pending.shift();
      this.count('dropped');
    }
    this.pending.push(delivery);
    this.pump();
  }

  private pump(): void {
    while (!this.closed && this.running.size < CONCURRENCY && this.pending.length) this.attempt(this.pending.shift()!);
  }

  private attempt(delivery: Delivery): void {
    const { headers, body } = webhookRequest(delivery.notification, delivery.ntfy);
    const client = delivery.url.protocol === 'https:' ? https : http;
    let settled = false;
    const finish = (ok: boolean, why?: string) => {
      if (settled) return;
      settled = true;
      if (ok) this.count('sent');
      else this.failed(delivery, why ?? 'failed');
    };
    // agent: false: one connection per delivery, closed after it, so nothing lingers when the service stops.
    const req = client.request(delivery.url, { method: 'POST', agent: false, headers: { ...headers, 'Content-Length': String(body.length), 'User-Agent': 'printfarm' } }, (res) => {
      res.resume();
      res.on('error', () => undefined);
      const ok = (res.statusCode ?? 0) >= 200 && (res.statusCode ?? 0) < 300;
      finish(ok, `HTTP ${res.statusCode}`);
    });
    // The whole attempt, body included, ends at its deadline: an idle timeout (req.setTimeout) let a receiver that
    // drips its headers hold a delivery slot for ever, and one that streams its answer without end keep the
    // connection open after the delivery counted as sent (one more socket per notification, past close()).
    const deadline = setTimeout(() => req.destroy(new Error(`no answer within ${Math.round(this.timeoutMs / 1000)} s`)), this.timeoutMs);
    req.on('error', (err) => finish(false, err.message));
    // The slot is given back once the connection is gone (the answer read or the deadline passed), not at the status line.
    req.once('close', () => {
      clearTimeout(deadline);
      this.running.delete(req);
      finish(false, 'connection closed without an answer');
      this.pump();
    });
    this.running.add(req);
    req.end(body);
  }

  private failed(delivery: Delivery, why: string): void {
    if (this.closed) return;
    if (delivery.attempt >= this.retries) {
      this.count('failed');
      this.log.warn({ webhook: delivery.url.origin, kind: delivery.notification.kind, attempts: delivery.attempt + 1, reason: why }, 'notification webhook failed');
      return;
    }
    this.count('retried');
    const pause = this.backoffMs * 2 ** delivery.attempt;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (!this.closed) this.enqueue({ ...delivery, attempt: delivery.attempt + 1 });
    }, pause);
    timer.unref();
    this.timers.add(timer);
  }
}
