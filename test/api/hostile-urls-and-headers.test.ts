/**
 * Hostile URLs and headers: unknown paths and methods are 404 with the error
 * body; path tricks find nothing and leak nothing (the docs' static files
 * included); requests the HTTP parser refuses still get the error body;
 * repeated query parameters are 400; X-Request-Id is echoed when sane and
 * replaced when hostile. Runs on SQLite and PostgreSQL.
 */
import net from 'node:net';
import { describeDialects } from '../helpers/dialects';
import { counts, serviceForEachTest } from '../helpers/hostile-input';
import { expectError, prusa, type Harness, type JsonResponse } from '../helpers/service';

/** Sends bytes over a fresh TCP connection and collects everything until the server closes it. */
function rawExchange(h: Harness, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(h.service.port, '127.0.0.1', () => socket.write(bytes));
    let out = '';
    socket.setEncoding('utf8');
    socket.on('data', (d) => (out += d));
    socket.on('error', reject);
    socket.on('close', () => resolve(out));
  });
}

/** Parses a raw HTTP/1.1 response (one, with Content-Length). */
function parseRaw(raw: string): JsonResponse {
  const [head, ...rest] = raw.split('\r\n\r\n');
  const [statusLine, ...lines] = head.split('\r\n');
  const headers = new Headers();
  for (const line of lines) {
    const i = line.indexOf(':');
    headers.set(line.slice(0, i).trim(), line.slice(i + 1).trim());
  }
  const text = rest.join('\r\n\r\n');
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(text), text };
}

