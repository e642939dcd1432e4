import type { JobPatch } from '../../service/db/repositories/jobs';
import { calendarDate } from '../../service/util/time';
import { describeDialects } from '../helpers/dialects';
import { bambu, expectError, prusa, startService, type Harness } from '../helpers/service';

const TZ = 'Europe/Berlin';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const DAY = 86_400_000;

/** The keys of a job in the list (spec section 2, "Job"), plus `queue_item_id` (the print queue's link, issue 13). */
const LIST_KEYS = [
  'id',
  'printer_id',
  'printer_name',
  'job_name',
  'filename',
  'status',
  'progress',
  'layer_current',
  'layer_total',
  'start_time',
  'end_time',
  'estimated_duration',
  'actual_duration',
  'estimated_completion',
  'material_info',
  'file_info',
  'costs',
  'is_business',
  'customer_info',
  'queue_item_id',
  'created_at',
  'updated_at',
].sort();
const DETAIL_KEYS = [...LIST_KEYS, 'print_settings', 'quality_metrics', 'notes'].sort();

/** A manual job with every field the create body takes. */
const fullJob = (extra: Record<string, unknown> = {}) => ({
  printer_id: 'x1c-01',
  job_name: 'Gearbox housing',
  filename: 'gearbox_housing.3mf',
  status: 'printing',
  start_time: '2026-03-11T08:00:00+01:00',
  estimated_duration: 5400,
  layer_total: 320,
  material_info: { type: 'PETG', brand: 'Prusament', color: 'Galaxy Black', estimated_usage: 87.5, actual_usage: 12.25, cost_per_gram: 0.03 },
  file_info: { size: 2_345_678, path: '/cache/gearbox_housing.3mf', hash: 'sha256:' + 'ab'.repeat(32) },
  print_settings: { layer_height: 0.2, infill: 15, print_speed: 250, nozzle_temp: 250, bed_temp: 80 },
  is_business: true,
  customer_info: { order_id: 'ORD-1001', customer_name: 'ACME GmbH' },
  material_cost: 2.5,
  power_cost: 0.75,
  labor_cost: 5,
  notes: 'handle with care',
  ...extra,
});

