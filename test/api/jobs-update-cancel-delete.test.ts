/**
 * Changing jobs: PUT /jobs/{job_id} edits the business fields and merges quality metrics (costs add
 * up), DELETE removes a job for good, and POST /jobs/{job_id}/cancel ends an active job (409 for one
 * that is not active, 502 when its printer cannot be reached). Bad bodies change nothing. On SQLite
 * and PostgreSQL (the unreachable printer on SQLite only, as before).
 */
import { describeDialects } from '../helpers/dialects';
import { bambu, expectError, startService } from '../helpers/service';
import { ids, ISO, useJobsApi } from './jobs-fixtures';

describeDialects('jobs API', (db) => {
  const api = useJobsApi(db);
  const { createJob, setJob, list } = api;

  describe('PUT /jobs/{job_id}', () => {
    test('changes is_business, customer_info, material_cost and notes; costs add up', async () => {
      const job = await createJob({ power_cost: 0.5 });
      const res = await api.h.put(`/api/v1/jobs/${job.id}`, {
        is_business: true,
        customer_info: { order_id: 'ORD-7', customer_name: 'Jane Roe' },
        material_cost: 3.25,
        notes: 'rush order',
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ id: job.id, message: expect.any(String), updated_at: expect.stringMatching(ISO) });
      expect(Date.parse(res.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(job.updated_at));

      const detail = (await api.h.get(`/api/v1/jobs/${job.id}`)).body;
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
      expect((await api.h.put(`/api/v1/jobs/${job.id}`, { labor_cost: 10 })).status).toBe(200);
      const after = (await api.h.get(`/api/v1/jobs/${job.id}`)).body;
      expect(after.costs).toEqual({ material_cost: 3.25, power_cost: 0.5, labor_cost: 10, total_cost: 13.75 });
      expect(after).toMatchObject({ is_business: true, notes: 'rush order', customer_info: { order_id: 'ORD-7' } });
      expect((await list()).jobs[0].costs).toEqual({ material_cost: 3.25, power_cost: 0.5, total_cost: 13.75 });

      // customer_info is replaced as a whole; is_business can go back to false.
      await api.h.put(`/api/v1/jobs/${job.id}`, { customer_info: { customer_name: 'Other' }, is_business: false });
      const replaced = (await api.h.get(`/api/v1/jobs/${job.id}`)).body;
      expect(replaced.customer_info).toEqual({ customer_name: 'Other' });
      expect(replaced.is_business).toBe(false);
      expect(ids(await list('?is_business=true'))).toEqual([]);
    });

    test('new customer data for an auto-created job keeps its auto-creation metadata (spec 2: customer_info of auto-created jobs)', async () => {
      const meta = { auto_created: true, discovery_time: '2026-03-11T08:00:05.000Z', printer_start_time: '2026-03-11T08:00:00.000Z', discovered_on_startup: false };
      const auto = await createJob({ status: 'printing', customer_info: meta });
      expect((await api.h.put(`/api/v1/jobs/${auto.id}`, { customer_info: { order_id: 'ORD-9', auto_created: false }, is_business: true })).status).toBe(200);
      expect((await api.h.get(`/api/v1/jobs/${auto.id}`)).body.customer_info).toEqual({ order_id: 'ORD-9', ...meta });
      // Clients find auto-created jobs by customer_info.auto_created (there is no filter of its own).
      expect((await list()).jobs.filter((j: { customer_info: { auto_created?: boolean } | null }) => j.customer_info?.auto_created === true).map((j: { id: number }) => j.id)).toEqual([auto.id]);
    });

    test('quality metrics merge with what is stored', async () => {
      const job = await createJob();
      await api.h.put(`/api/v1/jobs/${job.id}`, { quality_metrics: { first_layer_adhesion: 'good' } });
      await api.h.put(`/api/v1/jobs/${job.id}`, { quality_metrics: { surface_finish: 'smooth', dimensional_accuracy: 0.05 } });
      expect((await api.h.get(`/api/v1/jobs/${job.id}`)).body.quality_metrics).toEqual({
        first_layer_adhesion: 'good',
        surface_finish: 'smooth',
        dimensional_accuracy: 0.05,
      });
    });

    test('an empty body, unknown fields and wrong types are 422 and change nothing; a missing job is 404', async () => {
      const job = await createJob({ notes: 'original' });
      const empty = expectError(await api.h.put(`/api/v1/jobs/${job.id}`, {}), 422, 'VALIDATION_ERROR');
      expect(empty.details.location).toBe('body');
      expectError(await api.h.put(`/api/v1/jobs/${job.id}`), 422, 'VALIDATION_ERROR');
      const unknown = expectError(await api.h.put(`/api/v1/jobs/${job.id}`, { notes: 'x', status: 'completed' }), 422, 'VALIDATION_ERROR');
      expect(unknown.details.fields).toEqual([{ field: 'status', message: 'unknown field', code: 'unknown_field' }]);
      const wrong = expectError(
        await api.h.put(`/api/v1/jobs/${job.id}`, { is_business: 'yes', material_cost: -2, notes: 5, customer_info: ['a'] }),
        422,
        'VALIDATION_ERROR',
      );
      expect(wrong.details.fields.map((f: { field: string }) => f.field).sort()).toEqual(['customer_info', 'is_business', 'material_cost', 'notes']);
      // The spec types the customer keys it names as strings (section 2, Job customer_info).
      const customer = expectError(await api.h.put(`/api/v1/jobs/${job.id}`, { customer_info: { order_id: 1001, customer_name: ['ACME'], note: 7 } }), 422, 'VALIDATION_ERROR');
      expect(customer.details.fields.map((f: { field: string }) => f.field).sort()).toEqual(['customer_info.customer_name', 'customer_info.order_id']);
      expectError(await api.h.post('/api/v1/jobs', { printer_id: job.printer_id, job_name: 'x', customer_info: { order_id: 1001 } }), 422, 'VALIDATION_ERROR');
      const after = (await api.h.get(`/api/v1/jobs/${job.id}`)).body;
      expect(after).toEqual(job);

      expectError(await api.h.put('/api/v1/jobs/999', { notes: 'x' }), 404, 'JOB_NOT_FOUND');
    });
  });

  describe('DELETE /jobs/{job_id}', () => {
    test('deletes the job; afterwards it is 404 and gone from the list', async () => {
      const keep = await createJob({ job_name: 'keep' });
      const gone = await createJob({ job_name: 'gone' });
      const res = await api.h.del(`/api/v1/jobs/${gone.id}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ id: gone.id, message: expect.any(String), deleted_at: expect.stringMatching(ISO) });
      expectError(await api.h.get(`/api/v1/jobs/${gone.id}`), 404, 'JOB_NOT_FOUND');
      expectError(await api.h.del(`/api/v1/jobs/${gone.id}`), 404, 'JOB_NOT_FOUND');
      expectError(await api.h.post(`/api/v1/jobs/${gone.id}/cancel`), 404, 'JOB_NOT_FOUND');
      const body = await list();
      expect(ids(body)).toEqual([keep.id]);
      expect(body.pagination.total_items).toBe(1);
    });

    test('auto-created jobs are deleted like manual ones', async () => {
      const auto = await createJob({
        status: 'printing',
        customer_info: { auto_created: true, discovery_time: '2026-03-11T08:00:00Z', discovered_on_startup: false },
      });
      expect((await api.h.del(`/api/v1/jobs/${auto.id}`)).status).toBe(200);
      expectError(await api.h.get(`/api/v1/jobs/${auto.id}`), 404, 'JOB_NOT_FOUND');
      expect((await list()).summary.active_jobs).toBe(0);
    });
  });

  describe('POST /jobs/{job_id}/cancel', () => {
    test('cancels a printing job: status, end_time and actual_duration are set', async () => {
      const startedAt = Date.now() - 3_600_000;
      const job = await createJob({ status: 'printing', start_time: new Date(startedAt).toISOString() });
      expect((await list()).summary.active_jobs).toBe(1);

      const res = await api.h.post(`/api/v1/jobs/${job.id}/cancel`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ id: job.id, status: 'cancelled', message: expect.any(String), cancelled_at: expect.stringMatching(ISO) });
      const cancelledAt = Date.parse(res.body.cancelled_at);
      expect(cancelledAt).toBeLessThanOrEqual(Date.now());

      const detail = (await api.h.get(`/api/v1/jobs/${job.id}`)).body;
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
      const first = await api.h.post(`/api/v1/jobs/${job.id}/cancel`);
      expect(first.status).toBe(200);
      const detail = (await api.h.get(`/api/v1/jobs/${job.id}`)).body;
      const err = expectError(await api.h.post(`/api/v1/jobs/${job.id}/cancel`), 409, 'JOB_NOT_ACTIVE');
      expect(err.details).toMatchObject({ job_id: job.id, status: 'cancelled' });
      expect((await api.h.get(`/api/v1/jobs/${job.id}`)).body).toEqual(detail);
    });

    test('completed and failed jobs cannot be cancelled (409)', async () => {
      for (const status of ['completed', 'failed']) {
        const job = await createJob({ status: 'printing' });
        const endTime = new Date().toISOString();
        await setJob(job.id, { status, end_time: endTime, actual_duration: 42 });
        const err = expectError(await api.h.post(`/api/v1/jobs/${job.id}/cancel`), 409, 'JOB_NOT_ACTIVE');
        expect(err.details).toMatchObject({ job_id: job.id, status });
        const detail = (await api.h.get(`/api/v1/jobs/${job.id}`)).body;
        expect(detail).toMatchObject({ status, end_time: endTime, actual_duration: 42 });
      }
    });

    test('queued and paused jobs can be cancelled; a job never started has no actual duration', async () => {
      const queued = await createJob();
      const res = await api.h.post(`/api/v1/jobs/${queued.id}/cancel`);
      expect(res.status).toBe(200);
      expect((await api.h.get(`/api/v1/jobs/${queued.id}`)).body).toMatchObject({ status: 'cancelled', end_time: res.body.cancelled_at, actual_duration: null });

      const paused = await createJob({ status: 'printing' });
      await setJob(paused.id, { status: 'paused' });
      expect((await api.h.post(`/api/v1/jobs/${paused.id}/cancel`)).body).toMatchObject({ id: paused.id, status: 'cancelled' });
      expect((await api.h.get(`/api/v1/jobs/${paused.id}`)).body.status).toBe('cancelled');
    });

    test('a missing job is 404', async () => {
      expectError(await api.h.post('/api/v1/jobs/12345/cancel'), 404, 'JOB_NOT_FOUND');
    });
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
