/**
 * Creating and reading jobs: POST /jobs answers the full detail with the spec's field names and
 * defaults and refuses bad bodies (422, nothing stored); GET /jobs/{job_id} is 404 for a missing or
 * deleted job and 400 for an id that is no positive integer; jobs survive a restart and ids are not
 * reused. On SQLite and PostgreSQL.
 */
import { describeDialects } from '../helpers/dialects';
import { expectError } from '../helpers/service';
import { DETAIL_KEYS, fullJob, ISO, useJobsApi } from './jobs-fixtures';

describeDialects('jobs API', (db) => {
  const api = useJobsApi(db);
  const { createJob, list } = api;

  describe('POST /jobs', () => {
    test('creates a job (201) and answers the full detail, the spec field names and types', async () => {
      const before = Date.now();
      const res = await api.h.post('/api/v1/jobs', fullJob());
      expect(res.status).toBe(201);
      const job = res.body;
      expect(Object.keys(job).sort()).toEqual(DETAIL_KEYS);
      expect(job).toEqual({
        id: expect.any(Number),
        printer_id: 'x1c-01',
        printer_name: 'Bambu x1c-01',
        job_name: 'Gearbox housing',
        filename: 'gearbox_housing.3mf',
        status: 'printing',
        progress: 0,
        layer_current: null,
        layer_total: 320,
        start_time: '2026-03-11T07:00:00.000Z',
        end_time: null,
        estimated_duration: 5400,
        filament_usage: [],
        actual_duration: null,
        estimated_completion: '2026-03-11T08:30:00.000Z',
        material_info: { type: 'PETG', brand: 'Prusament', color: 'Galaxy Black', estimated_usage: 87.5, actual_usage: 12.25, cost_per_gram: 0.03 },
        file_info: {
          filename: 'gearbox_housing.3mf',
          size: 2_345_678,
          path: '/cache/gearbox_housing.3mf',
          hash: 'sha256:' + 'ab'.repeat(32),
          uploaded_at: null,
        },
        print_settings: { layer_height: 0.2, infill: 15, print_speed: 250, nozzle_temp: 250, bed_temp: 80 },
        costs: { material_cost: 2.5, power_cost: 0.75, labor_cost: 5, total_cost: 8.25 },
        quality_metrics: { first_layer_adhesion: null, surface_finish: null, dimensional_accuracy: null },
        is_business: true,
        customer_info: { order_id: 'ORD-1001', customer_name: 'ACME GmbH' },
        notes: 'handle with care',
        queue_item_id: null,
        created_at: expect.stringMatching(ISO),
        updated_at: expect.stringMatching(ISO),
      });
      expect(Number.isInteger(job.id)).toBe(true);
      expect(Date.parse(job.created_at)).toBeGreaterThanOrEqual(before - 1);
      expect(Date.parse(job.created_at)).toBeLessThanOrEqual(Date.now());
      expect(job.updated_at).toBe(job.created_at);
      // What POST answers is what GET shows.
      expect((await api.h.get(`/api/v1/jobs/${job.id}`)).body).toEqual(job);
    });

    test('a minimal body gives a queued, private, not started job with zero costs and null details', async () => {
      const job = await createJob({ printer_id: 'mk4-01', job_name: '  Benchy  ' });
      expect(job).toMatchObject({
        printer_id: 'mk4-01',
        printer_name: 'Prusa mk4-01',
        job_name: 'Benchy',
        filename: null,
        status: 'queued',
        progress: 0,
        start_time: null,
        end_time: null,
        estimated_completion: null,
        is_business: false,
        customer_info: null,
        notes: null,
        material_info: { type: null, brand: null, color: null, estimated_usage: null, actual_usage: null, cost_per_gram: null },
        file_info: { filename: null, size: null, path: null, hash: null, uploaded_at: null },
        print_settings: { layer_height: null, infill: null, print_speed: null, nozzle_temp: null, bed_temp: null },
        costs: { material_cost: 0, power_cost: 0, labor_cost: 0, total_cost: 0 },
        quality_metrics: { first_layer_adhesion: null, surface_finish: null, dimensional_accuracy: null },
      });
    });

    test('a printing job without start_time starts now; file_info.filename stands in for filename', async () => {
      const before = Date.now();
      const job = await createJob({ status: 'printing', estimated_duration: 600, file_info: { filename: 'from_file_info.gcode' } });
      const after = Date.now();
      expect(job.start_time).toMatch(ISO);
      expect(Date.parse(job.start_time)).toBeGreaterThanOrEqual(before - 1);
      expect(Date.parse(job.start_time)).toBeLessThanOrEqual(after);
      expect(Date.parse(job.estimated_completion) - Date.parse(job.start_time)).toBe(600_000);
      expect(job.filename).toBe('from_file_info.gcode');
      expect(job.file_info.filename).toBe('from_file_info.gcode');
    });

    test('an unknown printer_id is 422 and stores nothing', async () => {
      const err = expectError(await api.h.post('/api/v1/jobs', { printer_id: 'ghost', job_name: 'x' }), 422, 'VALIDATION_ERROR');
      expect(err.details.location).toBe('body');
      expect(err.details.fields).toEqual([expect.objectContaining({ field: 'printer_id' })]);
      expect((await list()).pagination.total_items).toBe(0);
    });

    test('unknown fields are 422 and name the field, also inside nested objects', async () => {
      const top = expectError(await api.h.post('/api/v1/jobs', { printer_id: 'x1c-01', job_name: 'x', colour: 'red' }), 422, 'VALIDATION_ERROR');
      expect(top.details.fields).toEqual([{ field: 'colour', message: 'unknown field', code: 'unknown_field' }]);
      const nested = expectError(
        await api.h.post('/api/v1/jobs', { printer_id: 'x1c-01', job_name: 'x', material_info: { type: 'PLA', weight: 3 } }),
        422,
        'VALIDATION_ERROR',
      );
      expect(nested.details.fields).toEqual([{ field: 'material_info.weight', message: 'unknown field', code: 'unknown_field' }]);
      expect((await list()).pagination.total_items).toBe(0);
    });

    test('wrong types, out-of-range values and missing fields are 422 with the offending fields', async () => {
      const wrong = expectError(
        await api.h.post('/api/v1/jobs', {
          printer_id: 'x1c-01',
          job_name: 42,
          is_business: 'yes',
          estimated_duration: 1.5,
          material_cost: -1,
          status: 'completed',
          start_time: 'yesterday',
          customer_info: 'ACME',
        }),
        422,
        'VALIDATION_ERROR',
      );
      expect(wrong.details.fields.map((f: { field: string }) => f.field).sort()).toEqual(
        ['customer_info', 'estimated_duration', 'is_business', 'job_name', 'material_cost', 'start_time', 'status'].sort(),
      );
      const missing = expectError(await api.h.post('/api/v1/jobs', {}), 422, 'VALIDATION_ERROR');
      expect(missing.details.fields.map((f: { field: string }) => f.field).sort()).toEqual(['job_name', 'printer_id']);
      expectError(await api.h.post('/api/v1/jobs', { printer_id: 'x1c-01', job_name: '   ' }), 422, 'VALIDATION_ERROR');
      expectError(await api.h.post('/api/v1/jobs', '{"printer_id": "x1c-01",'), 422, 'VALIDATION_ERROR');
      expect((await list()).pagination.total_items).toBe(0);
    });
  });

  describe('GET /jobs/{job_id}', () => {
    test('a missing job is 404 JOB_NOT_FOUND, a deleted one too', async () => {
      const err = expectError(await api.h.get('/api/v1/jobs/999'), 404, 'JOB_NOT_FOUND');
      expect(err.details).toEqual({ job_id: 999 });
      const job = await createJob();
      expect((await api.h.get(`/api/v1/jobs/${job.id}`)).status).toBe(200);
      expect((await api.h.del(`/api/v1/jobs/${job.id}`)).status).toBe(200);
      expectError(await api.h.get(`/api/v1/jobs/${job.id}`), 404, 'JOB_NOT_FOUND');
    });

    test('an id that is not a positive integer is 400 on every job route', async () => {
      for (const bad of ['abc', '1.5', '0', '-1', '99999999999999999999']) {
        const err = expectError(await api.h.get(`/api/v1/jobs/${bad}`), 400, 'VALIDATION_ERROR');
        expect(err.details.location).toBe('path');
        expect(err.details.fields[0].field).toBe('job_id');
      }
      expectError(await api.h.put('/api/v1/jobs/abc', { notes: 'x' }), 400, 'VALIDATION_ERROR');
      expectError(await api.h.del('/api/v1/jobs/abc'), 400, 'VALIDATION_ERROR');
      expectError(await api.h.post('/api/v1/jobs/abc/cancel'), 400, 'VALIDATION_ERROR');
    });
  });

  test('jobs survive a restart, and ids are not reused', async () => {
    const a = (await api.h.post('/api/v1/jobs', fullJob())).body;
    const b = await createJob({ printer_id: 'mk4-01', status: 'printing' });
    const c = await createJob({ job_name: 'to delete' });
    await api.h.put(`/api/v1/jobs/${a.id}`, { notes: 'edited', quality_metrics: { surface_finish: 'rough' } });
    await api.h.post(`/api/v1/jobs/${b.id}/cancel`);
    await api.h.del(`/api/v1/jobs/${c.id}`);
    const detailA = (await api.h.get(`/api/v1/jobs/${a.id}`)).body;
    const detailB = (await api.h.get(`/api/v1/jobs/${b.id}`)).body;
    const listed = await list();

    api.h = await api.h.restart();

    expect((await api.h.get(`/api/v1/jobs/${a.id}`)).body).toEqual(detailA);
    expect(detailA).toMatchObject({ notes: 'edited', quality_metrics: { surface_finish: 'rough' }, customer_info: { order_id: 'ORD-1001' } });
    expect((await api.h.get(`/api/v1/jobs/${b.id}`)).body).toEqual(detailB);
    expect(detailB.status).toBe('cancelled');
    expectError(await api.h.get(`/api/v1/jobs/${c.id}`), 404, 'JOB_NOT_FOUND');
    expect(await list()).toEqual(listed);
    const d = await createJob();
    expect(d.id).toBeGreaterThan(c.id);
  });
});
