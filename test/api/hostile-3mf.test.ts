/**
 * A 1 MiB upload must not freeze the service: a `.gcode.3mf` whose
 * slice_info.config is `<plate>` 150,000 times (no closing tag) once held the
 * event loop for a minute per read (a lazy regex, quadratic), when queued and
 * at every restart with it queued. `GET /health` answers within a second
 * throughout, and the file's facts are refused in words.
 */
import { randomUUID } from 'node:crypto';
import { zip } from '../preview/builders';
import { until } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';

/** 1 MiB of `<plate>`, stored (a deflated one would be refused for its compression ratio before it is parsed). */
function plateBomb(): Buffer {
  return zip({
    'Metadata/slice_info.config': '<?xml version="1.0"?>\n<config>' + '<plate>'.repeat(150_000),
    'Metadata/plate_1.gcode': '; HEADER_BLOCK_START\n; HEADER_BLOCK_END\nG28\n',
  }, 0);
}

async function upload(h: Harness, name: string, data: Buffer): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(data)]), name);
  const res = await fetch(`${h.base}/api/v1/files/upload`, { method: 'POST', body: form });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

/**
 * Calls GET /health back to back until `work` settles; the slowest answer (ms).
 * The service runs in this process: a blocked event loop delays the answer by as long as it is blocked.
 */
async function slowestHealthWhile<T>(h: Harness, work: Promise<T>): Promise<{ slowest: number; result: T; probes: number }> {
  let done = false;
  const settled = work.finally(() => (done = true));
  let slowest = 0;
  let probes = 0;
  do {
    const started = Date.now();
    const res = await h.get('/api/v1/health');
    expect(res.status).toBe(200);
    slowest = Math.max(slowest, Date.now() - started);
    probes++;
  } while (!done || probes < 3);
  return { slowest, result: await settled, probes };
}

describe('a hostile 3MF config', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await startService();
  });
  afterEach(() => h.close());

  test('queueing it keeps /health answering within a second, and the file is refused in words', async () => {
    const fileId = await upload(h, 'bomb.gcode.3mf', plateBomb());
    const { slowest, result } = await slowestHealthWhile(h, h.post('/api/v1/queue', { file_id: fileId }));
    expect(slowest).toBeLessThan(1000);
    expect(result.status).toBe(422);
    expect(JSON.stringify(result.body.error)).toMatch(/cannot be read as a print file: .*nest deeper than 64/);
  });

  test('after a restart with it queued (stored before the fix), /health answers within a second while the dispatcher reads it', async () => {
    const fileId = await upload(h, 'bomb.gcode.3mf', plateBomb());
    const now = new Date().toISOString();
    const id = randomUUID().replace(/-/g, '').slice(0, 16);
    await h.service.context.store.queue.insertItem({
      id,
      file_id: fileId,
      name: 'bomb',
      plate: 1,
      copies: 1,
      priority: 0,
      status: 'queued',
      waiting_reason: null,
      failures_in_row: 0,
      target: null,
      requirements: null,
      options: null,
      start_after: null,
      created_at: now,
      updated_at: now,
    });
    h = await h.restart();
    const readByDispatcher = until(async () => {
      const r = await h.get(`/api/v1/queue/${id}`);
      return r.body.waiting_reason?.startsWith('the file cannot be read') ? r.body : null;
    }, 'the dispatcher to read the file');
    const { slowest, result } = await slowestHealthWhile(h, readByDispatcher);
    expect(slowest).toBeLessThan(1000);
    expect(result.waiting_reason).toMatch(/nest deeper than 64/);
  });
});
