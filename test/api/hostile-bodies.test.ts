/**
 * Hostile request bodies: malformed JSON, bodies that are not JSON, unknown
 * charsets and encodings, bodies over 1 MB (with and without Content-Length),
 * wrong types, huge numbers, unknown fields (__proto__ too), deep nesting and
 * lone surrogates are refused with the spec's error body and the right status,
 * and nothing of them is stored. Runs on SQLite and PostgreSQL.
 */
import http from 'node:http';
import { describeDialects } from '../helpers/dialects';
import { counts, serviceForEachTest } from '../helpers/hostile-input';
import { expectError, prusa, type Harness, type JsonResponse } from '../helpers/service';

const MB = 1024 * 1024;

/** A raw HTTP request (for chunked bodies the fetch client cannot send). */
function rawRequest(h: Harness, method: string, urlPath: string, headers: Record<string, string>, chunks: string[]): Promise<JsonResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: h.service.port, method, path: urlPath, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => {
        const hdrs = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') hdrs.set(k, v);
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: hdrs, body, text });
      });
    });
    // The server may answer (413) and stop reading before the whole body is sent.
    req.on('error', reject);
    for (const c of chunks) req.write(c);
    req.end();
  });
}

describeDialects('hostile input', (db) => {
  const svc = serviceForEachTest(db);

  describe('bodies', () => {
    test.each([
      ['truncated', '{"name": '],
      ['single quotes', "{'name': 'x'}"],
      ['a trailing comma', '{"name":"x",}'],
      ['NaN', '{"layer_total": NaN}'],
      ['a bare string', '"just a string"'],
      ['null', 'null'],
      ['a number', '42'],
      ['garbage', '\u0000\u0001\u0002'],
    ])('malformed JSON (%s) is 422 VALIDATION_ERROR with the error body', async (_name, text) => {
      for (const [method, url] of [
        ['POST', '/api/v1/printers'],
        ['PUT', '/api/v1/settings'],
        ['POST', '/api/v1/jobs'],
      ]) {
        const err = expectError(await svc.h.request(method, url, text), 422, 'VALIDATION_ERROR');
        expect(err.details.location).toBe('body');
      }
      expect(await counts(svc.h)).toEqual({ jobs_count: 0, files_count: 0, printers_count: 0 });
    });

    test('JSON that is not an object is 422 naming the root', async () => {
      for (const text of ['[]', '[{"name":"x"}]']) {
        const err = expectError(await svc.h.request('POST', '/api/v1/printers', text), 422, 'VALIDATION_ERROR');
        expect(err.details.fields.map((f: { field: string }) => f.field)).toContain('(root)');
      }
    });

    test.each([
      ['text/plain', JSON.stringify(prusa())],
      ['application/x-www-form-urlencoded', 'id=mk4-01&name=x&type=prusa_core&ip_address=10.0.0.1'],
      ['multipart/form-data; boundary=XYZ', '--XYZ\r\nContent-Disposition: form-data; name="name"\r\n\r\nx\r\n--XYZ--\r\n'],
      ['application/xml', '<printer><name>x</name></printer>'],
    ])('a %s body is not read as JSON: 422 with the missing fields, nothing stored', async (type, text) => {
      const err = expectError(await svc.h.request('POST', '/api/v1/printers', text, { 'content-type': type }), 422, 'VALIDATION_ERROR');
      expect(err.details.fields.map((f: { field: string }) => f.field).sort()).toEqual(['ip_address', 'name', 'type']);
      const settings = expectError(
        await svc.h.request('PUT', '/api/v1/settings', '{"job_creation_auto_create":false}', { 'content-type': type }),
        422,
        'VALIDATION_ERROR',
      );
      expect(settings.details.location).toBe('body');
      expect((await svc.h.get('/api/v1/settings')).body.job_creation_auto_create).toBe(true);
      expect((await counts(svc.h)).printers_count).toBe(0);
    });

    test('a body without content type, or an empty JSON body, is validated as empty', async () => {
      const noType = await fetch(`${svc.h.base}/api/v1/printers`, { method: 'POST', body: new Uint8Array(Buffer.from(JSON.stringify(prusa()))) });
      const text = await noType.text();
      expectError({ status: noType.status, headers: noType.headers, body: JSON.parse(text), text }, 422, 'VALIDATION_ERROR');
      expectError(await svc.h.request('POST', '/api/v1/printers', '', { 'content-type': 'application/json' }), 422, 'VALIDATION_ERROR');
      expect((await counts(svc.h)).printers_count).toBe(0);
    });

    test('unsupported charsets and encodings are refused with the error body', async () => {
      expectError(await svc.h.request('POST', '/api/v1/printers', JSON.stringify(prusa()), { 'content-type': 'application/json; charset=klingon' }), 415, 'UNSUPPORTED_MEDIA_TYPE');
      expectError(await svc.h.request('POST', '/api/v1/printers', JSON.stringify(prusa()), { 'content-encoding': 'zstd' }), 415, 'UNSUPPORTED_MEDIA_TYPE');
      // A gzip body that is no gzip.
      const err = expectError(await svc.h.request('POST', '/api/v1/printers', JSON.stringify(prusa()), { 'content-encoding': 'gzip' }), 400);
      expect(err.code).toBe('BAD_REQUEST');
      expect((await counts(svc.h)).printers_count).toBe(0);
    });

    test('a body over 1 MB is 413 with the error body, and the service carries on', async () => {
      const big = JSON.stringify(prusa('big', { name: 'x'.repeat(MB + 10) }));
      const err = expectError(await svc.h.request('POST', '/api/v1/printers', big), 413, 'PAYLOAD_TOO_LARGE');
      expect(err.details).toMatchObject({ location: 'body', limit_bytes: MB });
      const settings = expectError(await svc.h.request('PUT', '/api/v1/settings', JSON.stringify({ timezone: 'x'.repeat(2 * MB) })), 413, 'PAYLOAD_TOO_LARGE');
      expect(settings.request_id).toEqual(expect.any(String));

      // Without a Content-Length (chunked), the limit holds as well.
      const chunk = 'x'.repeat(64 * 1024);
      const chunked = await rawRequest(
        svc.h,
        'POST',
        '/api/v1/printers',
        { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
        ['{"name":"', ...Array.from({ length: 20 }, () => chunk), '"}'],
      );
      expect(chunked.headers.get('content-length')).not.toBeNull();
      expectError(chunked, 413, 'PAYLOAD_TOO_LARGE');

      // Just under the limit: read and validated (the name is too long), not refused for its size.
      const under = JSON.stringify(prusa('under', { name: 'y'.repeat(MB - 500) }));
      expect(Buffer.byteLength(under)).toBeLessThan(MB);
      const tooLong = expectError(await svc.h.request('POST', '/api/v1/printers', under), 422, 'VALIDATION_ERROR');
      expect(tooLong.details.fields[0].field).toBe('name');

      expect((await counts(svc.h)).printers_count).toBe(0);
      expect((await svc.h.post('/api/v1/printers', prusa())).status).toBe(201);
    });

    test('wrong types are 422 naming every offending field', async () => {
      const err = expectError(
        await svc.h.post('/api/v1/printers', { id: 42, name: ['a'], type: 'prusa_core', ip_address: true, is_active: 'true', model: { x: 1 } }),
        422,
        'VALIDATION_ERROR',
      );
      expect(err.details.fields.map((f: { field: string }) => f.field).sort()).toEqual(['id', 'ip_address', 'is_active', 'model', 'name']);
      await svc.h.post('/api/v1/printers', prusa());
      const job = expectError(
        await svc.h.post('/api/v1/jobs', { printer_id: 'mk4-01', job_name: 'x', is_business: 'yes', material_info: { estimated_usage: '12g' }, layer_total: '10' }),
        422,
        'VALIDATION_ERROR',
      );
      expect(job.details.fields.map((f: { field: string }) => f.field).sort()).toEqual(['is_business', 'layer_total', 'material_info.estimated_usage']);
      expect((await counts(svc.h)).jobs_count).toBe(0);
    });

    test('huge numbers are 422, never stored or echoed as Infinity', async () => {
      await svc.h.post('/api/v1/printers', prusa());
      const base = { printer_id: 'mk4-01', job_name: 'x' };
      for (const [field, raw] of [
        ['estimated_duration', '1e400'],
        ['estimated_duration', '-1e400'],
        ['layer_total', '9007199254740993'],
        ['material_cost', '1e308'],
        ['estimated_duration', '12345678901234567890'],
      ]) {
        const text = JSON.stringify(base).replace(/}$/, `,"${field}":${raw}}`);
        const err = expectError(await svc.h.request('POST', '/api/v1/jobs', text), 422, 'VALIDATION_ERROR');
        expect(err.details.fields.map((f: { field: string }) => f.field)).toContain(field);
      }
      const setting = expectError(await svc.h.request('PUT', '/api/v1/settings', '{"monitoring_interval": 1e400}'), 422, 'VALIDATION_ERROR');
      expect(setting.details.fields[0].field).toBe('monitoring_interval');
      // In the path and the query: 400.
      for (const url of ['/api/v1/jobs/99999999999999999999999', '/api/v1/jobs/1e400', '/api/v1/jobs/-1', '/api/v1/jobs/abc']) {
        const e = expectError(await svc.h.get(url), 400, 'VALIDATION_ERROR');
        expect(e.details.location).toBe('path');
      }
      for (const url of ['/api/v1/jobs?page=1e400', '/api/v1/jobs?limit=99999999999999999999', '/api/v1/jobs?limit=101', '/api/v1/jobs?page=0']) {
        expect(expectError(await svc.h.get(url), 400, 'VALIDATION_ERROR').details.location).toBe('query');
      }
      expect((await counts(svc.h)).jobs_count).toBe(0);
      expect((await svc.h.get('/api/v1/settings')).body.monitoring_interval).toBe(30);
    });

    test('unknown fields are 422 and nothing is stored', async () => {
      const err = expectError(await svc.h.post('/api/v1/printers', { ...prusa(), admin: true, created_at: '2000-01-01T00:00:00Z' }), 422, 'VALIDATION_ERROR');
      expect(err.details.fields).toEqual([
        { field: 'admin', message: 'unknown field', code: 'unknown_field' },
        { field: 'created_at', message: 'unknown field', code: 'unknown_field' },
      ]);
      const proto = expectError(await svc.h.request('POST', '/api/v1/printers', JSON.stringify(prusa()).replace(/}$/, ',"__proto__":{"is_admin":true}}')), 422, 'VALIDATION_ERROR');
      expect(proto.details.fields).toEqual([{ field: '__proto__', message: 'unknown field', code: 'unknown_field' }]);
      expect(({} as Record<string, unknown>).is_admin).toBeUndefined();
      await svc.h.post('/api/v1/printers', prusa());
      const nested = expectError(await svc.h.post('/api/v1/jobs', { printer_id: 'mk4-01', job_name: 'x', material_info: { type: 'PLA', secret: 1 } }), 422, 'VALIDATION_ERROR');
      expect(nested.details.fields).toEqual([{ field: 'material_info.secret', message: 'unknown field', code: 'unknown_field' }]);
      expect(await counts(svc.h)).toEqual({ jobs_count: 0, files_count: 0, printers_count: 1 });
    });

    test('deeply nested JSON is refused with 422, not a 500', async () => {
      await svc.h.post('/api/v1/printers', prusa());
      const deepObject = '{"a":'.repeat(20_000) + '1' + '}'.repeat(20_000);
      const deepArray = '['.repeat(200_000) + ']'.repeat(200_000);
      for (const value of [deepObject, deepArray]) {
        const res = await svc.h.request('POST', '/api/v1/jobs', `{"printer_id":"mk4-01","job_name":"deep","customer_info":{"x":${value}}}`);
        expectError(res, 422, 'VALIDATION_ERROR');
      }
      // Nested, but within bounds: fine.
      const ok = await svc.h.request('POST', '/api/v1/jobs', `{"printer_id":"mk4-01","job_name":"nested","customer_info":${'{"a":'.repeat(50)}1${'}'.repeat(50)}}`);
      expect(ok.status).toBe(201);
      expect(await counts(svc.h)).toMatchObject({ jobs_count: 1 });
      expect(svc.h.logs.some((l) => l.msg === 'unhandled error')).toBe(false);
    });

    test('a string with a lone UTF-16 surrogate is refused (it could not be stored as sent)', async () => {
      const text = JSON.stringify(prusa()).replace('"Prusa mk4-01"', '"Drucker \\ud800"');
      const err = expectError(await svc.h.request('POST', '/api/v1/printers', text), 422, 'VALIDATION_ERROR');
      expect(err.details.reason).toMatch(/surrogate/);
      expect((await counts(svc.h)).printers_count).toBe(0);
      // A proper pair, written as escapes, is an emoji and fine.
      const pair = await svc.h.request('POST', '/api/v1/printers', JSON.stringify(prusa()).replace('"Prusa mk4-01"', '"Drucker \\ud83d\\ude80"'));
      expect(pair.status).toBe(201);
      expect((await svc.h.get('/api/v1/printers/mk4-01')).body.name).toBe('Drucker 🚀');
    });
  });
});
