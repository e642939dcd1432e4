
/**
 * Opt-in usage statistics on the service side: opted out by default with
 * nothing collected, opt-in/out, the local view, export and deletion, the
 * manual submission (refused when opted out), the privacy of a real payload,
 * and the scheduler driven by fake timers. Submissions go over HTTPS (test
 * CA) to a stub endpoint that records what arrives.
 */
import { describeDialects } from '../helpers/dialects';
import fs from 'node:fs';
import { countryFromTimeZone } from '../../service/usage/country';
import { detectDeploymentMode } from '../../service/usage/service';
import { bambu, expectError, prusa, startService, type Harness } from '../helpers/service';
import { fakeClock, startFaultServer, testCa, until, type FaultServer } from '../helpers/usage';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const PAYLOAD_FIELDS = [
  'installation_id', 'submitted_at', 'schema_version', 'period_start', 'period_end', 'app_version', 'platform', 'deployment_mode', 'country_code',
  'printer_count', 'printer_types', 'printer_type_counts', 'total_jobs_created', 'total_jobs_completed', 'total_jobs_failed', 'total_files_downloaded',
  'total_files_uploaded', 'uptime_hours', 'feature_usage', 'event_counts',
];

let stub: FaultServer;
let ca: string;
beforeAll(async () => {
  ca = (await testCa()).ca;
  stub = await startFaultServer();
});
afterAll(() => stub.close());

function serviceOptions(extraEnv: Record<string, string> = {}) {
  return {
    usageStats: { ca, deploymentMode: 'node-red' as const },
    env: { USAGE_STATS_ENDPOINT: `${stub.url}/submit`, USAGE_STATS_API_KEY: 'client-secret-key', TIMEZONE: 'Europe/Berlin', ...extraEnv },
  };
}

/** Counters per type as GET /usage-stats/local shows them (pending counts). */
async function pending(h: Harness): Promise<Record<string, number>> {
  const totals = (await h.get('/api/v1/usage-stats/local')).body.event_totals as Record<string, { pending: number }>;
  return Object.fromEntries(Object.entries(totals).map(([k, v]) => [k, v.pending]));
}

/** Events as the rest of the service publishes them. */
function publishActivity(h: Harness) {
  const { bus } = h.service.context;
  bus.emit('job_update', { id: 901, job_id: 901, printer_id: 'p', change: 'status', status: 'printing', progress: 50 });
  bus.emit('job_update', { id: 901, job_id: 901, printer_id: 'p', change: 'status', status: 'completed', progress: 100 });
  // The same end seen again (an update of the finished job) is not a second completion.
  bus.emit('job_update', { id: 901, job_id: 901, printer_id: 'p', change: 'updated', status: 'completed', progress: 100 });
  bus.emit('job_update', { id: 902, job_id: 902, printer_id: 'p', change: 'status', status: 'failed', progress: 12 });
  bus.emit('job_auto_created', { printer_id: 'p', id: '903', job_name: 'Benchy.3mf' });
  bus.emit('file_update', { download_id: 'd-1', status: 'downloading', progress: 50 });
  bus.emit('file_update', { download_id: 'd-1', status: 'completed', progress: 100 });
  bus.emit('file_update', { download_id: 'd-1', status: 'completed', progress: 100 });
  const status = (connection: string) => ({ printer_id: 'usage-p1', change: 'state' as const, status: 'online', connection_status: connection, progress: 0, temperatures: { nozzle: 0, bed: 0 } });
  for (const c of ['testing', 'connected', 'connected', 'disconnected', 'connected']) bus.emit('printer_status', status(c));
  bus.emit('system_alert', { level: 'error', message: 'Download of secret.3mf failed', code: 'DOWNLOAD_FAILED' });
  bus.emit('system_alert', { level: 'warning', message: 'slow link' });
}

const ACTIVITY = {
  job_completed: 1,
  job_failed: 1,
  job_auto_created: 1,
  file_downloaded: 1,
  printer_connected: 2,
  printer_disconnected: 1,
  error: 1,
  error_download_failed: 1,
};

