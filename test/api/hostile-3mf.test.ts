/**
 * A 1 MiB upload must not freeze the service: a `.gcode.3mf` whose
 * slice_info.config is `<plate>` 150,000 times (no closing tag) once held the
 * event loop for a minute per read (a lazy regex, quadratic), when queued and
 * at every restart with it queued. `GET /health` keeps answering and the
 * event loop is never held for a second, and the file's facts are refused in words.
 */
import { randomUUID } from 'node:crypto';
import { zip } from '../preview/builders';
import { until } from '../helpers/farm';
import { healthWhile } from '../helpers/hostile-input';
import { startService, uploadFile, type Harness } from '../helpers/service';
import { queueItemRecord } from '../helpers/queue-records';

/** 1 MiB of `<plate>`, stored (a deflated one would be refused for its compression ratio before it is parsed). */
function plateBomb(): Buffer {
  return zip({
    'Metadata/slice_info.config': '<?xml version="1.0"?>\n<config>' + '<plate>'.repeat(150_000),
    'Metadata/plate_1.gcode': '; HEADER_BLOCK_START\n; HEADER_BLOCK_END\nG28\n',
  }, 0);
}

describe('a hostile 3MF config', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await startService();
  });
  afterEach(() => h.close());

  test('queueing it keeps /health answering (the loop never held for a second), and the file is refused in words', async () => {
    const fileId = await uploadFile(h.base, 'bomb.gcode.3mf', plateBomb());
    const { maxLoopDelayMs, result } = await healthWhile(h, h.post('/api/v1/queue', { file_id: fileId }));
    // /health answered 200 throughout; the event loop (which answers it) was never held for a second.
    expect(maxLoopDelayMs).toBeLessThan(1000);
    expect(result.status).toBe(422);
    expect(JSON.stringify(result.body.error)).toMatch(/cannot be read as a print file: .*nest deeper than 64/);
  });

  test('after a restart with it queued (stored before the fix), /health keeps answering while the dispatcher reads it', async () => {
    const fileId = await uploadFile(h.base, 'bomb.gcode.3mf', plateBomb());
    const id = randomUUID().replace(/-/g, '').slice(0, 16);
    await h.service.context.store.queue.insertItem(queueItemRecord({ id, file_id: fileId, name: 'bomb' }));
    h = await h.restart();
    const readByDispatcher = until(async () => {
      const r = await h.get(`/api/v1/queue/${id}`);
      return r.body.waiting_reason?.startsWith('the file cannot be read') ? r.body : null;
    }, 'the dispatcher to read the file');
    const { maxLoopDelayMs, result } = await healthWhile(h, readByDispatcher);
    // /health answered 200 throughout; the event loop (which answers it) was never held for a second.
    expect(maxLoopDelayMs).toBeLessThan(1000);
    expect(result.waiting_reason).toMatch(/nest deeper than 64/);
  });
});
