/**
 * The client's view of the farm: REST errors as PrintfarmError, printer
 * state from /ws frames, the 30 s polling fallback while /ws is down (fake
 * timers), job starts (idle/offline -> printing), and job events from frames
 * with progress throttled per job.
 */
import { EventEmitter } from 'node:events';
import {
  FALLBACK_POLL_MS,
  FarmConnection,
  FarmMonitor,
  isJobStart,
  JobEventStream,
  PrintfarmClient,
  PrintfarmError,
  RealtimeClient,
  type Frame,
  type JobEvent,
  type PrinterSnapshot,
  type CreatePrinterInput,
  type PrinterView,
} from '../../../service/client';
import { bambu, prusa, startService, type Harness } from '../../helpers/service';

const until = async <T>(probe: () => T | undefined | null | false, what: string, ms = 5000): Promise<T> => {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe('client against a real service', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await startService();
  });
  afterEach(async () => {
    await h.close();
  });

  test('REST calls are typed; errors carry the status, code and request id; an unreachable service is NETWORK_ERROR', async () => {
    const client = new PrintfarmClient(h.base);
    expect((await client.health()).status).toBe('healthy');
    const created = await client.printers.create(bambu('x1c-01') as CreatePrinterInput);
    expect(created).toMatchObject({ id: 'x1c-01', status: 'configuring', connection_status: 'testing' });
    const err = await client.printers.create(bambu('x1c-01') as CreatePrinterInput).catch((e) => e);
    expect(err).toBeInstanceOf(PrintfarmError);
    expect(err).toMatchObject({ status: 409, retryable: false, requestId: expect.any(String) });
    const missing = await client.files.thumbnail('nope', 'extract').catch((e) => e);
    expect(missing).toMatchObject({ status: 404 });
    const down = await new PrintfarmClient('http://127.0.0.1:9').health().catch((e) => e);
    expect(down).toMatchObject({ status: 0, code: 'NETWORK_ERROR', retryable: true });
    expect(() => new PrintfarmClient('ftp://x')).toThrow(TypeError);
  });

  test('printer changes arrive through /ws without polling', async () => {
    const monitor = new FarmMonitor(new PrintfarmClient(h.base), { pollIntervalMs: 60_000 });
    const seen: PrinterSnapshot[] = [];
    monitor.on('printer', (p: PrinterSnapshot) => seen.push(p));
    await monitor.start();
    await until(() => monitor.mode === 'realtime', 'realtime');
    await h.post('/api/v1/printers', prusa('mk4-01'));
    const p = await until(() => seen.find((s) => s.id === 'mk4-01'), 'frame');
    expect(p).toMatchObject({ id: 'mk4-01', name: 'Prusa mk4-01', type: 'prusa_core', status: 'configuring' });
    await h.del('/api/v1/printers/mk4-01');
    await until(() => !monitor.printers.has('mk4-01'), 'removed');
    await monitor.close();
    expect(monitor.mode).toBe('stopped');
  });

  test('when /ws is not there, the monitor polls GET /printers', async () => {
    const client = new PrintfarmClient(h.base);
    // A path the service does not upgrade: the real-time channel stays down.
    const realtime = new RealtimeClient(`${client.wsUrl}-not-here`, { reconnectMinMs: 50, reconnectMaxMs: 100 });
    const monitor = new FarmMonitor(client, { realtime, pollIntervalMs: 100 });
    const modes: string[] = [];
    monitor.on('mode', (m: string) => modes.push(m));
    await monitor.start();
    await until(() => monitor.mode === 'polling', 'polling');
    await h.post('/api/v1/printers', prusa('mk4-02'));
    await until(() => monitor.printers.get('mk4-02'), 'polled printer');
    await monitor.close();
    expect(modes.slice(0, 2)).toEqual(['connecting', 'polling']);
  });

  test('a connection tells its state: connected, and unreachable when the service goes away', async () => {
    const conn = new FarmConnection({ baseUrl: h.base, pollIntervalMs: 100, realtime: { reconnectMinMs: 50, reconnectMaxMs: 100 } });
    const states: string[] = [];
    conn.on('state', (s: string) => states.push(s));
    await conn.open();
    await until(() => conn.state === 'connected', 'connected');
    await h.stop();
    await until(() => conn.state === 'unreachable', 'unreachable');
    await conn.close();
    expect(states).toEqual(['connecting', 'connected', 'unreachable', 'closed']);
  });
});

