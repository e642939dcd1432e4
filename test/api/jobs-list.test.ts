/**
 * Listing jobs, GET /jobs: the list shape (detail-only fields left out), the filters by printer,
 * status, business marker and dates (whole days in the configured time zone, or exact instants),
 * pages, ordering, and the summary over all jobs; bad query values are 400. On SQLite and PostgreSQL.
 */
import { calendarDate } from '../../service/util/time';
import { describeDialects } from '../helpers/dialects';
import { expectError } from '../helpers/service';
import { DAY, fullJob, ids, LIST_KEYS, TZ, useJobsApi } from './jobs-fixtures';

describeDialects('jobs API', (db) => {
  const api = useJobsApi(db);
  const { createJob, setJob, list } = api;

  describe('GET /jobs', () => {
    test('list items have the list shape (detail-only fields left out), with pagination and summary', async () => {
      const created = (await api.h.post('/api/v1/jobs', fullJob())).body;
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
        filament_usage: [],
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
        const err = expectError(await api.h.get(`/api/v1/jobs?status=${bad}`), 400, 'VALIDATION_ERROR');
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
      expectError(await api.h.get('/api/v1/jobs?is_business=yes'), 400, 'VALIDATION_ERROR');
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
        expect((await api.h.put('/api/v1/settings', { timezone: 'UTC' })).status).toBe(200);
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
          const err = expectError(await api.h.get(`/api/v1/jobs?start_date=${bad}`), 400, 'VALIDATION_ERROR');
          expect([bad, err.details.fields[0].field]).toEqual([bad, 'start_date']);
          expectError(await api.h.get(`/api/v1/jobs?end_date=${bad}`), 400, 'VALIDATION_ERROR');
        }
        // Leap days exist in leap years.
        expect((await api.h.get('/api/v1/jobs?start_date=2028-02-29&end_date=2028-02-29T12:00:00Z')).status).toBe(200);
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
        const err = expectError(await api.h.get(`/api/v1/jobs?${query}`), 400, 'VALIDATION_ERROR');
        expect(err.details.location).toBe('query');
        expect([query, err.details.fields.map((f: { field: string }) => f.field)]).toEqual([query, [field]]);
      }
      expect((await api.h.get('/api/v1/jobs?limit=100')).status).toBe(200);
      expect((await api.h.get('/api/v1/jobs?limit=1')).status).toBe(200);
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
        expect(expectError(await api.h.get('/api/v1/jobs?order_by=job_name'), 400, 'VALIDATION_ERROR').details.fields[0].field).toBe('order_by');
        expect(expectError(await api.h.get('/api/v1/jobs?order_dir=up'), 400, 'VALIDATION_ERROR').details.fields[0].field).toBe('order_dir');
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
});