describeDialects('usage statistics (client side)', (db) => {
  let h: Harness;
  beforeEach(async () => {
    stub.attempts.length = 0;
    stub.script([], { status: 201, body: { status: 'accepted' } });
    h = await startService({ ...serviceOptions(), ...(await db.options()) });
  });
  afterEach(() => h.close());

  test('is opted out by default: nothing is counted, stored or sent, and a manual submission is refused (409)', async () => {
    const local = await h.get('/api/v1/usage-stats/local');
    expect(local.status).toBe(200);
    expect(local.body).toMatchObject({
      opted_in: false,
      installation_id: null,
      last_submission_at: null,
      next_submission_due_at: null,
      event_totals: {},
      pending_events: 0,
      next_submission: null,
      settings: { endpoint: `${stub.url}/submit`, api_key_set: true, timeout_seconds: 10, retry_count: 3, submission_interval_days: 7 },
    });
    expect((await h.post('/api/v1/printers', bambu())).status).toBe(201);
    expect((await h.post('/api/v1/jobs', { printer_id: 'x1c-01', job_name: 'Bracket' })).status).toBe(201);
    publishActivity(h);
    const err = expectError(await h.post('/api/v1/usage-stats/submit'), 409, 'USAGE_STATS_OPTED_OUT');
    expect(err.message).toMatch(/opt in/);
    // A restart (the app start) is not counted either.
    h = await h.restart(serviceOptions());
    expect(await pending(h)).toEqual({});
    expect(await h.service.context.store.usage.countEvents()).toBe(0);
    expect((await h.get('/api/v1/usage-stats/export')).body.events).toEqual([]);
    expect(stub.attempts).toEqual([]);
  });

  test('opting in creates a random installation id; from then on events are counted (each once)', async () => {
    const res = await h.post('/api/v1/usage-stats/opt-in');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ opted_in: true, installation_id: expect.stringMatching(UUID_V4), opted_in_at: expect.any(String), message: expect.any(String) });
    const again = await h.post('/api/v1/usage-stats/opt-in', {});
    expect(again.body).toMatchObject({ installation_id: res.body.installation_id, opted_in_at: res.body.opted_in_at, message: 'Already opted in' });

    expect((await h.post('/api/v1/printers', prusa())).status).toBe(201);
    const before = await pending(h);
    expect((await h.post('/api/v1/jobs', { printer_id: 'mk4-01', job_name: 'Bracket' })).status).toBe(201);
    publishActivity(h);
    const after = await pending(h);
    const delta = Object.fromEntries(Object.keys(after).filter((k) => k !== 'uptime_seconds').map((k) => [k, after[k] - (before[k] ?? 0)]).filter(([, n]) => n !== 0));
    expect(delta).toEqual({ job_created: 1, ...ACTIVITY });

    const local = (await h.get('/api/v1/usage-stats/local')).body;
    expect(local).toMatchObject({ opted_in: true, installation_id: res.body.installation_id, next_submission_due_at: res.body.opted_in_at });
    const next = local.next_submission;
    expect(Object.keys(next).sort()).toEqual([...PAYLOAD_FIELDS].sort());
    expect(next).toMatchObject({
      installation_id: res.body.installation_id,
      schema_version: '1.0',
      period_start: res.body.opted_in_at,
      app_version: h.service.context.version,
      platform: process.platform,
      deployment_mode: 'node-red',
      country_code: 'DE',
      printer_count: 1,
      printer_types: ['prusa_core'],
      printer_type_counts: { prusa_core: 1 },
      total_jobs_created: 1,
      total_jobs_completed: 1,
      total_jobs_failed: 1,
      total_files_downloaded: 1,
      total_files_uploaded: 0,
      feature_usage: { job_creation_auto_create: true, business_mode: false, gcode_optimize_print_only: true },
    });
    expect(next.event_counts).toMatchObject({ ...ACTIVITY, job_created: 1 });
    expect(next.event_counts).not.toHaveProperty('uptime_seconds');

    // Opting in survives a restart, and the start is counted.
    h = await h.restart(serviceOptions());
    expect((await h.get('/api/v1/usage-stats/local')).body).toMatchObject({ opted_in: true, installation_id: res.body.installation_id });
    expect((await pending(h)).app_start).toBe(1);
  });

  test('a real payload carries no serial numbers, addresses, printer or file names, access codes or the API key', async () => {
    await h.put('/api/v1/settings', { business_mode: true });
    await h.post('/api/v1/usage-stats/opt-in');
    const secrets = {
      name: 'Alice Secret Workshop X1C',
      serial: '01S00C471100042',
      ip: '10.42.77.199',
      code: 'AccessCode-9876',
      name2: 'Garage Prusa of Bob',
      host: 'bobs-garage-prusa.local',
      password: 'PrusaLinkPassword-55',
      job: 'Customer-Order-4711-Bracket',
      file: 'confidential-prototype-housing.stl',
      apiKey: 'client-secret-key',
    };
    expect((await h.post('/api/v1/printers', bambu('sec-bambu', { name: secrets.name, serial_number: secrets.serial, ip_address: secrets.ip, access_code: secrets.code }))).status).toBe(201);
    expect((await h.post('/api/v1/printers', prusa('sec-prusa', { name: secrets.name2, ip_address: secrets.host, access_code: secrets.password }))).status).toBe(201);
    expect((await h.post('/api/v1/jobs', { printer_id: 'sec-bambu', job_name: secrets.job, filename: `${secrets.job}.3mf` })).status).toBe(201);
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(Buffer.from('solid x\nendsolid x\n'))]), secrets.file);
    expect((await fetch(`${h.base}/api/v1/files/upload`, { method: 'POST', body: form })).status).toBe(201);
    publishActivity(h);

    const res = await h.post('/api/v1/usage-stats/submit');
    expect(res.status).toBe(200);
    expect(stub.attempts).toHaveLength(1);
    const sent = stub.attempts[0];
    expect(sent.method).toBe('POST');
    expect(sent.url).toBe('/submit');
    expect(sent.headers['x-api-key']).toBe(secrets.apiKey);
    expect(sent.headers['content-type']).toBe('application/json');
    const payload = sent.body;
    expect(payload).toEqual(res.body.payload);
    expect(Object.keys(payload).sort()).toEqual([...PAYLOAD_FIELDS].sort());
    expect(payload).toMatchObject({
      printer_count: 2,
      printer_types: ['bambu_lab', 'prusa_core'],
      printer_type_counts: { bambu_lab: 1, prusa_core: 1 },
      total_jobs_created: 1,
      total_files_uploaded: 1,
      feature_usage: { business_mode: true },
    });
    const text = JSON.stringify(payload);
    for (const [what, value] of Object.entries(secrets)) expect([what, text.includes(value)]).toEqual([what, false]);
    expect(text).not.toMatch(/\b\d{1,3}(\.\d{1,3}){3}\b/);
    // What stays on this machine is just as clean.
    const exported = (await h.get('/api/v1/usage-stats/export')).text;
    for (const [what, value] of Object.entries(secrets)) expect([what, exported.includes(value)]).toEqual([what, false]);
  });

  test('a successful submission marks the events submitted and records the date; the next period starts there', async () => {
    const { installation_id } = (await h.post('/api/v1/usage-stats/opt-in')).body;
    publishActivity(h);
    const res = await h.post('/api/v1/usage-stats/submit', {});
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'submitted', installation_id, attempts: 1, events_submitted: expect.any(Number) });
    expect(res.body.events_submitted).toBeGreaterThan(0);
    const local = (await h.get('/api/v1/usage-stats/local')).body;
    expect(local).toMatchObject({ last_submission_at: res.body.submitted_at, last_error: null, submission_count: 1 });
    // Nothing pending but the uptime that keeps running.
    expect(Object.entries(local.event_totals).filter(([type, t]) => type !== 'uptime_seconds' && (t as { pending: number }).pending > 0)).toEqual([]);
    expect(Date.parse(local.next_submission_due_at) - Date.parse(res.body.submitted_at)).toBe(7 * 24 * 3600 * 1000);
    expect(local.next_submission.period_start).toBe(res.body.submitted_at);
    expect(local.next_submission.total_jobs_completed).toBe(0);
    expect(local.event_totals.job_completed).toEqual({ pending: 0, total: 1 });
    const events = (await h.get('/api/v1/usage-stats/export')).body.events as { submitted: boolean; submitted_at: string | null }[];
    expect(events.length).toBeGreaterThan(0);
    expect(events.every((e) => e.submitted && e.submitted_at === res.body.submitted_at)).toBe(true);
  });

  test('opting out stops collecting and sending; the collected data stays until deleted; opting in again keeps the id', async () => {
    const { installation_id } = (await h.post('/api/v1/usage-stats/opt-in')).body;
    publishActivity(h);
    const before = await pending(h);
    const out = await h.post('/api/v1/usage-stats/opt-out');
    expect(out.status).toBe(200);
    expect(out.body).toEqual({ opted_in: false, opted_out_at: expect.any(String), local_events_kept: expect.any(Number), message: expect.any(String) });
    expect(out.body.local_events_kept).toBeGreaterThan(0);
    publishActivity(h);
    const { uptime_seconds: _u1, ...was } = before;
    const { uptime_seconds: _u2, ...now } = await pending(h);
    expect(now).toEqual(was);
    expectError(await h.post('/api/v1/usage-stats/submit'), 409, 'USAGE_STATS_OPTED_OUT');
    expect((await h.get('/api/v1/usage-stats/local')).body).toMatchObject({ opted_in: false, next_submission: null, next_submission_due_at: null });
    expect((await h.post('/api/v1/usage-stats/opt-in')).body.installation_id).toBe(installation_id);
    expect(stub.attempts).toEqual([]);
  });

  test('export is a JSON download of everything stored locally', async () => {
    await h.post('/api/v1/usage-stats/opt-in');
    publishActivity(h);
    const res = await h.get('/api/v1/usage-stats/export');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="printfarm-usage-stats-\d{4}-\d{2}-\d{2}\.json"$/);
    expect(res.body).toMatchObject({ exported_at: expect.any(String), opted_in: true, event_totals: expect.any(Object) });
    const byType: Record<string, number> = {};
    for (const e of res.body.events as { type: string; count: number; submitted: boolean; bucket: string }[]) {
      expect(e.submitted).toBe(false);
      expect(e.bucket).toMatch(/T\d{2}:00:00\.000Z$/);
      byType[e.type] = (byType[e.type] ?? 0) + e.count;
    }
    expect(byType).toMatchObject(ACTIVITY);
  });

  test('delete-all removes every counter and the installation id (a new one while opted in)', async () => {
    const { installation_id } = (await h.post('/api/v1/usage-stats/opt-in')).body;
    publishActivity(h);
    const res = await h.del('/api/v1/usage-stats/delete-all');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ opted_in: true, remote: null, installation_id: expect.stringMatching(UUID_V4) });
    expect(res.body.deleted_events).toBeGreaterThan(0);
    expect(res.body.installation_id).not.toBe(installation_id);
    expect((await h.get('/api/v1/usage-stats/export')).body.events).toEqual([]);
    expect(await h.service.context.store.usage.countEvents()).toBe(0);

    await h.post('/api/v1/usage-stats/opt-out');
    const optedOut = await h.del('/api/v1/usage-stats/delete-all');
    expect(optedOut.body).toMatchObject({ opted_in: false, installation_id: null, deleted_events: 0 });
    expect((await h.get('/api/v1/usage-stats/local')).body).toMatchObject({ opted_in: false, installation_id: null, submission_count: 0, last_submission_at: null });
    // Asked to, it also asks the aggregation service to forget the installation.
    const { installation_id: id2 } = (await h.post('/api/v1/usage-stats/opt-in')).body;
    const remote = await h.del('/api/v1/usage-stats/delete-all?include_remote=true');
    expect(remote.body.remote).toEqual({ requested: true, deleted: true, status: 201, error: null });
    expect(stub.attempts.map((x) => `${x.method} ${x.url} ${x.headers['x-api-key']}`)).toEqual([`DELETE /installation/${id2} client-secret-key`]);
  });

  test('refuses bodies and queries it does not know; the API key is masked in the settings', async () => {
    expectError(await h.post('/api/v1/usage-stats/opt-in', { opted_in: true }), 422, 'VALIDATION_ERROR');
    expectError(await h.del('/api/v1/usage-stats/delete-all?include_remote=perhaps'), 400, 'VALIDATION_ERROR');
    expect((await h.get('/api/v1/usage-stats/local')).body.opted_in).toBe(false);
    expect((await h.get('/api/v1/settings')).body.usage_stats_api_key).toBe('********');
  });

  test('a failing submission answers 502 with the reason and leaves the service and the counters alone', async () => {
    await h.put('/api/v1/settings', { usage_stats_endpoint: stub.url.replace('https:', 'http:') + '/submit' });
    await h.post('/api/v1/usage-stats/opt-in');
    publishActivity(h);
    const before = await pending(h);
    const err = expectError(await h.post('/api/v1/usage-stats/submit'), 502, 'USAGE_SUBMISSION_FAILED');
    expect(err.message).toMatch(/must use https/);
    expect(err.details).toEqual({ attempts: 0, status: null, retryable: false });
    expect(stub.attempts).toEqual([]);
    const { uptime_seconds: _u1, ...was } = before;
    const { uptime_seconds: _u2, ...now } = await pending(h);
    expect(now).toEqual(was);
    expect((await h.get('/api/v1/usage-stats/local')).body.last_error).toMatch(/https/);
    expect((await h.get('/api/v1/health')).status).toBe(200);
  });
});

