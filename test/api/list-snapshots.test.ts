/**
 * A list page, its total and its summary are read on one snapshot of the
 * database: while jobs, files, ideas and queue items are created at the same
 * time, every GET /jobs, /files, /ideas and /queue answers a total_items that counts the items
 * it shows and a summary that agrees with them. (On PostgreSQL each statement
 * of a plain read sees its own snapshot, and the pool runs them on different
 * connections.) On SQLite and PostgreSQL.
 */
import { describeDialects } from '../helpers/dialects';
import { bambu, startService, type Harness } from '../helpers/service';

const WRITES = 40;

describeDialects('list pages under concurrent writes', (db) => {
  let h: Harness;
  beforeEach(async () => {
    h = await startService(await db.options());
    expect((await h.post('/api/v1/printers', bambu('x1c-01', { is_active: false }))).status).toBe(201);
  });
  afterEach(() => h.close());

  /** Runs `write(i)` WRITES times in 4 lanes while `read()` runs again and again; returns what read() found wrong. */
  async function whileWriting(write: (i: number) => Promise<void>, read: () => Promise<string | null>): Promise<{ reads: number; wrong: string[] }> {
    let next = 0;
    let writing = true;
    const lanes = Array.from({ length: 4 }, async () => {
      for (let i = next++; i < WRITES; i = next++) await write(i);
    });
    const wrong: string[] = [];
    let reads = 0;
    const reader = (async () => {
      while (writing) {
        const problem = await read();
        reads++;
        if (problem) wrong.push(problem);
      }
    })();
    await Promise.all(lanes);
    writing = false;
    await reader;
    return { reads, wrong };
  }

  test('GET /jobs: total_items and the summary agree with the jobs shown', async () => {
    const { reads, wrong } = await whileWriting(
      async (i) => expect((await h.post('/api/v1/jobs', { printer_id: 'x1c-01', job_name: `job ${i}` })).status).toBe(201),
      async () => {
        const { jobs, pagination, summary } = (await h.get('/api/v1/jobs?limit=100')).body as { jobs: { status: string }[]; pagination: { total_items: number }; summary: { queued_jobs: number } };
        const queued = jobs.filter((j) => j.status === 'queued').length;
        return pagination.total_items === jobs.length && summary.queued_jobs === queued ? null : `${jobs.length} jobs (${queued} queued), total_items ${pagination.total_items}, queued_jobs ${summary.queued_jobs}`;
      },
    );
    expect(wrong).toEqual([]);
    expect(reads).toBeGreaterThan(1);
    expect((await h.get('/api/v1/jobs?limit=100')).body.pagination.total_items).toBe(WRITES);
  });

  const upload = (name: string) => {
    const boundary = 'snapshotBoundary';
    const body = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\nG28\nG1 X10 Y10\n\r\n--${boundary}--\r\n`;
    return h.request('POST', '/api/v1/files/upload', body, { 'content-type': `multipart/form-data; boundary=${boundary}` });
  };

  test('GET /files: total_items and the summary agree with the files shown', async () => {
    const { reads, wrong } = await whileWriting(
      async (i) => expect((await upload(`part-${i}.gcode`)).status).toBe(201),
      async () => {
        const { files, pagination, summary } = (await h.get('/api/v1/files?limit=100')).body as { files: unknown[]; pagination: { total_items: number }; summary: { local_count: number } };
        return pagination.total_items === files.length && summary.local_count === files.length ? null : `${files.length} files, total_items ${pagination.total_items}, local_count ${summary.local_count}`;
      },
    );
    expect(wrong).toEqual([]);
    expect(reads).toBeGreaterThan(1);
    expect((await h.get('/api/v1/files?limit=100')).body.pagination.total_items).toBe(WRITES);
  });

  test('GET /ideas: total_items and the summary agree with the ideas shown', async () => {
    const { reads, wrong } = await whileWriting(
      async (i) => expect((await h.post('/api/v1/ideas', { title: `idea ${i}` })).status).toBe(201),
      async () => {
        const { ideas, pagination, summary } = (await h.get('/api/v1/ideas?limit=100')).body as { ideas: unknown[]; pagination: { total_items: number }; summary: { total_ideas: number } };
        return pagination.total_items === ideas.length && summary.total_ideas === ideas.length ? null : `${ideas.length} ideas, total_items ${pagination.total_items}, total_ideas ${summary.total_ideas}`;
      },
    );
    expect(wrong).toEqual([]);
    expect(reads).toBeGreaterThan(1);
  });

  test('GET /queue: total_items agrees with the items shown', async () => {
    const file = (await upload('queued.gcode')).body as { id: string };
    const { reads, wrong } = await whileWriting(
      async () => expect((await h.post('/api/v1/queue', { file_id: file.id })).status).toBe(201),
      async () => {
        const { items, pagination } = (await h.get('/api/v1/queue?limit=100')).body as { items: unknown[]; pagination: { total_items: number } };
        return pagination.total_items === items.length ? null : `${items.length} items, total_items ${pagination.total_items}`;
      },
    );
    expect(wrong).toEqual([]);
    expect(reads).toBeGreaterThan(1);
  });
});