describe('fallback polling every 30 s (fake timers)', () => {
  afterEach(() => jest.useRealTimers());

  const view = (id: string, status: string, progress = 0): PrinterView =>
    ({
      id,
      name: id,
      type: 'bambu_lab',
      model: null,
      ip_address: '10.0.0.1',
      serial_number: null,
      status,
      connection_status: status === 'offline' ? 'disconnected' : 'connected',
      current_job: status === 'printing' ? { id: 1, name: 'Cube', status: 'printing', progress, estimated_remaining: 600 } : null,
      temperatures: { nozzle: 200, bed: 60 },
      is_active: true,
      last_seen: null,
      created_at: '2026-01-01T00:00:00Z',
    }) as PrinterView;

  test('polls every 30 s while /ws is down, detects a start from idle or offline, and stops polling when /ws is back', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
    let farm = [view('a', 'online'), view('b', 'offline'), view('c', 'paused', 50)];
    const list = jest.fn(async () => ({ printers: farm, total_count: farm.length, active_count: farm.length }));
    const client = { wsUrl: 'ws://unused', printers: { list } } as unknown as PrintfarmClient;
    const realtime = Object.assign(new EventEmitter(), { start: jest.fn(), close: jest.fn(async () => undefined) });
    const monitor = new FarmMonitor(client, { realtime: realtime as unknown as RealtimeClient });
    const starts: string[] = [];
    monitor.on('job-start', (p: PrinterSnapshot, prev: PrinterSnapshot) => starts.push(`${prev.status}->${p.id}`));

    await monitor.start();
    expect(list).toHaveBeenCalledTimes(1);
    realtime.emit('connect-failed');
    await jest.advanceTimersByTimeAsync(0);
    expect(monitor.mode).toBe('polling');
    expect(list).toHaveBeenCalledTimes(2); // at once, then every 30 s
    expect(FALLBACK_POLL_MS).toBe(30_000);

    farm = [view('a', 'printing', 1), view('b', 'printing', 2), view('c', 'printing', 51)];
    await jest.advanceTimersByTimeAsync(29_999);
    expect(list).toHaveBeenCalledTimes(2);
    expect(starts).toEqual([]);
    await jest.advanceTimersByTimeAsync(1);
    expect(list).toHaveBeenCalledTimes(3);
    // A resumed print (paused -> printing) is no start.
    expect(starts).toEqual(['online->a', 'offline->b']);

    realtime.emit('connect-failed'); // another failed reconnect does not start a second poller
    await jest.advanceTimersByTimeAsync(30_000);
    expect(list).toHaveBeenCalledTimes(4);

    realtime.emit('open');
    await jest.advanceTimersByTimeAsync(0);
    expect(monitor.mode).toBe('realtime');
    const afterOpen = list.mock.calls.length; // one resync on open
    await jest.advanceTimersByTimeAsync(120_000);
    expect(list).toHaveBeenCalledTimes(afterOpen);

    realtime.emit('close', 1006, '');
    await jest.advanceTimersByTimeAsync(0);
    expect(monitor.mode).toBe('polling');
    list.mockRejectedValueOnce(new PrintfarmError(0, 'NETWORK_ERROR', 'down'));
    await jest.advanceTimersByTimeAsync(30_000);
    expect(monitor.mode).toBe('unreachable');
    await monitor.close();
    expect(jest.getTimerCount()).toBe(0);
  });

  test('isJobStart: only idle/online/offline (and error, configuring) to printing', () => {
    expect(['online', 'idle', 'offline', 'error', 'configuring', 'paused', 'printing', undefined].map((s) => isJobStart(s, 'printing'))).toEqual([true, true, true, true, true, false, false, false]);
    expect(isJobStart('online', 'paused')).toBe(false);
  });
});

describe('job events from frames', () => {
  afterEach(() => jest.useRealTimers());

  const frame = (type: string, data: Record<string, unknown>): Frame => ({ type, timestamp: new Date().toISOString(), data });
  const update = (change: string, status: string, progress: number, id = 7) => frame('job_update', { id, job_id: id, printer_id: 'x1c', change, status, progress });

  test('auto-created, started, progress (throttled, latest kept), paused, resumed, completed; one event per end', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
    const source = new EventEmitter();
    const stream = new JobEventStream(source, { progressThrottleMs: 10_000 });
    const events: JobEvent[] = [];
    stream.on('event', (e: JobEvent) => events.push(e));
    source.emit('frame', frame('job_auto_created', { id: '7', printer_id: 'x1c', job_name: 'Cube', filename: 'Cube.3mf', status: 'running', start_time: 'now', customer_info: { auto_created: true } }));
    source.emit('frame', update('created', 'printing', 0));
    source.emit('frame', update('progress', 'printing', 1));
    source.emit('frame', update('progress', 'printing', 2));
    source.emit('frame', update('progress', 'printing', 3));
    expect(events.map((e) => [e.event, e.progress])).toEqual([
      ['auto-created', 0],
      ['started', 0],
      ['progress', 1],
    ]);
    await jest.advanceTimersByTimeAsync(10_000);
    expect(events.map((e) => [e.event, e.progress]).slice(3)).toEqual([['progress', 3]]);
    expect(events[3].job_name).toBe('Cube');
    source.emit('frame', update('status', 'paused', 40));
    source.emit('frame', update('status', 'printing', 40));
    source.emit('frame', update('progress', 'printing', 41));
    source.emit('frame', update('cancelled', 'cancelled', 41));
    source.emit('frame', update('status', 'cancelled', 41));
    await jest.advanceTimersByTimeAsync(20_000);
    expect(events.map((e) => e.event).slice(4)).toEqual(['paused', 'resumed', 'cancelled']);
    source.emit('frame', update('status', 'completed', 100, 8));
    source.emit('frame', update('status', 'failed', 12, 9));
    expect(events.map((e) => [e.event, e.job_id]).slice(7)).toEqual([
      ['completed', 8],
      ['failed', 9],
    ]);
    stream.close();
    expect(source.listenerCount('frame')).toBe(0);
  });
});
