/**
 * Previews cannot be used to burn the service's CPU: a BGCode of a million empty blocks is refused
 * quickly (placeholder), concurrent requests for one file's preview share one run, and a client that
 * leaves stops the work (nothing is stored for it).
 */
import fs from 'node:fs';
import { startService, type Harness } from '../helpers/service';
import { until } from '../helpers/farm';
import { bgcodeBlock, bgcodeFile, u16 } from '../preview/builders';

/** A BGCode file of `n` empty G-code blocks. */
function emptyBlocks(n: number): Buffer {
  const head = bgcodeFile([]);
  const block = bgcodeBlock({ type: 1, params: u16(0), data: Buffer.alloc(0) });
  const out = Buffer.alloc(head.length + n * block.length);
  head.copy(out, 0);
  for (let i = 0; i < n; i++) block.copy(out, head.length + i * block.length);
  return out;
}

/** No thumbnail, and G-code blocks of 64 MiB of zeros (64 KiB each deflated): seconds of decoding. */
function heavy(): Buffer {
  const block = bgcodeBlock({ type: 1, compression: 1, params: u16(0), data: Buffer.alloc(64 << 20) });
  return Buffer.concat([bgcodeFile([]), ...Array.from({ length: 8 }, () => block)]);
}

describe('preview limits', () => {
  let h: Harness;
  // Built before the service starts: seconds of synchronous work between two requests would let the
  // server close the idle keep-alive connection just as fetch reuses it (ECONNRESET).
  let million: Buffer;
  let heavyFile: Buffer;
  beforeAll(async () => {
    million = emptyBlocks(1_000_000);
    heavyFile = heavy();
    h = await startService();
  });
  afterAll(() => h.close());

  async function upload(name: string, data: Buffer): Promise<string> {
    const form = new FormData();
    form.append('file', new Blob([data]), name);
    const res = await fetch(`${h.base}/api/v1/files/upload`, { method: 'POST', body: form });
    expect(res.status).toBe(201);
    return ((await res.json()) as { id: string }).id;
  }

  const running = () => (h.service.context.previews as unknown as { running: Map<string, unknown> }).running;

  test('a BGCode of a million empty blocks gets a placeholder at once, with the reason', async () => {
    const id = await upload('million.bgcode', million);
    const res = await h.post(`/api/v1/files/${id}/preview`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: false, message: expect.stringContaining('more than 100000 blocks') });
  });

  test('concurrent requests for the preview of one file share one run', async () => {
    const id = await upload('shared.bgcode', emptyBlocks(20));
    const { previews } = h.service.context;
    const runs = [previews.run(id, 'preview'), previews.run(id, 'preview'), previews.run(id, 'preview')];
    expect(running().size).toBe(1);
    const [a, b, c] = await Promise.all(runs);
    expect(b).toBe(a);
    expect(c).toBe(a);
    expect(running().size).toBe(0);
    // Another action is another run.
    const other = await previews.run(id, 'extract');
    expect(other).not.toBe(a);
  });

  test('a client that leaves stops the work; nothing is stored for it', async () => {
    const id = await upload('heavy.bgcode', heavyFile);
    const client = new AbortController();
    const request = fetch(`${h.base}/api/v1/files/${id}/preview`, { method: 'POST', signal: client.signal }).catch((e: Error) => e);
    await until(() => running().size === 1, 'the preview to start');
    client.abort();
    expect(await request).toMatchObject({ name: 'AbortError' });
    await until(() => running().size === 0, 'the preview to stop', 50_000);
    expect(fs.existsSync(h.service.context.previews.thumbnailPath(id))).toBe(false);
    expect((await h.get(`/api/v1/files/${id}`)).body.metadata).not.toHaveProperty('has_thumbnail');
    // The service answers at once again.
    expect((await h.get('/api/v1/health')).status).toBe(200);
  }, 60_000);
});
