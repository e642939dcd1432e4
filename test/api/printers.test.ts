
import { CreatePrinterBody } from '../../service/schemas/printers';
import { describeDialects } from '../helpers/dialects';
import { bambu, expectError, prusa, startService, type Harness } from '../helpers/service';

describeDialects('printers API', (db) => {
  let h: Harness;
  beforeEach(async () => {
    h = await startService(await db.options());
  });
  afterEach(() => h.close());

  test('adding a Bambu printer answers 201 with configuring/testing', async () => {
    const res = await h.post('/api/v1/printers', bambu());
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: 'x1c-01',
      name: 'Bambu x1c-01',
      type: 'bambu_lab',
      status: 'configuring',
      connection_status: 'testing',
      message: expect.any(String),
      created_at: expect.any(String),
    });
    expect(Date.parse(res.body.created_at)).not.toBeNaN();
  });

  test('the list keeps the creation order of printers created within one millisecond', async () => {
    // Ids that sort the other way round, created back to back (the demo farm registers its printers so).
    const ids = ['mk4-05', 'mk4-04', 'mk4-03', 'mk4-02', 'mk4-01'];
    for (const id of ids) await h.service.context.printers.create(CreatePrinterBody.parse(prusa(id, { is_active: false })));
    const listed = (await h.get('/api/v1/printers')).body.printers as { id: string; created_at: string }[];
    expect(listed.map((p) => p.id)).toEqual(ids);
    expect(new Set(listed.map((p) => p.created_at)).size).toBe(ids.length);
  });

  test('the list has every printer without access codes, with counts and filters', async () => {
    await h.post('/api/v1/printers', bambu());
    await h.post('/api/v1/printers', prusa());
    await h.post('/api/v1/printers', prusa('mk4-02', { is_active: false }));

    const all = await h.get('/api/v1/printers');
    expect(all.status).toBe(200);
    expect(all.body.total_count).toBe(3);
    expect(all.body.active_count).toBe(2);
    expect(all.body.printers.map((p: { id: string }) => p.id)).toEqual(['x1c-01', 'mk4-01', 'mk4-02']);
    expect(all.text).not.toContain('12345678');
    expect(all.text).not.toContain('secret-password');
    for (const p of all.body.printers) expect(p).not.toHaveProperty('access_code');

    const x1c = all.body.printers[0];
    expect(x1c).toEqual({
      id: 'x1c-01',
      name: 'Bambu x1c-01',
      type: 'bambu_lab',
      model: 'X1C',
      ip_address: '192.168.1.20',
      serial_number: '01S00A000000001',
      status: 'configuring',
      connection_status: 'testing',
      current_job: null,
      temperatures: { nozzle: expect.any(Number), bed: expect.any(Number), chamber: expect.any(Number) },
      is_active: true,
      last_seen: null,
      created_at: expect.any(String),
      // Nothing reported yet; a new printer's plate is clear (the print queue).
      nozzle_diameter: null,
      materials: [],
      plate_state: 'clear',
      plate_auto_clear: false,
      attention: [],
      // An X1C's camera is RTSPS; not available while the printer is not connected.
      camera: { available: false, source: 'rtsp', fps: 5 },
    });
    // Chamber temperature is a Bambu thing.
    expect(all.body.printers[1].temperatures).not.toHaveProperty('chamber');

    const active = await h.get('/api/v1/printers?active=true');
    expect(active.body.printers.map((p: { id: string }) => p.id)).toEqual(['x1c-01', 'mk4-01']);
    const inactive = await h.get('/api/v1/printers?active=false');
    expect(inactive.body.printers.map((p: { id: string }) => p.id)).toEqual(['mk4-02']);
    const prusas = await h.get('/api/v1/printers?type=prusa_core');
    expect(prusas.body.printers.map((p: { id: string }) => p.id)).toEqual(['mk4-01', 'mk4-02']);
    // Counts describe the fleet, not the filtered page.
    expect(prusas.body.total_count).toBe(3);
  });

  test('the detail has the access code, statistics, capabilities, targets and the current job', async () => {
    await h.post('/api/v1/printers', bambu());
    const job = await h.post('/api/v1/jobs', { printer_id: 'x1c-01', job_name: 'Benchy', status: 'printing', layer_total: 250 });
    expect(job.status).toBe(201);

    const res = await h.get('/api/v1/printers/x1c-01');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: 'x1c-01',
      access_code: '12345678',
      firmware_version: null,
      temperatures: { nozzle: 0, bed: 0, chamber: 0, nozzle_target: 0, bed_target: 0 },
      statistics: { total_jobs: 1, successful_jobs: 0, failed_jobs: 0, total_print_time: 0, material_used_total: 0 },
      capabilities: { has_camera: true, has_ams: true, supports_remote_control: true },
      current_job: {
        id: job.body.id,
        name: 'Benchy',
        status: 'printing',
        progress: 0,
        estimated_remaining: null,
        layer_current: null,
        layer_total: 250,
        started_at: job.body.start_time,
      },
    });
    for (const key of ['total_jobs', 'successful_jobs', 'failed_jobs']) expect(Number.isInteger(res.body.statistics[key])).toBe(true);
  });

  test('a taken id is 409, a missing printer is 404', async () => {
    await h.post('/api/v1/printers', bambu());
    expectError(await h.post('/api/v1/printers', bambu()), 409, 'PRINTER_EXISTS');
    expectError(await h.get('/api/v1/printers/nope'), 404, 'PRINTER_NOT_FOUND');
    expectError(await h.put('/api/v1/printers/nope', { name: 'x' }), 404, 'PRINTER_NOT_FOUND');
    expectError(await h.del('/api/v1/printers/nope'), 404, 'PRINTER_NOT_FOUND');
  });

  test('a Bambu printer without serial number, or an address that is no host, is 400 INVALID_PRINTER_CONFIG', async () => {
    const noSerial = { ...bambu() } as Record<string, unknown>;
    delete noSerial.serial_number;
    const err = expectError(await h.post('/api/v1/printers', noSerial), 400, 'INVALID_PRINTER_CONFIG');
    expect(err.details.fields).toEqual([expect.objectContaining({ field: 'serial_number' })]);

    for (const ip of ['not a host', 'http://192.168.1.2', '192.168.1.300', '-bad-.local', 'a'.repeat(64) + '.local']) {
      const e = expectError(await h.post('/api/v1/printers', prusa('p1', { ip_address: ip })), 400, 'INVALID_PRINTER_CONFIG');
      expect(e.details.fields[0].field).toBe('ip_address');
    }
    expect((await h.get('/api/v1/printers')).body.total_count).toBe(0);

    for (const ip of ['10.0.0.5', 'fe80::1', 'printer-7.farm.lan']) {
      expect((await h.post('/api/v1/printers', prusa(`ok-${ip.replace(/[^a-z0-9]/g, '')}`, { ip_address: ip }))).status).toBe(201);
    }
  });

  test('a Prusa printer authenticates with Digest unless configured for its API key; auth_method does not apply to Bambu', async () => {
    expect((await h.post('/api/v1/printers', prusa('mk4-digest'))).status).toBe(201);
    expect((await h.get('/api/v1/printers/mk4-digest')).body.auth_method).toBeNull();
    expect((await h.post('/api/v1/printers', prusa('mk3-key', { auth_method: 'api_key' }))).status).toBe(201);
    expect((await h.get('/api/v1/printers/mk3-key')).body.auth_method).toBe('api_key');
    expect((await h.put('/api/v1/printers/mk3-key', { auth_method: null })).status).toBe(200);
    expect((await h.get('/api/v1/printers/mk3-key')).body.auth_method).toBeNull();
    const err = expectError(await h.post('/api/v1/printers', bambu('x1-key', { auth_method: 'api_key' })), 400, 'INVALID_PRINTER_CONFIG');
    expect(err.details.fields).toEqual([{ field: 'auth_method', message: 'does not apply to bambu_lab printers' }]);
    expectError(await h.post('/api/v1/printers', prusa('mk4-x', { auth_method: 'basic' })), 422);
  });

  test('body problems are 422 with the offending fields', async () => {
    const wrongType = expectError(await h.post('/api/v1/printers', { ...bambu(), type: 'octoprint', is_active: 'yes' }), 422, 'VALIDATION_ERROR');
    expect(wrongType.details.fields.map((f: { field: string }) => f.field).sort()).toEqual(['is_active', 'type']);
    const unknown = expectError(await h.post('/api/v1/printers', { ...bambu(), colour: 'red' }), 422, 'VALIDATION_ERROR');
    expect(unknown.details.fields).toEqual([{ field: 'colour', message: 'unknown field', code: 'unknown_field' }]);
    const missing = expectError(await h.post('/api/v1/printers', {}), 422, 'VALIDATION_ERROR');
    expect(missing.details.fields.map((f: { field: string }) => f.field).sort()).toEqual(['ip_address', 'name', 'type']);
  });

  test('query problems are 400', async () => {
    const err = expectError(await h.get('/api/v1/printers?type=octoprint&active=maybe'), 400, 'VALIDATION_ERROR');
    expect(err.details.location).toBe('query');
  });

  test('without an id the printer gets one from its name', async () => {
    const body = { ...prusa(), name: 'Prusa MK4 #2' } as Record<string, unknown>;
    delete body.id;
    const first = await h.post('/api/v1/printers', body);
    const second = await h.post('/api/v1/printers', body);
    expect([first.body.id, second.body.id]).toEqual(['prusa-mk4-2', 'prusa-mk4-2-2']);
  });

  test('PUT changes name, address and activity; DELETE removes the printer and keeps its jobs', async () => {
    await h.post('/api/v1/printers', bambu());
    const put = await h.put('/api/v1/printers/x1c-01', { name: 'Renamed', ip_address: '10.1.1.1', is_active: false });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({ id: 'x1c-01', message: expect.any(String), updated_at: expect.any(String) });
    const detail = await h.get('/api/v1/printers/x1c-01');
    expect(detail.body).toMatchObject({ name: 'Renamed', ip_address: '10.1.1.1', is_active: false, status: 'offline', connection_status: 'disconnected' });
    expectError(await h.put('/api/v1/printers/x1c-01', {}), 422, 'VALIDATION_ERROR');
    expectError(await h.put('/api/v1/printers/x1c-01', { ip_address: 'no host' }), 400, 'INVALID_PRINTER_CONFIG');

    const job = await h.post('/api/v1/jobs', { printer_id: 'x1c-01', job_name: 'Kept' });
    const del = await h.del('/api/v1/printers/x1c-01');
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ id: 'x1c-01', message: expect.any(String), deleted_at: expect.any(String) });
    expectError(await h.get('/api/v1/printers/x1c-01'), 404, 'PRINTER_NOT_FOUND');
    const kept = await h.get(`/api/v1/jobs/${job.body.id}`);
    expect(kept.body).toMatchObject({ printer_id: 'x1c-01', printer_name: 'Renamed' });
  });

  test('printers survive a restart', async () => {
    await h.post('/api/v1/printers', bambu());
    h = await h.restart();
    const res = await h.get('/api/v1/printers/x1c-01');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: 'x1c-01', access_code: '12345678', serial_number: '01S00A000000001' });
  });

  test('access codes never reach the log', async () => {
    await h.post('/api/v1/printers', bambu('x1', { access_code: 'TOPSECRET1' }));
    await h.get('/api/v1/printers/x1');
    expect(JSON.stringify(h.logs)).not.toContain('TOPSECRET1');
    const line = h.logs.find((l) => l.msg === 'request' && l.method === 'POST');
    expect(line).toMatchObject({ method: 'POST', path: '/api/v1/printers', status: 201, ms: expect.any(Number), req_id: expect.any(String) });
  });

  test('a name with a NUL character round-trips on SQLite; PostgreSQL cannot store it, which is a 422 with nothing written', async () => {
    const res = await h.post('/api/v1/printers', prusa('nul-1', { name: 'before\u0000after' }));
    if (db.name === 'sqlite') {
      expect(res.status).toBe(201);
      expect((await h.get('/api/v1/printers/nul-1')).body.name).toBe('before\u0000after');
    } else {
      expect(expectError(res, 422, 'VALIDATION_ERROR').details).toEqual({ location: 'body', reason: 'nul_character' });
      expect((await h.get('/api/v1/printers/nul-1')).status).toBe(404);
    }
  });
});
