/**
 * Uploads whose client resets the connection mid-file: each once left its
 * write stream open and its `.part-*` file in DATA_DIR/files/local for the
 * life of the process (about 230 of them exhausted a 256-descriptor limit).
 * Now every aborted upload closes its stream and removes its part file.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { until } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';

const BOUNDARY = 'hostile-upload-boundary';
const openDescriptors = () => fs.readdirSync('/proc/self/fd').length;

/** Starts a multipart upload that announces 10 MB, sends 64 KiB of the file and then waits. */
function startUpload(h: Harness, name: string): Promise<net.Socket> {
  const { port } = new URL(h.base);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1', () => {
      const head = `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n`;
      socket.write(
        'POST /api/v1/files/upload HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
          `Content-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: 10000000\r\n\r\n` +
          head,
      );
      socket.write(Buffer.alloc(64 * 1024, 'G'), () => resolve(socket));
    });
    socket.on('error', () => undefined);
    socket.once('error', reject);
  });
}

describe('aborted uploads', () => {
  let h: Harness;
  let localDir: string;
  beforeAll(async () => {
    h = await startService();
    localDir = path.join(h.dataDir, 'files', 'local');
  });
  afterAll(() => h.close());

  const partFiles = () => (fs.existsSync(localDir) ? fs.readdirSync(localDir).filter((f) => f.includes('.part-')) : []);

  test('300 uploads reset mid-file leave no part file and no open descriptor', async () => {
    // Settle what the service opens on first use (database pages, the local folder) before counting.
    const warm = new FormData();
    warm.append('file', new Blob(['G28\n']), 'warm.gcode');
    expect((await fetch(`${h.base}/api/v1/files/upload`, { method: 'POST', body: warm })).status).toBe(201);
    const before = openDescriptors();

    const seen = new Set<string>();
    for (let batch = 0; batch < 6; batch++) {
      const sockets = await Promise.all(Array.from({ length: 50 }, (_, i) => startUpload(h, `part-${batch}-${i}.gcode`)));
      // Reset only once every upload of the batch is being written to its part file (mid-file, not mid-headers).
      await until(() => {
        for (const f of partFiles()) seen.add(f);
        return seen.size >= (batch + 1) * 50;
      }, `the part files of batch ${batch}`);
      for (const s of sockets) s.resetAndDestroy();
    }

    await until(() => partFiles().length === 0, 'every part file removed', 5000);
    await until(() => openDescriptors() <= before + 2, `open descriptors back to ${before} (now ${openDescriptors()})`, 5000);
    // Nothing half-stored is listed, and the service still takes uploads.
    const list = await h.get('/api/v1/files?limit=100');
    expect(list.body.files.map((f: { filename: string }) => f.filename)).toEqual(['warm.gcode']);
    const ok = new FormData();
    ok.append('file', new Blob(['G28\n']), 'after.gcode');
    expect((await fetch(`${h.base}/api/v1/files/upload`, { method: 'POST', body: ok })).status).toBe(201);
  }, 60_000);
});
