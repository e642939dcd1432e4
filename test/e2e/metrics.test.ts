/**
 * GET /metrics against a farm of simulated printers: what a Prometheus scrape
 * sees agrees with the API, the printers' reports, /ws, downloads and the
 * database file.
 */
import fs from 'node:fs';
import path from 'node:path';
import { VERSION } from '../../service/config';
import { driverFactory } from '../../service/printers/drivers';
import { startFarm, type SimulatedFarm } from '../../service/simulators';
import { control, simState, until } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';
import { connectWs, type WsClient } from '../helpers/ws';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text format: `# HELP`/`# TYPE` comments and `name{labels} value` lines. */
function parseExposition(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (!line) continue;
    const type = /^# TYPE (\S+) (counter|gauge|histogram)$/.exec(line);
    if (type) types.set(type[1], type[2]);
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[k] = v;
    samples.push({ name: m[1], labels, value: m[3] === '+Inf' ? Infinity : Number(m[3]) });
  }
  return { samples, types };
}

describe('GET /metrics', () => {
  let farm: SimulatedFarm;
  let h: Harness;
  let ws: WsClient;

  beforeAll(async () => {
    farm = await startFarm({ bambu: 1, prusa: 1, speed: 50 });
    h = await startService({
      driverFactory: driverFactory({ backoffBaseMs: 100, backoffMaxMs: 1000 }),
      fleet: { watchdogMs: 1500, commandTimeoutMs: 3000, pollMs: 200, connectTimeoutMs: 4000 },
      downloads: { attempts: 2, retryDelayMs: 100, frameIntervalMs: 50 },
    });
    ws = await connectWs(h.base);
    for (const p of farm.printers) await h.post('/api/v1/printers', p.printer);
    // A third printer that never answers (nothing listens on port 9 of loopback).
    await h.post('/api/v1/printers', { ...farm.printers[1].printer, id: 'gone-01', name: 'Gone', http_port: 9 });
  });
  afterAll(async () => {
    await ws.close();
    await h.close();
    await farm.close();
  });

  const scrape = async () => {
    const res = await fetch(`${h.base}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    return parseExposition(await res.text());
  };
  const value = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
    samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;

  test('printers by status and connection match the API; reports are counted and their rate is positive', async () => {
    // A printer's status can move between a scrape and the API read (a loaded machine, a short watchdog):
    // the two are read together until they agree, and the comparison below shows any that never did.
    const STATUSES = ['online', 'idle', 'printing', 'paused', 'offline', 'error', 'configuring'];
    type Listed = { status: string; connection_status: string }[];
    let list: Listed = [];
    const connected = await until(async () => {
      const { samples } = await scrape();
      if (value(samples, 'printfarm_printer_connections', { connection: 'connected' }) !== 2) return null;
      list = (await h.get('/api/v1/printers')).body.printers as Listed;
      return STATUSES.every((status) => value(samples, 'printfarm_printers', { status }) === list.filter((p) => p.status === status).length) ? samples : null;
    }, 'two printers connected in the metrics, by status as GET /printers says', 20_000);
    for (const status of STATUSES) {
      expect([status, value(connected, 'printfarm_printers', { status })]).toEqual([status, list.filter((p) => p.status === status).length]);
    }
    expect(connected.filter((s) => s.name === 'printfarm_printers').reduce((sum, s) => sum + s.value, 0)).toBe(3);

    const before = value(connected, 'printfarm_printer_reports_total')!;
    expect(before).toBeGreaterThan(0);
    // An idle simulated printer goes quiet once its temperatures settle: loading another spool makes it report a
    // new state (the counter counts states that changed something; the same spool again changes nothing).
    const bambu = farm.printers.find((p) => p.printer.type === 'bambu_lab')!;
    let spool = 0;
    const later = await until(async () => {
      await control(bambu.control_url, 'materials', { materials: [{ slot: 0, type: 'PLA', color: ++spool % 2 ? '#000000' : '#FFFFFF' }] });
      const { samples } = await scrape();
      return value(samples, 'printfarm_printer_reports_total')! > before && value(samples, 'printfarm_printer_reports_per_second')! > 0 ? samples : null;
    }, 'more reports and a positive rate');
    expect(value(later, 'printfarm_printer_reports_per_second')).toBeGreaterThan(0);
  });

  test('jobs printing now agree with GET /jobs', async () => {
    const { printer, control_url } = farm.printers[0];
    const file = (await simState(control_url)).files.find((f) => /gcode/.test(f))!;
    await control(control_url, 'print', { file });
    const samples = await until(async () => {
      const { samples } = await scrape();
      return value(samples, 'printfarm_jobs', { status: 'printing' }) === 1 ? samples : null;
    }, 'one job printing in the metrics');
    const listed = (await h.get(`/api/v1/jobs?status=printing&printer_id=${printer.id}`)).body;
    expect(listed.pagination.total_items).toBe(1);
    expect(value(samples, 'printfarm_jobs', { status: 'queued' })).toBe(0);
    expect(value(samples, 'printfarm_jobs', { status: 'paused' })).toBe(0);
    await control(control_url, 'cancel');
    await until(async () => value((await scrape()).samples, 'printfarm_jobs', { status: 'printing' }) === 0, 'no job printing after the cancel');
  });

  test('/ws clients, events by type and the API latency histogram by route template', async () => {
    const extra = await connectWs(h.base);
    const { samples, types } = await scrape();
    await extra.close();
    expect(value(samples, 'printfarm_ws_clients')).toBe(2);
    expect(value(samples, 'printfarm_ws_events_total', { type: 'printer_status' })).toBeGreaterThan(0);

    for (let i = 0; i < 3; i++) await h.get('/api/v1/printers/gone-01');
    await h.get('/api/v1/printers/no-such-printer');
    await h.get('/api/v1/nothing-here');
    const after = (await scrape()).samples;
    const route = '/api/v1/printers/{printer_id}';
    expect(types.get('printfarm_http_request_duration_seconds')).toBe('histogram');
    expect(value(after, 'printfarm_http_request_duration_seconds_count', { method: 'GET', route, status: '200' })).toBeGreaterThanOrEqual(3);
    expect(value(after, 'printfarm_http_request_duration_seconds_count', { method: 'GET', route, status: '404' })).toBe(1);
    expect(value(after, 'printfarm_http_request_duration_seconds_count', { method: 'GET', route: 'unmatched', status: '404' })).toBe(1);
    // Raw paths never become labels (a label per printer id would grow without end).
    expect(after.some((s) => s.labels.route?.includes('gone-01'))).toBe(false);
    // Buckets are cumulative and end at the count.
    const buckets = after.filter((s) => s.name === 'printfarm_http_request_duration_seconds_bucket' && s.labels.route === route && s.labels.status === '200');
    expect(buckets.map((b) => b.value)).toEqual([...buckets.map((b) => b.value)].sort((a, b) => a - b));
    expect(buckets[buckets.length - 1]).toMatchObject({ labels: { le: '+Inf' }, value: value(after, 'printfarm_http_request_duration_seconds_count', { method: 'GET', route, status: '200' }) });
  });

  test('downloads running and finished, and the database size on disk', async () => {
    const printerId = farm.printers[1].printer.id;
    const files = await until(async () => {
      const body = (await h.get(`/api/v1/files?printer_id=${printerId}&limit=100`)).body;
      return body.files.length > 0 ? (body.files as { id: string; filename: string }[]) : null;
    }, 'files listed');
    await control(farm.printers[1].control_url, 'faults', { transfer_bytes_per_sec: 20_000 });
    await h.post(`/api/v1/files/${files[0].id}/download`);
    const running = await until(async () => {
      const { samples } = await scrape();
      return value(samples, 'printfarm_downloads_active') === 1 ? samples : null;
    }, 'one download running');
    expect(value(running, 'printfarm_downloads_total', { result: 'completed' })).toBeUndefined();
    await control(farm.printers[1].control_url, 'faults', { transfer_bytes_per_sec: 0 });
    const done = await until(async () => {
      const { samples } = await scrape();
      return value(samples, 'printfarm_downloads_total', { result: 'completed' }) === 1 ? samples : null;
    }, 'the download counted as completed');
    expect(value(done, 'printfarm_downloads_active')).toBe(0);

    const db = path.join(h.dataDir, 'printfarm.db');
    const onDisk = ['', '-wal', '-shm'].reduce((sum, s) => sum + (fs.existsSync(db + s) ? fs.statSync(db + s).size : 0), 0);
    const reported = value(done, 'printfarm_database_size_bytes')!;
    expect(reported).toBeGreaterThan(0);
    // The WAL may grow between the scrape and the stat, never by more than a few pages here.
    expect(Math.abs(reported - onDisk)).toBeLessThan(256 * 1024);
    expect(value(done, 'process_resident_memory_bytes')).toBeGreaterThan(10 * 1024 * 1024);
    expect(value(done, 'printfarm_info', { version: VERSION })).toBe(1);
  });

  test('every metric of the docs/api.md table is there, with its type, and the standard process metrics beside them', async () => {
    const { types } = await scrape();
    const expected: Record<string, string> = {
      printfarm_info: 'gauge',
      printfarm_printers: 'gauge',
      printfarm_printer_connections: 'gauge',
      printfarm_jobs: 'gauge',
      printfarm_printer_reports_total: 'counter',
      printfarm_printer_reports_per_second: 'gauge',
      printfarm_ws_clients: 'gauge',
      printfarm_camera_streams: 'gauge',
      printfarm_camera_connections: 'gauge',
      printfarm_ws_events_total: 'counter',
      printfarm_http_request_duration_seconds: 'histogram',
      printfarm_downloads_active: 'gauge',
      printfarm_downloads_total: 'counter',
      printfarm_rate_limited_total: 'counter',
      printfarm_notify_webhooks_total: 'counter',
      printfarm_database_size_bytes: 'gauge',
      process_resident_memory_bytes: 'gauge',
      nodejs_heap_used_bytes: 'gauge',
      process_cpu_seconds_total: 'counter',
      process_start_time_seconds: 'gauge',
      nodejs_eventloop_delay_seconds: 'gauge',
      // From prom-client's standard set, which Grafana's Node.js dashboards read.
      nodejs_eventloop_lag_seconds: 'gauge',
      nodejs_heap_size_used_bytes: 'gauge',
      nodejs_gc_duration_seconds: 'histogram',
    };
    expect(Object.fromEntries(Object.keys(expected).map((name) => [name, types.get(name)]))).toEqual(expected);
  });
});
