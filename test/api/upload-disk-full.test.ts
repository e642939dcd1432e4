/**
 * An upload onto a full disk is answered at once with 507 STORAGE_FULL (not after Node's 5-minute
 * request timeout), logged, and leaves no temp file; the next upload that fits works. The full disk
 * is a real tmpfs mounted over the files folder (needs root with CAP_SYS_ADMIN; skipped with a message
 * otherwise).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { startService, tempDir, type Harness } from '../helpers/service';

/** A tmpfs of `kb` KiB mounted at `dir`, or null when this machine does not let us mount. */
function smallDisk(dir: string, kb: number): (() => void) | null {
  fs.mkdirSync(dir, { recursive: true });
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${kb}k`, 'tmpfs', dir], { stdio: 'ignore' });
  } catch {
    return null;
  }
  return () => execFileSync('umount', [dir], { stdio: 'ignore' });
}

/** A multipart upload streamed in 64 KiB pieces (as a browser would), answered as soon as the server answers. */
function upload(base: string, name: string, size: number): Promise<{ status: number; body: any; headers: http.IncomingHttpHeaders }> {
  const boundary = 'printfarm-test-boundary';
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: url.hostname, port: url.port, method: 'POST', path: '/api/v1/files/upload', headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': head.length + size + tail.length } },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text), headers: res.headers }));
      },
    );
    req.on('error', reject);
    req.write(head);
    let sent = 0;
    const piece = Buffer.alloc(64 * 1024, 0x47);
    const pump = () => {
      while (sent < size) {
        const n = Math.min(piece.length, size - sent);
        sent += n;
        if (!req.write(piece.subarray(0, n))) return void req.once('drain', pump);
      }
      req.end(tail);
    };
    // The server may answer (and close) before everything is sent: stop sending then.
    req.on('response', () => {
      sent = size;
    });
    pump();
  });
}

describe('upload onto a full disk', () => {
  let h: Harness | undefined;
  let unmount: (() => void) | null = null;
  let dataDir: string;
  beforeAll(async () => {
    dataDir = tempDir();
    unmount = smallDisk(path.join(dataDir, 'files'), 512);
    if (unmount) h = await startService({}, dataDir);
  });
  afterAll(async () => {
    await h?.stop();
    unmount?.();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test('gets 507 STORAGE_FULL at once, logged, with no temp file left; a small upload then works', async () => {
    if (!h) return console.warn('skipped: cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN)');
    const full = await upload(h.base, 'big.gcode', 8 * 1024 * 1024);
    expect(full.status).toBe(507);
    expect(full.body.error).toMatchObject({ code: 'STORAGE_FULL', details: { code: 'ENOSPC' }, request_id: full.headers['x-request-id'] });
    expect(h.logs.some((l) => l.msg === 'upload refused: local storage full' && l.level === 50)).toBe(true);
    expect(fs.readdirSync(path.join(dataDir, 'files', 'local'))).toEqual([]);
    expect((await h.get('/api/v1/files?status=local')).body.files).toEqual([]);
    const small = await upload(h.base, 'small.gcode', 32 * 1024);
    expect(small.status).toBe(201);
    expect(small.body).toMatchObject({ filename: 'small.gcode', file_size: 32 * 1024, status: 'local' });
  });
});
