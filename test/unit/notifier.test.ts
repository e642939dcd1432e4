import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import type { Store } from '../../service/db';
import { EventBus } from '../../service/events';
import type { Notification } from '../../service/notify/kinds';
import { Notifier } from '../../service/notify/notifier';
import { isNtfy, WebhookSender, webhookRequest } from '../../service/notify/webhooks';
import type { SettingsService } from '../../service/settings';

const log = pino({ level: 'silent' });

function setup(settings: Record<string, unknown> = {}) {
  const bus = new EventBus();
  const told: Notification[] = [];
  const delivered: Notification[] = [];
  bus.on('notification', (n) => told.push(n));
  const store = {
    printers: { get: async (id: string) => ({ id, name: `Printer ${id}` }) },
    jobs: { get: async (id: number) => ({ id, job_name: `Job ${id}` }) },
  } as unknown as Store;
  const values: Record<string, unknown> = { language: 'en', offline_notify_s: 1, ...settings };
  const notifier = new Notifier({
    bus,
    store,
    settings: { get: (k: string) => values[k] } as unknown as SettingsService,
    log,
    attentionOf: () => [],
    attentionTexts: () => ({}),
    deliver: (n) => delivered.push(n),
  });
  return { bus, told, delivered, notifier };
}

const until = async (probe: () => boolean, what: string) => {
  const deadline = Date.now() + 10_000;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

const status = (printer_id: string, extra: Record<string, unknown>) => ({ printer_id, change: 'state' as const, status: 'online', connection_status: 'connected', progress: 0, temperatures: { nozzle: 0, bed: 0 }, ...extra });

describe('notifier', () => {
  it('tells a finished and a failed print once each, in German when the language says so', async () => {
    const { bus, told, delivered, notifier } = setup({ language: 'de' });
    for (let i = 0; i < 3; i++) bus.emit('job_update', { id: 7, job_id: 7, printer_id: 'p1', change: 'status', status: 'completed', progress: 100 });
    bus.emit('job_update', { id: 8, job_id: 8, printer_id: 'p1', change: 'status', status: 'failed', progress: 40 });
    bus.emit('job_update', { id: 9, job_id: 9, printer_id: 'p1', change: 'progress', status: 'printing', progress: 40 });
    await until(() => told.length >= 2, 'two notifications');
    await new Promise((r) => setTimeout(r, 50));
    expect(told.map((n) => n.kind).sort()).toEqual(['print_failed', 'print_finished']);
    const done = told.find((n) => n.kind === 'print_finished')!;
    expect(done).toMatchObject({ title: 'Printer p1: Druck fertig', message: 'Job 7 ist auf Printer p1 fertig.', printer_name: 'Printer p1', severity: 'info' });
    expect(done.texts.en.message).toBe('Job 7 finished on Printer p1.');
    expect(delivered).toHaveLength(2);
    notifier.close();
  });

  it('tells a printer offline only after offline_notify_s, not when it comes back before', async () => {
    const { bus, told, notifier } = setup({ offline_notify_s: 1 });
    bus.emit('printer_status', status('quick', { status: 'offline', connection_status: 'disconnected' }));
    bus.emit('printer_status', status('quick', { status: 'online' }));
    bus.emit('printer_status', status('gone', { status: 'offline', connection_status: 'disconnected' }));
    bus.emit('printer_status', status('gone', { status: 'offline', connection_status: 'disconnected' }));
    await until(() => told.length >= 1, 'offline told');
    expect(told).toEqual([expect.objectContaining({ kind: 'printer_offline', printer_id: 'gone', severity: 'serious', message: 'Printer gone has been offline for 1 min.' })]);
    notifier.close();
  });

  it('tells a plate that needs clearing and a failed queue item once', async () => {
    const { bus, told, notifier } = setup();
    bus.emit('printer_status', status('p1', { plate_state: 'clear' }));
    bus.emit('printer_status', status('p1', { plate_state: 'needs_clearing' }));
    bus.emit('printer_status', status('p1', { plate_state: 'needs_clearing' }));
    const item = { id: 'q1', name: 'Benchy', status: 'failed', dispatches: [{ printer_id: 'p2', error: 'AMS filament ran out.' }] };
    bus.emit('queue_update', item);
    bus.emit('queue_update', item);
    await until(() => told.length >= 2, 'two told');
    await new Promise((r) => setTimeout(r, 50));
    expect(told.map((n) => [n.kind, n.message]).sort()).toEqual([
      ['plate_needs_clearing', 'The plate of Printer p1 needs clearing before the next print.'],
      ['queue_item_failed', 'The queued print Benchy failed: AMS filament ran out.'],
    ]);
    notifier.close();
  });
});

describe('webhooks', () => {
  const notification: Notification = {
    kind: 'attention',
    title: 'Drucker Ü needs attention',
    message: 'AMS A Slot 1 filament has run out.',
    printer_id: 'p1',
    printer_name: 'Drucker Ü',
    severity: 'serious',
    at: '2026-01-01T00:00:00.000Z',
    data: { x: 1 },
    cause: 'c',
    texts: { en: { title: 't', message: 'm' }, de: { title: 't', message: 'm' } },
  };

  it('posts JSON to any URL and text with ntfy headers to ntfy', () => {
    expect(isNtfy(new URL('https://ntfy.sh/farm'))).toBe(true);
    expect(isNtfy(new URL('https://ntfy.example.com/farm'))).toBe(true);
    expect(isNtfy(new URL('https://hooks.example.com/ntfy'))).toBe(false);
    const json = webhookRequest(notification, false);
    expect(JSON.parse(json.body.toString())).toEqual({ kind: 'attention', title: notification.title, message: notification.message, printer_id: 'p1', printer_name: 'Drucker Ü', severity: 'serious', at: notification.at, data: { x: 1 } });
    const ntfy = webhookRequest(notification, true);
    expect(ntfy.body.toString()).toBe(notification.message);
    expect(ntfy.headers).toMatchObject({ Priority: '4', Tags: 'warning', Title: `=?UTF-8?B?${Buffer.from(notification.title).toString('base64')}?=` });
  });

  it('sends to the URLs that want the kind, retries a failure and counts it', async () => {
    let calls = 0;
    const bodies: string[] = [];
    const server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        bodies.push(body);
        res.statusCode = ++calls === 1 ? 500 : 200;
        res.end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const counts: string[] = [];
    const sender = new WebhookSender(() => [{ url, kinds: ['attention'] }, { url, kinds: ['print_finished'] }], (r) => counts.push(r), log, { backoffMs: 10, retries: 2, timeoutMs: 2000 });
    sender.send(notification);
    await until(() => counts.includes('sent'), 'sent');
    expect(counts).toEqual(['retried', 'sent']);
    expect(bodies).toHaveLength(2);
    await sender.close();
    server.close();
  });
});
