/**
 * Job changes that race each other. PUT /jobs/{job_id} merges quality metrics into the stored ones: two changes at
 * once must both be kept (each merged into the other's result, not into what both read). A job deleted while it is
 * being changed is not announced as changed after its removal (that window is held open by pausing the store).
 */
import { bambu, expectError, startService, type Harness } from '../helpers/service';
import { connectWs } from '../helpers/ws';

/** Pauses the next `count` reads of a job until `open()`; `entered` resolves once they all wait. Later reads pass. */
function pauseJobReads(h: Harness, count = 1) {
  const jobs = h.service.context.store.jobs;
  const get = jobs.get.bind(jobs);
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let entered!: () => void;
  const reached = new Promise<void>((resolve) => (entered = resolve));
  let waiting = 0;
  jobs.get = async (id) => {
    const job = await get(id);
    if (++waiting === count) {
      jobs.get = get;
      entered();
    }
    await gate;
    return job;
  };
  return { entered: reached, open };
}

describe('jobs: changes racing each other', () => {
  let h: Harness;
  let jobId: number;
  beforeEach(async () => {
    h = await startService();
    expect((await h.post('/api/v1/printers', bambu('x1c-j1', { is_active: false }))).status).toBe(201);
    const created = await h.post('/api/v1/jobs', { printer_id: 'x1c-j1', job_name: 'Race' });
    expect(created.status).toBe(201);
    jobId = created.body.id;
  });
  afterEach(() => h.close());

  test('two quality ratings given at once are both kept', async () => {
    // Two changes started in the same instant (what two PUTs arriving together come to).
    const jobs = h.service.context.jobs;
    await Promise.all([jobs.update(jobId, { quality_metrics: { first_layer_adhesion: 'good' } }), jobs.update(jobId, { quality_metrics: { surface_finish: 'smooth' } })]);
    expect((await h.get(`/api/v1/jobs/${jobId}`)).body.quality_metrics).toMatchObject({ first_layer_adhesion: 'good', surface_finish: 'smooth' });
  });

  test('a job changed while it is being deleted: the change answers 404 and the removal is the last word on /ws', async () => {
    const ws = await connectWs(h.base);
    try {
      const read = pauseJobReads(h);
      const change = h.put(`/api/v1/jobs/${jobId}`, { notes: 'too late' });
      await read.entered;
      expect((await h.del(`/api/v1/jobs/${jobId}`)).status).toBe(200);
      read.open();
      expectError(await change, 404, 'JOB_NOT_FOUND');
      // A later job's frame marks the end of what the race could send.
      expect((await h.post('/api/v1/jobs', { printer_id: 'x1c-j1', job_name: 'Later' })).status).toBe(201);
      await ws.next((f) => f.type === 'job_update' && f.data.job_name === 'Later');
      const ours = ws.frames.filter((f) => f.type === 'job_update' && f.data.id === jobId).map((f) => f.data.change ?? f.data.event);
      expect(ours[ours.length - 1]).toBe('deleted');
    } finally {
      await ws.close();
    }
  });
});