describeDialects('jobs API', (db) => {
  let h: Harness;
  beforeEach(async () => {
    h = await startService({ env: { TIMEZONE: TZ }, ...(await db.options()) });
    // Inactive printers: the service does not connect to them, so a cancel changes the job in the db only
    // (cancels that reach a printer are proven against the simulators in test/e2e).
    expect((await h.post('/api/v1/printers', bambu('x1c-01', { is_active: false }))).status).toBe(201);
    expect((await h.post('/api/v1/printers', prusa('mk4-01', { is_active: false }))).status).toBe(201);
  });
  afterEach(() => h.close());

  async function createJob(body: Record<string, unknown> = {}) {
    const res = await h.post('/api/v1/jobs', { printer_id: 'x1c-01', job_name: 'Job', ...body });
    expect(res.status).toBe(201);
    return res.body;
  }
  /** Test setup through the data layer: moves a job to a state the API cannot reach by itself. */
  async function setJob(id: number, patch: JobPatch) {
    expect(await h.service.context.store.jobs.update(id, patch)).toBe(true);
  }
  async function list(query = '') {
    const res = await h.get(`/api/v1/jobs${query}`);
    expect(res.status).toBe(200);
    return res.body;
  }
  const ids = (body: { jobs: { id: number }[] }) => body.jobs.map((j) => j.id);

  describe('POST /jobs', () => {
    test('creates a job (201) and answers the full detail, the spec field names and types', async () => {
      const before = Date.now();
      const res = await h.post('/api/v1/jobs', fullJob());
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
      expect((await h.get(`/api/v1/jobs/${job.id}`)).body).toEqual(job);
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
      const err = expectError(await h.post('/api/v1/jobs', { printer_id: 'ghost', job_name: 'x' }), 422, 'VALIDATION_ERROR');
      expect(err.details.location).toBe('body');
      expect(err.details.fields).toEqual([expect.objectContaining({ field: 'printer_id' })]);
      expect((await list()).pagination.total_items).toBe(0);
    });

    test('unknown fields are 422 and name the field, also inside nested objects', async () => {
      const top = expectError(await h.post('/api/v1/jobs', { printer_id: 'x1c-01', job_name: 'x', colour: 'red' }), 422, 'VALIDATION_ERROR');
      expect(top.details.fields).toEqual([{ field: 'colour', message: 'unknown field', code: 'unknown_field' }]);
      const nested = expectError(
        await h.post('/api/v1/jobs', { printer_id: 'x1c-01', job_name: 'x', material_info: { type: 'PLA', weight: 3 } }),
        422,
        'VALIDATION_ERROR',
      );
      expect(nested.details.fields).toEqual([{ field: 'material_info.weight', message: 'unknown field', code: 'unknown_field' }]);
      expect((await list()).pagination.total_items).toBe(0);
    });

    test('wrong types, out-of-range values and missing fields are 422 with the offending fields', async () => {
      const wrong = expectError(
        await h.post('/api/v1/jobs', {
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
      const missing = expectError(await h.post('/api/v1/jobs', {}), 422, 'VALIDATION_ERROR');
      expect(missing.details.fields.map((f: { field: string }) => f.field).sort()).toEqual(['job_name', 'printer_id']);
      expectError(await h.post('/api/v1/jobs', { printer_id: 'x1c-01', job_name: '   ' }), 422, 'VALIDATION_ERROR');
      expectError(await h.post('/api/v1/jobs', '{"printer_id": "x1c-01",'), 422, 'VALIDATION_ERROR');
      expect((await list()).pagination.total_items).toBe(0);
    });
  });

  describe('GET /jobs/{job_id}', () => {
    test('a missing job is 404 JOB_NOT_FOUND, a deleted one too', async () => {
      const err = expectError(await h.get('/api/v1/jobs/999'), 404, 'JOB_NOT_FOUND');
      expect(err.details).toEqual({ job_id: 999 });
      const job = await createJob();
      expect((await h.get(`/api/v1/jobs/${job.id}`)).status).toBe(200);
      expect((await h.del(`/api/v1/jobs/${job.id}`)).status).toBe(200);
      expectError(await h.get(`/api/v1/jobs/${job.id}`), 404, 'JOB_NOT_FOUND');
    });

    test('an id that is not a positive integer is 400 on every job route', async () => {
      for (const bad of ['abc', '1.5', '0', '-1', '99999999999999999999']) {
        const err = expectError(await h.get(`/api/v1/jobs/${bad}`), 400, 'VALIDATION_ERROR');
        expect(err.details.location).toBe('path');
        expect(err.details.fields[0].field).toBe('job_id');
      }
      expectError(await h.put('/api/v1/jobs/abc', { notes: 'x' }), 400, 'VALIDATION_ERROR');
      expectError(await h.del('/api/v1/jobs/abc'), 400, 'VALIDATION_ERROR');
      expectError(await h.post('/api/v1/jobs/abc/cancel'), 400, 'VALIDATION_ERROR');
    });
  });

  describe('GET /jobs', () => {
    test('list items have the list shape (detail-only fields left out), with pagination and summary', async () => {
      const created = (await h.post('/api/v1/jobs', fullJob())).body;
      const body = await list();
      expect(Object.keys(body).sort()).toEqual(['jobs', 'pagination', 'summary']);
      expect(body.jobs).toHaveLength(1);
      const item = body.jobs[0];
      expect(Object.keys(item).sort()).toEqual(LIST_KEYS);
      expect(item).toEqual({
        id: created.id,
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
        actual_duration: null,
        estimated_completion: '2026-03-11T08:30:00.000Z',
        material_info: { type: 'PETG', color: 'Galaxy Black', estimated_usage: 87.5, actual_usage: 12.25 },
        file_info: { size: 2_345_678, path: '/cache/gearbox_housing.3mf' },
        // The list leaves labor_cost out, but the total still includes it.
        costs: { material_cost: 2.5, power_cost: 0.75, total_cost: 8.25 },
        is_business: true,
        customer_info: { order_id: 'ORD-1001', customer_name: 'ACME GmbH' },
        queue_item_id: null,
        created_at: created.created_at,
        updated_at: created.updated_at,
      });
      expect(body.pagination).toEqual({ page: 1, limit: 50, total_items: 1, total_pages: 1, has_next: false, has_previous: false });
      expect(body.summary).toEqual({ active_jobs: 1, queued_jobs: 0, completed_today: 0, failed_today: 0 });
    });

    test('an empty list has zero pages', async () => {
      const body = await list();
      expect(body).toEqual({
        jobs: [],
        pagination: { page: 1, limit: 50, total_items: 0, total_pages: 0, has_next: false, has_previous: false },
        summary: { active_jobs: 0, queued_jobs: 0, completed_today: 0, failed_today: 0 },
      });
    });

    test('filters by printer_id', async () => {
      const a = await createJob({ printer_id: 'x1c-01' });
      const b = await createJob({ printer_id: 'mk4-01' });
      const c = await createJob({ printer_id: 'x1c-01' });
      expect(ids(await list('?printer_id=x1c-01'))).toEqual([c.id, a.id]);
      expect(ids(await list('?printer_id=mk4-01'))).toEqual([b.id]);
      const none = await list('?printer_id=nope');
      expect(none.jobs).toEqual([]);
      expect(none.pagination.total_items).toBe(0);
    });

    test('filters by status; running means printing; a status outside the set is 400', async () => {
      const byStatus: Record<string, number> = {};
      for (const status of ['queued', 'printing', 'paused', 'completed', 'failed', 'cancelled']) {
        const job = await createJob({ job_name: status });
        if (status !== 'queued') await setJob(job.id, { status });
        byStatus[status] = job.id;
      }
      for (const [status, id] of Object.entries(byStatus)) {
        const body = await list(`?status=${status}`);
        expect([status, ids(body)]).toEqual([status, [id]]);
        expect(body.jobs[0].status).toBe(status);
        expect(body.pagination.total_items).toBe(1);
      }
      const running = await list('?status=running');
      expect(ids(running)).toEqual([byStatus.printing]);
      expect(running.jobs[0].status).toBe('printing');

      for (const bad of ['done', 'PRINTING', '']) {
        const err = expectError(await h.get(`/api/v1/jobs?status=${bad}`), 400, 'VALIDATION_ERROR');
        expect(err.details.location).toBe('query');
        expect(err.details.fields[0].field).toBe('status');
      }
    });

    test('filters by is_business (true/false/1/0); other values are 400', async () => {
      const biz = await createJob({ is_business: true });
      const priv = await createJob({ is_business: false });
      expect(ids(await list('?is_business=true'))).toEqual([biz.id]);
      expect(ids(await list('?is_business=1'))).toEqual([biz.id]);
      expect(ids(await list('?is_business=false'))).toEqual([priv.id]);
      expect(ids(await list('?is_business=0'))).toEqual([priv.id]);
      expectError(await h.get('/api/v1/jobs?is_business=yes'), 400, 'VALIDATION_ERROR');
    });

    test('filters combine', async () => {
      const a = await createJob({ printer_id: 'x1c-01', is_business: true, status: 'printing' });
      await createJob({ printer_id: 'x1c-01', is_business: false, status: 'printing' });
      await createJob({ printer_id: 'mk4-01', is_business: true, status: 'printing' });
      await createJob({ printer_id: 'x1c-01', is_business: true, status: 'queued' });
      expect(ids(await list('?printer_id=x1c-01&is_business=true&status=running'))).toEqual([a.id]);
    });

    describe('start_date / end_date', () => {
      // Start times around the Berlin midnight between 2026-03-10 and 2026-03-11 (UTC+01:00).
      let a: number, b: number, c: number, d: number;
      beforeEach(async () => {
        a = (await createJob({ job_name: 'A', start_time: '2026-03-10T22:59:59.999Z' })).id; // 23:59:59.999 on the 10th in Berlin
        b = (await createJob({ job_name: 'B', start_time: '2026-03-10T23:00:00.000Z' })).id; // 00:00 on the 11th in Berlin
        c = (await createJob({ job_name: 'C', start_time: '2026-03-11T22:30:00.000Z' })).id; // 23:30 on the 11th in Berlin
        d = (await createJob({ job_name: 'D', start_time: '2026-03-12T10:00:00.000Z' })).id;
      });
      const sorted = (body: { jobs: { id: number }[] }) => ids(body).sort((x, y) => x - y);

      test('a date covers its whole day in the configured time zone', async () => {
        expect(sorted(await list('?start_date=2026-03-11&end_date=2026-03-11'))).toEqual([b, c]);
        expect(sorted(await list('?end_date=2026-03-10'))).toEqual([a]);
        expect(sorted(await list('?start_date=2026-03-12'))).toEqual([d]);
        expect(sorted(await list('?start_date=2026-03-10&end_date=2026-03-12'))).toEqual([a, b, c, d]);
        expect((await list('?start_date=2026-03-11&end_date=2026-03-11')).pagination.total_items).toBe(2);
        expect((await list('?start_date=2026-03-12&end_date=2026-03-11')).jobs).toEqual([]);
      });

      test('the same dates mean other instants when the time zone is UTC', async () => {
        expect((await h.put('/api/v1/settings', { timezone: 'UTC' })).status).toBe(200);
        expect(sorted(await list('?start_date=2026-03-11&end_date=2026-03-11'))).toEqual([c]);
        expect(sorted(await list('?end_date=2026-03-10'))).toEqual([a, b]);
      });

      test('full timestamps are exact, inclusive bounds, with any offset', async () => {
        expect(sorted(await list('?start_date=2026-03-10T23:00:00Z&end_date=2026-03-11T22:30:00Z'))).toEqual([b, c]);
        expect(sorted(await list('?start_date=2026-03-10T23:00:00.001Z&end_date=2026-03-11T22:29:59.999Z'))).toEqual([]);
        expect(sorted(await list(`?start_date=${encodeURIComponent('2026-03-11T00:00:00+01:00')}&end_date=2026-03-12`))).toEqual([b, c, d]);
        expect(sorted(await list(`?end_date=${encodeURIComponent('2026-03-10T23:59:59.999+01:00')}`))).toEqual([a]);
      });

      test('a job that has not started is placed by its creation time', async () => {
        const queued = await createJob({ job_name: 'not started' });
        const today = calendarDate(new Date(queued.created_at), TZ);
        const yesterday = calendarDate(new Date(Date.parse(queued.created_at) - DAY), TZ);
        expect(ids(await list(`?start_date=${today}`))).toEqual([queued.id]);
        expect(ids(await list(`?start_date=${today}&end_date=${today}`))).toEqual([queued.id]);
        expect(ids(await list(`?end_date=${yesterday}`))).not.toContain(queued.id);
        expect(sorted(await list(`?end_date=${yesterday}`))).toEqual([a, b, c, d]);
      });

      test('dates that are not ISO dates are 400', async () => {
        for (const bad of ['yesterday', '11.03.2026', '2026-13-01', '2026-03-32', '2026-02-30', '2026-04-31', '2026-02-29T10:00:00Z', '20260311']) {
          const err = expectError(await h.get(`/api/v1/jobs?start_date=${bad}`), 400, 'VALIDATION_ERROR');
          expect([bad, err.details.fields[0].field]).toEqual([bad, 'start_date']);
          expectError(await h.get(`/api/v1/jobs?end_date=${bad}`), 400, 'VALIDATION_ERROR');
        }
        // Leap days exist in leap years.
        expect((await h.get('/api/v1/jobs?start_date=2028-02-29&end_date=2028-02-29T12:00:00Z')).status).toBe(200);
      });
    });

    test('page and limit default to 1 and 50', async () => {
      const created: number[] = [];
      for (let i = 0; i < 51; i++) created.push((await createJob({ job_name: `job ${i}` })).id);
      const first = await list();
      expect(first.jobs).toHaveLength(50);
      expect(first.pagination).toEqual({ page: 1, limit: 50, total_items: 51, total_pages: 2, has_next: true, has_previous: false });
      const second = await list('?page=2');
      expect(second.jobs).toHaveLength(1);
      expect(second.pagination).toEqual({ page: 2, limit: 50, total_items: 51, total_pages: 2, has_next: false, has_previous: true });
      expect([...ids(first), ...ids(second)].sort((x, y) => x - y)).toEqual(created);
      const hundred = await list('?limit=100');
      expect(hundred.jobs).toHaveLength(51);
      expect(hundred.pagination).toMatchObject({ limit: 100, total_pages: 1, has_next: false });
    });

    test('pages are disjoint slices of the whole ordered list', async () => {
      const created: number[] = [];
      for (let i = 0; i < 7; i++) created.push((await createJob({ job_name: `job ${i}` })).id);
      const newestFirst = [...created].reverse();
      const p1 = await list('?limit=3&page=1');
      const p2 = await list('?limit=3&page=2');
      const p3 = await list('?limit=3&page=3');
      const p4 = await list('?limit=3&page=4');
      expect(ids(p1)).toEqual(newestFirst.slice(0, 3));
      expect(ids(p2)).toEqual(newestFirst.slice(3, 6));
      expect(ids(p3)).toEqual(newestFirst.slice(6));
      expect(p4.jobs).toEqual([]);
      expect(p1.pagination).toEqual({ page: 1, limit: 3, total_items: 7, total_pages: 3, has_next: true, has_previous: false });
      expect(p2.pagination).toEqual({ page: 2, limit: 3, total_items: 7, total_pages: 3, has_next: true, has_previous: true });
      expect(p3.pagination).toEqual({ page: 3, limit: 3, total_items: 7, total_pages: 3, has_next: false, has_previous: true });
      expect(p4.pagination).toEqual({ page: 4, limit: 3, total_items: 7, total_pages: 3, has_next: false, has_previous: true });
      // total_items counts the filtered jobs, not the page.
      const filtered = await list(`?limit=2&printer_id=x1c-01&page=2`);
      expect(filtered.pagination).toMatchObject({ total_items: 7, total_pages: 4 });
    });

    test('bad page and limit values are 400', async () => {
      for (const [query, field] of [
        ['limit=101', 'limit'],
        ['limit=0', 'limit'],
        ['limit=-5', 'limit'],
        ['limit=2.5', 'limit'],
        ['limit=ten', 'limit'],
        ['page=0', 'page'],
        ['page=-1', 'page'],
        ['page=abc', 'page'],
      ]) {
        const err = expectError(await h.get(`/api/v1/jobs?${query}`), 400, 'VALIDATION_ERROR');
        expect(err.details.location).toBe('query');
        expect([query, err.details.fields.map((f: { field: string }) => f.field)]).toEqual([query, [field]]);
      }
      expect((await h.get('/api/v1/jobs?limit=100')).status).toBe(200);
      expect((await h.get('/api/v1/jobs?limit=1')).status).toBe(200);
    });

    describe('order_by / order_dir', () => {
      let j1: number, j2: number, j3: number, j4: number;
      beforeEach(async () => {
        // created in this order; start times and durations in other orders
        j1 = (await createJob({ job_name: 'j1', status: 'printing', start_time: '2026-01-03T10:00:00Z', estimated_duration: 300 })).id;
        j2 = (await createJob({ job_name: 'j2', status: 'printing', start_time: '2026-01-01T10:00:00Z', estimated_duration: 5000 })).id;
        j3 = (await createJob({ job_name: 'j3' })).id; // queued: no start time, no duration
        j4 = (await createJob({ job_name: 'j4', status: 'printing', start_time: '2026-01-02T10:00:00Z', estimated_duration: 600 })).id;
        await setJob(j2, { status: 'completed', end_time: '2026-01-01T10:01:40Z', actual_duration: 100 });
      });

      test('created_at, newest first by default', async () => {
        expect(ids(await list())).toEqual([j4, j3, j2, j1]);
        expect(ids(await list('?order_by=created_at'))).toEqual([j4, j3, j2, j1]);
        expect(ids(await list('?order_by=created_at&order_dir=desc'))).toEqual([j4, j3, j2, j1]);
        expect(ids(await list('?order_by=created_at&order_dir=asc'))).toEqual([j1, j2, j3, j4]);
        expect(ids(await list('?order_dir=asc'))).toEqual([j1, j2, j3, j4]);
      });

      test('start_time, jobs not started last in either direction', async () => {
        expect(ids(await list('?order_by=start_time&order_dir=asc'))).toEqual([j2, j4, j1, j3]);
        expect(ids(await list('?order_by=start_time&order_dir=desc'))).toEqual([j1, j4, j2, j3]);
        expect(ids(await list('?order_by=start_time'))).toEqual([j1, j4, j2, j3]);
      });

      test('duration: the actual duration, else the estimate; jobs without either last', async () => {
        expect(ids(await list('?order_by=duration&order_dir=asc'))).toEqual([j2, j1, j4, j3]);
        expect(ids(await list('?order_by=duration&order_dir=desc'))).toEqual([j4, j1, j2, j3]);
      });

      test('ordering holds across pages', async () => {
        const p1 = await list('?order_by=start_time&order_dir=asc&limit=2&page=1');
        const p2 = await list('?order_by=start_time&order_dir=asc&limit=2&page=2');
        expect([...ids(p1), ...ids(p2)]).toEqual([j2, j4, j1, j3]);
      });

      test('other keys or directions are 400', async () => {
        expect(expectError(await h.get('/api/v1/jobs?order_by=job_name'), 400, 'VALIDATION_ERROR').details.fields[0].field).toBe('order_by');
        expect(expectError(await h.get('/api/v1/jobs?order_dir=up'), 400, 'VALIDATION_ERROR').details.fields[0].field).toBe('order_dir');
      });
    });

    test('the summary counts active and queued jobs and what completed or failed today, over all jobs', async () => {
      const now = new Date().toISOString();
      const twoDaysAgo = new Date(Date.now() - 2 * DAY).toISOString();
      const make = async (printer_id: string, status: string, end_time?: string) => {
        const job = await createJob({ printer_id, job_name: status });
        if (status !== 'queued') await setJob(job.id, { status, ...(end_time ? { end_time } : {}) });
        return job.id;
      };
      await make('x1c-01', 'queued');
      await make('x1c-01', 'queued');
      await make('mk4-01', 'queued');
      await make('x1c-01', 'printing');
      await make('mk4-01', 'paused');
      await make('x1c-01', 'completed', now);
      await make('mk4-01', 'completed', now);
      await make('x1c-01', 'completed', twoDaysAgo);
      await make('x1c-01', 'failed', now);
      await make('mk4-01', 'failed', twoDaysAgo);
      await make('x1c-01', 'cancelled', now);

      const all = await list();
      expect(all.summary).toEqual({ active_jobs: 2, queued_jobs: 3, completed_today: 2, failed_today: 1 });
      for (const key of Object.keys(all.summary)) expect(Number.isInteger(all.summary[key])).toBe(true);
      // Status, business and date filters narrow the list, not the summary.
      expect((await list('?status=completed&is_business=true&start_date=2020-01-01&end_date=2020-01-02')).summary).toEqual(all.summary);
      // printer_id narrows both.
      expect((await list('?printer_id=x1c-01')).summary).toEqual({ active_jobs: 1, queued_jobs: 2, completed_today: 1, failed_today: 1 });
      expect((await list('?printer_id=mk4-01')).summary).toEqual({ active_jobs: 1, queued_jobs: 1, completed_today: 1, failed_today: 0 });
    });
  });

  describe('PUT /jobs/{job_id}', () => {
    test('changes is_business, customer_info, material_cost and notes; costs add up', async () => {
      const job = await createJob({ power_cost: 0.5 });
      const res = await h.put(`/api/v1/jobs/${job.id}`, {
        is_business: true,
        customer_info: { order_id: 'ORD-7', customer_name: 'Jane Roe' },
        material_cost: 3.25,
        notes: 'rush order',
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ id: job.id, message: expect.any(String), updated_at: expect.stringMatching(ISO) });
      expect(Date.parse(res.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(job.updated_at));

      const detail = (await h.get(`/api/v1/jobs/${job.id}`)).body;
      expect(detail).toMatchObject({
        is_business: true,
        customer_info: { order_id: 'ORD-7', customer_name: 'Jane Roe' },
        notes: 'rush order',
        costs: { material_cost: 3.25, power_cost: 0.5, labor_cost: 0, total_cost: 3.75 },
        updated_at: res.body.updated_at,
        created_at: job.created_at,
        job_name: job.job_name,
        status: 'queued',
      });

      // One field at a time leaves the others alone; power and labor costs count in the total.
      expect((await h.put(`/api/v1/jobs/${job.id}`, { labor_cost: 10 })).status).toBe(200);
      const after = (await h.get(`/api/v1/jobs/${job.id}`)).body;
      expect(after.costs).toEqual({ material_cost: 3.25, power_cost: 0.5, labor_cost: 10, total_cost: 13.75 });
      expect(after).toMatchObject({ is_business: true, notes: 'rush order', customer_info: { order_id: 'ORD-7' } });
      expect((await list()).jobs[0].costs).toEqual({ material_cost: 3.25, power_cost: 0.5, total_cost: 13.75 });

      // customer_info is replaced as a whole; is_business can go back to false.
      await h.put(`/api/v1/jobs/${job.id}`, { customer_info: { customer_name: 'Other' }, is_business: false });
      const replaced = (await h.get(`/api/v1/jobs/${job.id}`)).body;
      expect(replaced.customer_info).toEqual({ customer_name: 'Other' });
      expect(replaced.is_business).toBe(false);
      expect(ids(await list('?is_business=true'))).toEqual([]);
    });

    test('quality metrics merge with what is stored', async () => {
      const job = await createJob();
      await h.put(`/api/v1/jobs/${job.id}`, { quality_metrics: { first_layer_adhesion: 'good' } });
      await h.put(`/api/v1/jobs/${job.id}`, { quality_metrics: { surface_finish: 'smooth', dimensional_accuracy: 0.05 } });
      expect((await h.get(`/api/v1/jobs/${job.id}`)).body.quality_metrics).toEqual({
        first_layer_adhesion: 'good',
        surface_finish: 'smooth',
        dimensional_accuracy: 0.05,
      });
    });

    test('an empty body, unknown fields and wrong types are 422 and change nothing; a missing job is 404', async () => {
      const job = await createJob({ notes: 'original' });
      const empty = expectError(await h.put(`/api/v1/jobs/${job.id}`, {}), 422, 'VALIDATION_ERROR');
      expect(empty.details.location).toBe('body');
      expectError(await h.put(`/api/v1/jobs/${job.id}`), 422, 'VALIDATION_ERROR');
      const unknown = expectError(await h.put(`/api/v1/jobs/${job.id}`, { notes: 'x', status: 'completed' }), 422, 'VALIDATION_ERROR');
      expect(unknown.details.fields).toEqual([{ field: 'status', message: 'unknown field', code: 'unknown_field' }]);
      const wrong = expectError(
        await h.put(`/api/v1/jobs/${job.id}`, { is_business: 'yes', material_cost: -2, notes: 5, customer_info: ['a'] }),
        422,
        'VALIDATION_ERROR',
      );
      expect(wrong.details.fields.map((f: { field: string }) => f.field).sort()).toEqual(['customer_info', 'is_business', 'material_cost', 'notes']);
      const after = (await h.get(`/api/v1/jobs/${job.id}`)).body;
      expect(after).toEqual(job);

      expectError(await h.put('/api/v1/jobs/999', { notes: 'x' }), 404, 'JOB_NOT_FOUND');
    });
  });

  describe('DELETE /jobs/{job_id}', () => {
    test('deletes the job; afterwards it is 404 and gone from the list', async () => {
      const keep = await createJob({ job_name: 'keep' });
      const gone = await createJob({ job_name: 'gone' });
      const res = await h.del(`/api/v1/jobs/${gone.id}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ id: gone.id, message: expect.any(String), deleted_at: expect.stringMatching(ISO) });
      expectError(await h.get(`/api/v1/jobs/${gone.id}`), 404, 'JOB_NOT_FOUND');
      expectError(await h.del(`/api/v1/jobs/${gone.id}`), 404, 'JOB_NOT_FOUND');
      expectError(await h.post(`/api/v1/jobs/${gone.id}/cancel`), 404, 'JOB_NOT_FOUND');
      const body = await list();
      expect(ids(body)).toEqual([keep.id]);
      expect(body.pagination.total_items).toBe(1);
    });

    test('auto-created jobs are deleted like manual ones', async () => {
      const auto = await createJob({
        status: 'printing',
        customer_info: { auto_created: true, discovery_time: '2026-03-11T08:00:00Z', discovered_on_startup: false },
      });
      expect((await h.del(`/api/v1/jobs/${auto.id}`)).status).toBe(200);
      expectError(await h.get(`/api/v1/jobs/${auto.id}`), 404, 'JOB_NOT_FOUND');
      expect((await list()).summary.active_jobs).toBe(0);
    });
  });

  describe('POST /jobs/{job_id}/cancel', () => {
    test('cancels a printing job: status, end_time and actual_duration are set', async () => {
      const startedAt = Date.now() - 3_600_000;
      const job = await createJob({ status: 'printing', start_time: new Date(startedAt).toISOString() });
      expect((await list()).summary.active_jobs).toBe(1);

      const res = await h.post(`/api/v1/jobs/${job.id}/cancel`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ id: job.id, status: 'cancelled', message: expect.any(String), cancelled_at: expect.stringMatching(ISO) });
      const cancelledAt = Date.parse(res.body.cancelled_at);
      expect(cancelledAt).toBeLessThanOrEqual(Date.now());

      const detail = (await h.get(`/api/v1/jobs/${job.id}`)).body;
      expect(detail.status).toBe('cancelled');
      expect(detail.end_time).toBe(res.body.cancelled_at);
      expect(detail.actual_duration).toBe(Math.round((cancelledAt - startedAt) / 1000));
      expect(detail.actual_duration).toBeGreaterThanOrEqual(3600);
      expect(Number.isInteger(detail.actual_duration)).toBe(true);
      expect(detail.updated_at).toBe(res.body.cancelled_at);

      const after = await list();
      expect(after.summary.active_jobs).toBe(0);
      expect(ids(await list('?status=cancelled'))).toEqual([job.id]);
    });

    test('a second cancel is 409 JOB_NOT_ACTIVE and changes nothing', async () => {
      const job = await createJob({ status: 'printing' });
      const first = await h.post(`/api/v1/jobs/${job.id}/cancel`);
      expect(first.status).toBe(200);
      const detail = (await h.get(`/api/v1/jobs/${job.id}`)).body;
      const err = expectError(await h.post(`/api/v1/jobs/${job.id}/cancel`), 409, 'JOB_NOT_ACTIVE');
      expect(err.details).toMatchObject({ job_id: job.id, status: 'cancelled' });
      expect((await h.get(`/api/v1/jobs/${job.id}`)).body).toEqual(detail);
    });

    test('completed and failed jobs cannot be cancelled (409)', async () => {
      for (const status of ['completed', 'failed']) {
        const job = await createJob({ status: 'printing' });
        const endTime = new Date().toISOString();
        await setJob(job.id, { status, end_time: endTime, actual_duration: 42 });
        const err = expectError(await h.post(`/api/v1/jobs/${job.id}/cancel`), 409, 'JOB_NOT_ACTIVE');
        expect(err.details).toMatchObject({ job_id: job.id, status });
        const detail = (await h.get(`/api/v1/jobs/${job.id}`)).body;
        expect(detail).toMatchObject({ status, end_time: endTime, actual_duration: 42 });
      }
    });

    test('queued and paused jobs can be cancelled; a job never started has no actual duration', async () => {
      const queued = await createJob();
      const res = await h.post(`/api/v1/jobs/${queued.id}/cancel`);
      expect(res.status).toBe(200);
      expect((await h.get(`/api/v1/jobs/${queued.id}`)).body).toMatchObject({ status: 'cancelled', end_time: res.body.cancelled_at, actual_duration: null });

      const paused = await createJob({ status: 'printing' });
      await setJob(paused.id, { status: 'paused' });
      expect((await h.post(`/api/v1/jobs/${paused.id}/cancel`)).body).toMatchObject({ id: paused.id, status: 'cancelled' });
      expect((await h.get(`/api/v1/jobs/${paused.id}`)).body.status).toBe('cancelled');
    });

    test('a missing job is 404', async () => {
      expectError(await h.post('/api/v1/jobs/12345/cancel'), 404, 'JOB_NOT_FOUND');
    });
  });

  test('jobs survive a restart, and ids are not reused', async () => {
    const a = (await h.post('/api/v1/jobs', fullJob())).body;
    const b = await createJob({ printer_id: 'mk4-01', status: 'printing' });
    const c = await createJob({ job_name: 'to delete' });
    await h.put(`/api/v1/jobs/${a.id}`, { notes: 'edited', quality_metrics: { surface_finish: 'rough' } });
    await h.post(`/api/v1/jobs/${b.id}/cancel`);
    await h.del(`/api/v1/jobs/${c.id}`);
    const detailA = (await h.get(`/api/v1/jobs/${a.id}`)).body;
    const detailB = (await h.get(`/api/v1/jobs/${b.id}`)).body;
    const listed = await list();

    h = await h.restart();

    expect((await h.get(`/api/v1/jobs/${a.id}`)).body).toEqual(detailA);
    expect(detailA).toMatchObject({ notes: 'edited', quality_metrics: { surface_finish: 'rough' }, customer_info: { order_id: 'ORD-1001' } });
    expect((await h.get(`/api/v1/jobs/${b.id}`)).body).toEqual(detailB);
    expect(detailB.status).toBe('cancelled');
    expectError(await h.get(`/api/v1/jobs/${c.id}`), 404, 'JOB_NOT_FOUND');
    expect(await list()).toEqual(listed);
    const d = await createJob();
    expect(d.id).toBeGreaterThan(c.id);
  });
});

describe('cancelling a job on a printer the service cannot reach', () => {
  test('is 502 PRINTER_OFFLINE and leaves the job printing', async () => {
    const h = await startService();
    try {
      await h.post('/api/v1/printers', bambu('x1c-02'));
      const job = (await h.post('/api/v1/jobs', { printer_id: 'x1c-02', job_name: 'Stuck', status: 'printing' })).body;
      const err = expectError(await h.post(`/api/v1/jobs/${job.id}/cancel`), 502, 'PRINTER_OFFLINE');
      expect(err.details.printer_id).toBe('x1c-02');
      expect((await h.get(`/api/v1/jobs/${job.id}`)).body).toMatchObject({ status: 'printing', end_time: null });
    } finally {
      await h.close();
    }
  });
});
