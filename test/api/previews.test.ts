import fs from 'node:fs';
import path from 'node:path';
import { PNG } from 'pngjs';
import { seedFiles } from '../../service/simulators/seed-files';
import { expectError, startService, tempDir, type Harness } from '../helpers/service';

const seed = (suffix: string) => seedFiles().find((f) => f.name.endsWith(suffix))!;

// The second run keeps its data where Node-RED keeps an embedded service's (~/.node-red/printfarm):
// a dot directory on the path must not hide the thumbnails.
describe.each([
  ['a plain data dir', ''],
  ['a data dir under .node-red', path.join('.node-red', 'printfarm')],
])('thumbnails and previews of local files, %s', (_where, below) => {
  let h: Harness;
  let root = '';
  beforeAll(async () => {
    root = tempDir();
    h = await startService({}, path.join(root, below));
  });
  afterAll(async () => {
    await h.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  async function upload(suffix: string): Promise<string> {
    const f = seed(suffix);
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(f.data)]), f.name);
    const res = await fetch(`${h.base}/api/v1/files/upload`, { method: 'POST', body: form });
    expect(res.status).toBe(201);
    return ((await res.json()) as { id: string }).id;
  }

  const png = async (url: string) => {
    const res = await fetch(h.base + url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/image\/png/);
    return PNG.sync.read(Buffer.from(await res.arrayBuffer()));
  };

  test.each([
    ['.gcode.3mf', 'thumbnail/extract', 'extracted'],
    ['.bgcode', 'thumbnail/extract', 'extracted'],
    ['.gcode', 'thumbnail/extract', 'extracted'],
    ['.stl', 'thumbnail/generate', 'generated'],
    ['.gcode', 'analyze/gcode', 'analyzed'],
  ])('%s: POST %s gives a picture (%s) and the file learns its metadata', async (suffix, action, method) => {
    const id = await upload(suffix);
    const res = await h.post(`/api/v1/files/${id}/${action}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, method, thumbnail_url: `/api/v1/files/${id}/thumbnail`, message: expect.any(String) });
    const image = await png(res.body.thumbnail_url);
    expect(image.width).toBeGreaterThan(8);
    if (suffix !== '.stl') {
      const detail = (await h.get(`/api/v1/files/${id}`)).body;
      expect(detail.metadata.layer_height).toBe(0.2);
    }
  });

  test('an action that does not fit the file type is 400; a file without local copy is 409', async () => {
    const stl = await upload('.stl');
    expectError(await h.post(`/api/v1/files/${stl}/analyze/gcode`), 400, 'UNSUPPORTED_FILE_TYPE');
    expectError(await h.post('/api/v1/files/nope/thumbnail/extract'), 404, 'FILE_NOT_FOUND');
    expectError(await h.get(`/api/v1/files/${stl}/thumbnail`), 404, 'THUMBNAIL_NOT_FOUND');
  });
});
