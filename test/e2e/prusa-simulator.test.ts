/**
 * The PrusaLink simulator speaks the printer API as Prusa's Buddy firmware
 * does, over real HTTP on 127.0.0.1: the Digest challenge, X-Api-Key, the job
 * and status answers, and the files API with its 8.3 names and conflicts.
 */
import http from 'node:http';
import type { PrusaSimulator } from '../../service/simulators/prusa';
import { closeAfterEach, control, simulator } from '../helpers/prusa-e2e';

closeAfterEach();

/** A raw request to the printer API with X-Api-Key (or none), for what the driver does not do itself. */
function raw(
  sim: PrusaSimulator,
  method: string,
  path: string,
  headers: Record<string, string> = { 'x-api-key': sim.password },
  body?: Buffer,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${sim.url}${path}`, { method, agent: false, headers: { ...headers, ...(body ? { 'content-length': String(body.length) } : {}) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('the simulated printer speaks PrusaLink as Buddy does', () => {
  test('Digest challenge without qop, 16-hex nonce; wrong key 401; job 204 when idle', async () => {
    const sim = await simulator();
    const anonymous = await raw(sim, 'GET', '/api/v1/status', {});
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers['www-authenticate']).toMatch(/^Digest realm="Printer API", nonce="[0-9a-f]{16}", stale=false$/);
    expect((await raw(sim, 'GET', '/api/v1/status', { 'x-api-key': 'nope' })).status).toBe(401);
    expect((await raw(sim, 'GET', '/api/v1/job')).status).toBe(204);
    const status = JSON.parse((await raw(sim, 'GET', '/api/v1/status')).body);
    expect(status).toEqual({
      printer: expect.objectContaining({ state: 'IDLE', temp_nozzle: 24, target_nozzle: 0, temp_bed: 24, target_bed: 0, flow: 100, speed: 100 }),
      storage: { path: '/usb/', name: 'usb', read_only: false },
    });
  });

  test('files: upload 201 (409 without Overwrite), HEAD, print after upload, delete (409 while printing)', async () => {
    const sim = await simulator({ speed: 2 });
    const data = Buffer.from('G28\nG1 X1\n');
    const put = (headers: Record<string, string> = {}) =>
      raw(sim, 'PUT', '/api/v1/files/usb/Upload%20Test.gcode', { 'x-api-key': sim.password, 'content-type': 'application/octet-stream', ...headers }, data);
    expect((await put()).status).toBe(201);
    expect((await put()).status).toBe(409);
    expect((await put({ overwrite: '?1', 'print-after-upload': '?1' })).status).toBe(201);
    const job = JSON.parse((await raw(sim, 'GET', '/api/v1/job')).body);
    expect(job).toMatchObject({ state: 'PRINTING', file: { name: 'UPLOAD~1.GCO', display_name: 'Upload Test.gcode', path: '/usb', size: data.length } });
    expect(job.file.refs).toEqual({ icon: '/thumb/s/usb/UPLOAD~1.GCO', thumbnail: '/thumb/l/usb/UPLOAD~1.GCO', download: '/usb/UPLOAD~1.GCO' });
    const head = await raw(sim, 'HEAD', '/api/v1/files/usb/UPLOAD~1.GCO');
    expect(head.headers['currently-printing']).toBe('true');
    expect((await raw(sim, 'DELETE', '/api/v1/files/usb/UPLOAD~1.GCO')).status).toBe(409);
    expect((await raw(sim, 'DELETE', `/api/v1/job/${job.id}`)).status).toBe(204);
    expect((await raw(sim, 'DELETE', `/api/v1/job/${job.id + 1}`)).status).toBe(404);
    expect((await raw(sim, 'DELETE', '/api/v1/files/usb/UPLOAD~1.GCO')).status).toBe(204);
    expect((await raw(sim, 'GET', '/api/v1/files/usb/UPLOAD~1.GCO')).status).toBe(404);
    expect((await control(sim, '/state')).body.files).not.toContain('Upload Test.gcode');
  });
});