describe('usage statistics scheduler', () => {
  const T0 = Date.parse('2026-03-02T08:00:00.000Z');
  const MIN = 60_000;
  const HOUR = 60 * MIN;
  const DAY = 24 * HOUR;
  let h: Harness;

  beforeEach(async () => {
    stub.attempts.length = 0;
    stub.script([], { status: 201, body: { status: 'accepted' } });
    fakeClock(T0);
    h = await startService({ ...serviceOptions(), heartbeatMs: 20 * DAY });
  });
  afterEach(async () => {
    jest.useRealTimers();
    await h.close();
  });

  const submitted = () => h.logs.filter((l) => l.msg === 'usage statistics submitted').length;

  test('checks 5 minutes after start, then hourly, and submits when the last submission is usage_stats_submission_interval_days old', async () => {
    await h.post('/api/v1/usage-stats/opt-in');
    await jest.advanceTimersByTimeAsync(5 * MIN - 1);
    expect(stub.attempts).toHaveLength(0);
    // First check: never submitted, so due.
    await jest.advanceTimersByTimeAsync(1);
    await until(() => submitted() === 1, 'the first scheduled submission');
    expect(stub.attempts.map((x) => x.at)).toEqual([T0 + 5 * MIN]);
    expect(h.logs.find((l) => l.msg === 'usage statistics: submitting')).toMatchObject({ trigger: 'scheduled' });

    // Hourly checks find it not yet due for 7 days.
    await jest.advanceTimersByTimeAsync(7 * DAY - HOUR);
    expect(stub.attempts).toHaveLength(1);
    await jest.advanceTimersByTimeAsync(HOUR);
    await until(() => submitted() === 2, 'the second scheduled submission');
    expect(stub.attempts.map((x) => x.at)).toEqual([T0 + 5 * MIN, T0 + 5 * MIN + 7 * DAY]);
    // The second submission covers the time since the first; uptime counts the hours in between.
    expect(stub.attempts[1].body.period_start).toBe(new Date(T0 + 5 * MIN).toISOString());
    expect(stub.attempts[1].body.uptime_hours).toBe(168);

    // A shorter interval takes effect at the next hourly check.
    await h.put('/api/v1/settings', { usage_stats_submission_interval_days: 1 });
    await jest.advanceTimersByTimeAsync(DAY - HOUR);
    expect(stub.attempts).toHaveLength(2);
    await jest.advanceTimersByTimeAsync(HOUR);
    await until(() => submitted() === 3, 'the daily submission');
    expect(stub.attempts[2].at).toBe(T0 + 5 * MIN + 8 * DAY);
  });

  test('sends nothing while opted out', async () => {
    await jest.advanceTimersByTimeAsync(5 * MIN + 3 * HOUR);
    expect(stub.attempts).toEqual([]);
    expect(h.logs.filter((l) => typeof l.msg === 'string' && (l.msg as string).startsWith('usage statistics:'))).toEqual([]);
  });

  test('a failing scheduled submission is logged and retried at the next due check, never breaking the service', async () => {
    await h.put('/api/v1/settings', { usage_stats_retry_count: 0 });
    stub.script([{ status: 500 }]);
    await h.post('/api/v1/usage-stats/opt-in');
    await jest.advanceTimersByTimeAsync(5 * MIN);
    await until(() => h.logs.some((l) => l.msg === 'usage statistics: scheduled check failed'), 'the failure log');
    expect(stub.attempts).toHaveLength(1);
    expect((await h.get('/api/v1/health')).status).toBe(200);
    // Still due (never submitted): the next hourly check tries again.
    stub.script([], { status: 201, body: {} });
    await jest.advanceTimersByTimeAsync(HOUR);
    await until(() => submitted() === 1, 'the retry an hour later');
    expect(stub.attempts.map((x) => x.at)).toEqual([T0 + 5 * MIN, T0 + 5 * MIN + HOUR]);
  });
});

test('the country comes from the time zone; unknown zones are XX', () => {
  expect(countryFromTimeZone('Europe/Berlin')).toBe('DE');
  expect(countryFromTimeZone('America/Los_Angeles')).toBe('US');
  expect(countryFromTimeZone('Asia/Tokyo')).toBe('JP');
  expect(countryFromTimeZone('UTC')).toBe('XX');
  expect(countryFromTimeZone('Mars/Olympus_Mons')).toBe('XX');
  expect(countryFromTimeZone(undefined)).toBe('XX');
});

test('the deployment mode is the one given, else docker inside a container, else standalone', () => {
  expect(detectDeploymentMode('node-red')).toBe('node-red');
  expect(detectDeploymentMode()).toBe(fs.existsSync('/.dockerenv') ? 'docker' : 'standalone');
});