describeDialects('hostile input', (db) => {
  const svc = serviceForEachTest(db);

  describe('paths and methods', () => {
    test.each([
      ['GET', '/'],
      ['GET', '/api'],
      ['POST', '/api/v1'],
      ['GET', '/api/v1/nope'],
      ['GET', '/api/v2/health'],
      ['GET', '/api/v1/health/extra'],
      ['GET', '/API/V1/HEALTH/x'],
      ['GET', '/ws'],
      ['POST', '/api/v1/health'],
      ['DELETE', '/api/v1/settings'],
      ['PATCH', '/api/v1/printers'],
      ['PUT', '/api/v1/system/info'],
      ['POST', '/api/v1/settings/application'],
      ['OPTIONS', '/api/v1/nope'],
    ])('%s %s is 404 NOT_FOUND with the error body', async (method, url) => {
      const err = expectError(await svc.h.request(method, url), 404, 'NOT_FOUND');
      expect(err.details).toMatchObject({ method });
    });

    test('path tricks find nothing and leak nothing', async () => {
      await svc.h.post('/api/v1/printers', prusa());
      const dots = expectError(await svc.h.get('/api/v1/printers/..%2F..%2Fetc'), 404, 'PRINTER_NOT_FOUND');
      expect(dots.details.printer_id).toBe('../../etc');
      expectError(await svc.h.get('/api/v1/printers/..%2F..%2F..%2Fetc%2Fpasswd'), 404, 'PRINTER_NOT_FOUND');
      expectError(await svc.h.del('/api/v1/printers/..%2Fmk4-01'), 404, 'PRINTER_NOT_FOUND');
      expectError(await svc.h.get('/api/v1/printers/%252e%252e%252f'), 404, 'PRINTER_NOT_FOUND');
      // PostgreSQL cannot even compare text with a NUL: there it is a bad path parameter.
      const nul = await svc.h.get('/api/v1/printers/a%00b');
      if (db.name === 'sqlite') expectError(nul, 404, 'PRINTER_NOT_FOUND');
      else expect(expectError(nul, 400, 'VALIDATION_ERROR').details).toEqual({ location: 'path', reason: 'nul_character' });
      expectError(await svc.h.get('/api/v1/%2e%2e/%2e%2e/etc/passwd'), 404, 'NOT_FOUND');
      expectError(await svc.h.get(`/api/v1/printers/${'a'.repeat(129)}`), 400, 'VALIDATION_ERROR');
      // A broken percent-encoding is a bad path parameter.
      const broken = expectError(await svc.h.get('/api/v1/printers/%E0%A4%A'), 400, 'VALIDATION_ERROR');
      expect(broken.details.location).toBe('path');
      expectError(await svc.h.get('/api/v1/jobs/%ZZ'), 400, 'VALIDATION_ERROR');

      // The docs are static files: no way out of their folder.
      for (const url of ['/docs/..%2F..%2F..%2Fpackage.json', '/docs/%2e%2e/%2e%2e/package.json', '/redoc/..%2F..%2Fpackage.json']) {
        const res = await svc.h.get(url);
        expect(res.status).not.toBe(500);
        expect(res.text).not.toContain('@printfarm/node-red-printfarm');
      }
      // The printer is still there.
      expect((await svc.h.get('/api/v1/printers/mk4-01')).status).toBe(200);
      expect((await counts(svc.h)).printers_count).toBe(1);
    });

    test('requests the HTTP parser refuses still get the error body', async () => {
      const longUrl = await svc.h.get(`/api/v1/printers/${'a'.repeat(20_000)}`);
      const err = expectError(longUrl, 431);
      expect(err.details.reason).toBe('HPE_HEADER_OVERFLOW');
      expectError(await svc.h.request('GET', '/api/v1/health', undefined, { 'x-padding': 'p'.repeat(20_000) }), 431);

      const garbage = parseRaw(await rawExchange(svc.h, 'GARBAGE / HTTP/1.1\r\nHost: x\r\n\r\n'));
      expectError(garbage, 400, 'BAD_REQUEST');
      const badVersion = parseRaw(await rawExchange(svc.h, 'GET /api/v1/health HTTP/9.9\r\nHost: x\r\n\r\n'));
      expect(badVersion.status).toBeGreaterThanOrEqual(400);
      expect(badVersion.body.error.code).toEqual(expect.any(String));

      // And the service is fine.
      expect((await svc.h.get('/api/v1/health')).status).toBe(200);
    });

    test('query parameters given twice are 400; bracket syntax means nothing', async () => {
      expect(expectError(await svc.h.get('/api/v1/printers?active=true&active=false'), 400, 'VALIDATION_ERROR').details.location).toBe('query');
      expectError(await svc.h.get('/api/v1/jobs?status=queued&status=failed'), 400, 'VALIDATION_ERROR');
      // Brackets are no syntax (no nested query objects): "page[$gt]" is just an unknown parameter.
      const brackets = await svc.h.get('/api/v1/jobs?page[$gt]=5&status[$ne]=x');
      expect(brackets.status).toBe(200);
      expect(brackets.body.pagination.page).toBe(1);
    });
  });

  describe('request ids', () => {
    test('a sane X-Request-Id is echoed, on successes and on errors, and logged', async () => {
      const ok = await svc.h.request('GET', '/api/v1/health', undefined, { 'x-request-id': 'trace-abc.123:xyz' });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('x-request-id')).toBe('trace-abc.123:xyz');

      const bad = await svc.h.request('POST', '/api/v1/printers', { name: 1 }, { 'x-request-id': 'req-42' });
      const err = expectError(bad, 422, 'VALIDATION_ERROR');
      expect(err.request_id).toBe('req-42');
      const missing = expectError(await svc.h.request('GET', '/api/v1/nope', undefined, { 'X-Request-Id': 'req-43' }), 404, 'NOT_FOUND');
      expect(missing.request_id).toBe('req-43');
      const malformed = expectError(await svc.h.request('POST', '/api/v1/printers', '{', { 'x-request-id': 'req-44' }), 422);
      expect(malformed.request_id).toBe('req-44');

      const line = svc.h.logs.find((l) => l.msg === 'request' && l.req_id === 'req-42');
      expect(line).toMatchObject({ method: 'POST', path: '/api/v1/printers', status: 422 });
    });

    test('without one, or with a hostile one, a fresh id is generated', async () => {
      const ids = new Set<string>();
      for (const header of [undefined, 'has spaces in it', 'a'.repeat(129), '<script>alert(1)</script>', 'x"y', '']) {
        const res = await svc.h.request('GET', '/api/v1/printers/nope', undefined, header === undefined ? {} : { 'x-request-id': header });
        const err = expectError(res, 404, 'PRINTER_NOT_FOUND');
        expect(err.request_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
        ids.add(err.request_id);
      }
      expect(ids.size).toBe(6);
      expect(JSON.stringify(svc.h.logs)).not.toContain('<script>');
    });
  });
});
