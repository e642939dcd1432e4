/**
 * A 1 MB STL of 20,000 copies of one triangle spanning the view once made
 * `POST /files/{id}/thumbnail/generate` rasterise 20,000 full frames on the
 * event loop (a minute), and kept at it after the client left. The render is
 * now bounded by the pixels the triangles cover, runs in a worker thread and
 * is terminated when nobody waits for it.
 */
import { extractThumbnail } from '../../service/preview';
import { activeMeshRenders } from '../../service/preview/mesh-thread';
import { until } from '../helpers/farm';
import { healthWhile } from '../helpers/hostile-input';
import { startService, uploadFile, type Harness } from '../helpers/service';
import { binaryStl, boxTriangles } from '../preview/builders';

/** 20,000 times the same big triangle: each covers about half the picture. */
const bomb = () => binaryStl(Array.from({ length: 20_000 }, () => [0, 0, 0, 100, 0, 0, 0, 0, 100]));

describe('mesh render bombs', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startService();
  });
  afterAll(() => h.close());

  test('the bomb gets a placeholder with the reason, and /health keeps answering meanwhile', async () => {
    const id = await uploadFile(h.base, 'bomb.stl', bomb());
    const { maxLoopDelayMs, probes, result: res } = await healthWhile(h, h.post(`/api/v1/files/${id}/thumbnail/generate`));
    // /health answered 200 throughout, again and again while the thread rasterised (a render on the event loop
    // lets one through, after a minute). The loop's longest pause is the placeholder drawn once: far below that
    // minute even on a loaded machine.
    expect(probes).toBeGreaterThanOrEqual(5);
    expect(maxLoopDelayMs).toBeLessThan(5000);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: false, method: 'generated', message: expect.stringContaining('covers more than 64 times the picture') });
    expect(activeMeshRenders()).toBe(0);
  });

  test('a real model still renders through the worker', async () => {
    const id = await uploadFile(h.base, 'box.stl', binaryStl(boxTriangles()));
    const res = await h.post(`/api/v1/files/${id}/thumbnail/generate`);
    expect(res.body).toMatchObject({ success: true, method: 'generated', message: 'Thumbnail from mesh' });
  });

  test('a client that leaves terminates the render thread, and nothing is stored', async () => {
    const id = await uploadFile(h.base, 'bomb2.stl', bomb());
    const client = new AbortController();
    const request = fetch(`${h.base}/api/v1/files/${id}/thumbnail/generate`, { method: 'POST', signal: client.signal }).catch((err: Error) => err);
    await until(() => activeMeshRenders() === 1, 'the render thread to start');
    client.abort();
    expect(await request).toMatchObject({ name: 'AbortError' });
    await until(() => activeMeshRenders() === 0, 'the render thread to end');
    await until(async () => (await h.get(`/api/v1/files/${id}`)).status === 200 && !(h.service.context.previews as unknown as { running: Map<string, unknown> }).running.size, 'the preview run to end');
    expect((await h.get(`/api/v1/files/${id}/thumbnail`)).status).toBe(404);
  });
});

describe('the mesh renderer off the event loop', () => {
  test('without a pixel bound the bomb runs for minutes, yet the caller leaving stops it at once', async () => {
    const leave = new AbortController();
    const render = extractThumbnail(bomb(), 'stl', { maxCoverage: Infinity, signal: leave.signal }).catch((err: Error & { code?: string }) => err);
    await until(() => activeMeshRenders() === 1, 'the render thread to start');
    // The event loop is free while the thread rasterises: timers still fire.
    await new Promise((r) => setTimeout(r, 50));
    leave.abort();
    expect(await render).toMatchObject({ code: 'ABORTED' });
    await until(() => activeMeshRenders() === 0, 'the render thread to end');
  });
});
