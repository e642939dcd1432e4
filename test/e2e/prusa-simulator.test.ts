/**
 * The PrusaLink simulator speaks the printer API as Prusa's Buddy firmware
 * does, over real HTTP on 127.0.0.1: the Digest challenge, X-Api-Key, the job
 * and status answers, and the files API with its 8.3 names and conflicts.
 */
import type { PrusaSimulator } from '../../service/simulators/prusa';
import { closeAfterEach, control, rawRequest, simulator } from '../helpers/prusa-e2e';

closeAfterEach();


describe('the simulated printer speaks PrusaLink as Buddy does', () => {
  test('Digest challenge without qop, 16-hex nonce; wrong key 401; job 204 when idle', async () => {
    const sim = await simulator();
    const anonymous = await rawRequest(sim, 'GET', '/api/v1/status', {});
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers['www-authenticate']).toMatch(/^Digest realm="Printer API", nonce="[0-9a-f]{16}", stale=false$/);
    expect((await rawRequest(sim, 'GET', '/api/v1/status', { 'x-api-key': 'nope' })).status).toBe(401);
    expect((await rawRequest(sim, 'GET', '/api/v1/job')).status).toBe(204);
    const status = JSON.parse((await rawRequest(sim, 'GET', '/api/v1/status')).body);
    expect(status).toEqual({
      printer: expect.objectContaining({ state: 'IDLE', temp_nozzle: 24, target_nozzle: 0, temp_bed: 24, target_bed: 0, flow: 100, speed: 100 }),
      storage: { path: '/usb/', name: 'usb', read_only: false },
    });
  });

  test('files: upload 201 (409 without Overwrite), HEAD, print after upload, delete (409 while printing)', async () => {
    const sim = await simulator({ speed: 2 });
    const data = Buffer.from('G28\nG1 X1\n');
    const put = (headers: Record<string, string> = {}) =>
      rawRequest(sim, 'PUT', '/api/v1/files/usb/Upload%20Test.gcode', { 'x-api-key': sim.password, 'content-type': 'application/octet-stream', ...headers }, data);
    expect((await put()).status).toBe(201);
    expect((await put()).status).toBe(409);
    expect((await put({ overwrite: '?1', 'print-after-upload': '?1' })).status).toBe(201);
    const job = JSON.parse((await rawRequest(sim, 'GET', '/api/v1/job')).body);
    expect(job).toMatchObject({ state: 'PRINTING', file: { name: 'UPLOAD~1.GCO', display_name: 'Upload Test.gcode', path: '/usb', size: data.length } });
    expect(job.file.refs).toEqual({ icon: '/thumb/s/usb/UPLOAD~1.GCO', thumbnail: '/thumb/l/usb/UPLOAD~1.GCO', download: '/usb/UPLOAD~1.GCO' });
    const head = await rawRequest(sim, 'HEAD', '/api/v1/files/usb/UPLOAD~1.GCO');
    expect(head.headers['currently-printing']).toBe('true');
    expect((await rawRequest(sim, 'DELETE', '/api/v1/files/usb/UPLOAD~1.GCO')).status).toBe(409);
    expect((await rawRequest(sim, 'DELETE', `/api/v1/job/${job.id}`)).status).toBe(204);
    expect((await rawRequest(sim, 'DELETE', `/api/v1/job/${job.id + 1}`)).status).toBe(404);
    expect((await rawRequest(sim, 'DELETE', '/api/v1/files/usb/UPLOAD~1.GCO')).status).toBe(204);
    expect((await rawRequest(sim, 'GET', '/api/v1/files/usb/UPLOAD~1.GCO')).status).toBe(404);
    expect((await control(sim, '/state')).body.files).not.toContain('Upload Test.gcode');
  });
});
