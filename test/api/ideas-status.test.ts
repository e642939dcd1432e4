/**
 * The life cycle of an idea, POST /ideas/{id}/status: idea -> planned -> printing -> completed,
 * back steps and archiving; moves the cycle does not allow are 409 and change nothing. A printing
 * idea follows its linked job: it completes when the job does (by event, or caught on read), not
 * when the job fails or the idea is archived; the job must exist, and deleting it unlinks the idea.
 * On SQLite and PostgreSQL.
 */
import { describeDialects } from '../helpers/dialects';
import { bambu, expectError } from '../helpers/service';
import { useIdeasApi, waitFor } from './ideas-fixtures';

describeDialects('ideas API', (db) => {
  const api = useIdeasApi(db);
  const { freshServicePerTest, sharedService, create, move, list } = api;

  describe('life cycle', () => {
    freshServicePerTest();

    test('idea -> planned -> printing -> completed, then archived and back to idea', async () => {
      const idea = await create();
      let last = idea;
      for (const status of ['planned', 'printing', 'completed', 'archived', 'idea']) {
        const res = await move(idea.id, status);
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ id: idea.id, status });
        expect(Date.parse(res.body.status_changed_at)).toBeGreaterThanOrEqual(Date.parse(last.status_changed_at));
        last = res.body;
      }
    });

    test('planned -> idea and printing -> planned go back; archived is reachable from every state', async () => {
      const idea = await create();
      expect((await move(idea.id, 'planned')).status).toBe(200);
      expect((await move(idea.id, 'idea')).body.status).toBe('idea');
      for (const path of [[], ['planned'], ['planned', 'printing'], ['planned', 'printing', 'completed']]) {
        const other = await create();
        for (const s of path) expect((await move(other.id, s)).status).toBe(200);
        expect((await move(other.id, 'archived')).body.status).toBe('archived');
      }
      const printing = await create();
      await move(printing.id, 'planned');
      await move(printing.id, 'printing');
      expect((await move(printing.id, 'planned')).body).toMatchObject({ status: 'planned', job_id: null });
    });

    test('asking for the current status changes nothing', async () => {
      const idea = await create();
      const res = await move(idea.id, 'idea');
      expect(res.status).toBe(200);
      expect(res.body).toEqual(idea);
    });

    test('refuses bad status bodies with 422', async () => {
      const idea = await create();
      for (const body of [{}, { status: 'done' }, { status: 'PLANNED' }, { status: 'planned', job_id: 1 }, { status: 'planned', extra: 1 }, { status: 'printing', job_id: 'x' }]) {
        expectError(await api.h.post(`/api/v1/ideas/${idea.id}/status`, body), 422, 'VALIDATION_ERROR');
      }
      expect((await api.h.get(`/api/v1/ideas/${idea.id}`)).body.status).toBe('idea');
    });
  });

  describe('refused moves', () => {
    sharedService();

    test.each([
      [[], 'completed'],
      [[], 'printing'],
      [['planned'], 'completed'],
      [['planned', 'printing'], 'idea'],
      [['planned', 'printing', 'completed'], 'idea'],
      [['planned', 'printing', 'completed'], 'planned'],
      [['planned', 'printing', 'completed'], 'printing'],
      [['archived'], 'planned'],
      [['archived'], 'completed'],
    ])('after %j refuses a move to %s with 409', async (path, to) => {
      const idea = await create();
      for (const s of path) expect((await move(idea.id, s)).status).toBe(200);
      const from = path.length ? path[path.length - 1] : 'idea';
      const err = expectError(await move(idea.id, to), 409, 'INVALID_STATUS_TRANSITION');
      expect(err.details).toEqual({ idea_id: idea.id, from, to, allowed: expect.any(Array) });
      expect(err.details.allowed).not.toContain(to);
      expect((await api.h.get(`/api/v1/ideas/${idea.id}`)).body.status).toBe(from);
    });
  });

  describe('linked job', () => {
    freshServicePerTest();

    let jobId: number;
    beforeEach(async () => {
      // An inactive printer: the service never connects to it.
      expect((await api.h.post('/api/v1/printers', bambu('x1c-01', { is_active: false }))).status).toBe(201);
      const job = await api.h.post('/api/v1/jobs', { printer_id: 'x1c-01', job_name: 'Dragon', status: 'printing' });
      expect(job.status).toBe(201);
      jobId = job.body.id;
    });
    async function printing(job = jobId) {
      const idea = await create({ title: 'Dragon' });
      await move(idea.id, 'planned');
      const res = await move(idea.id, 'printing', { job_id: job });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'printing', job_id: job });
      return res.body;
    }
    const completeJob = async () => {
      expect(await api.h.service.context.store.jobs.update(jobId, { status: 'completed', progress: 100, end_time: new Date().toISOString() })).toBe(true);
    };

    test('the idea completes when its job completes (job_update event)', async () => {
      const idea = await printing();
      await completeJob();
      api.h.service.context.bus.emit('job_update', { id: jobId, job_id: jobId, printer_id: 'x1c-01', change: 'status', status: 'completed', progress: 100 });
      // Read the row itself (the API also checks on read): the event alone moved it.
      await waitFor(async () => (await api.h.service.context.store.ideas.get(idea.id))?.status === 'completed', 'the idea to complete');
      expect((await api.h.get(`/api/v1/ideas/${idea.id}`)).body).toMatchObject({ status: 'completed', job_id: jobId });
    });

    test('a completion missed while not listening is caught on read', async () => {
      const idea = await printing();
      await completeJob();
      expect((await api.h.get(`/api/v1/ideas/${idea.id}`)).body).toMatchObject({ status: 'completed', job_id: jobId });
      expect((await list('?status=completed')).ideas.map((i: { id: number }) => i.id)).toEqual([idea.id]);
    });

    test('a job that fails or is cancelled leaves the idea printing', async () => {
      const idea = await printing();
      expect((await api.h.post(`/api/v1/jobs/${jobId}/cancel`)).status).toBe(200);
      expect((await api.h.get(`/api/v1/ideas/${idea.id}`)).body).toMatchObject({ status: 'printing', job_id: jobId });
    });

    test('an archived idea does not follow its job', async () => {
      const idea = await printing();
      await move(idea.id, 'archived');
      await completeJob();
      api.h.service.context.bus.emit('job_update', { id: jobId, job_id: jobId, printer_id: 'x1c-01', change: 'status', status: 'completed', progress: 100 });
      expect((await api.h.get(`/api/v1/ideas/${idea.id}`)).body).toMatchObject({ status: 'archived', job_id: jobId });
    });

    test('linking a job that has already completed completes the idea', async () => {
      await completeJob();
      const idea = await create();
      await move(idea.id, 'planned');
      expect((await move(idea.id, 'printing', { job_id: jobId })).body).toMatchObject({ status: 'completed', job_id: jobId });
    });

    test('the job must exist (422 naming job_id)', async () => {
      const idea = await create();
      await move(idea.id, 'planned');
      const err = expectError(await move(idea.id, 'printing', { job_id: 424242 }), 422, 'VALIDATION_ERROR');
      expect(err.details.fields).toEqual([{ field: 'job_id', message: 'no job 424242', code: 'not_found' }]);
      expect((await api.h.get(`/api/v1/ideas/${idea.id}`)).body).toMatchObject({ status: 'planned', job_id: null });
    });

    test('a printing idea can be linked to another job; deleting the job unlinks it', async () => {
      const idea = await printing();
      const other = (await api.h.post('/api/v1/jobs', { printer_id: 'x1c-01', job_name: 'Dragon 2', status: 'printing' })).body.id;
      expect((await move(idea.id, 'printing', { job_id: other })).body).toMatchObject({ status: 'printing', job_id: other });
      expect((await api.h.del(`/api/v1/jobs/${other}`)).status).toBe(200);
      expect((await api.h.get(`/api/v1/ideas/${idea.id}`)).body).toMatchObject({ status: 'printing', job_id: null });
    });
  });
});
