/**
 * The request helper holds every JSON answer to the service's OpenAPI document (test/helpers/openapi-conformance.ts);
 * these tests show that it does catch an answer that differs.
 */
import { differenceFromOpenApi } from '../helpers/openapi-conformance';
import { startService, type Harness } from '../helpers/service';

const get = (urlPath: string, status: number, contentType: string, body: unknown) => ({ method: 'GET', urlPath, status, contentType, body });

describe('answers are held to the OpenAPI document', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startService();
  });
  afterAll(async () => {
    await h.close();
  });

  test('a real answer passes', async () => {
    const res = await h.get('/api/v1/printers');
    expect(res.status).toBe(200);
    expect(await differenceFromOpenApi(h.base, get('/api/v1/printers', res.status, 'application/json', res.body))).toBeNull();
  });

  test('a body that differs from the documented schema is refused, naming what differs', async () => {
    const res = await h.get('/api/v1/printers');
    expect(await differenceFromOpenApi(h.base, get('/api/v1/printers', 200, 'application/json; charset=utf-8', { ...res.body, printers: [{ id: 42 }] }))).toMatch(
      /^\/printers\/0 must have required property/,
    );
    expect(await differenceFromOpenApi(h.base, get('/api/v1/printers', 200, 'application/json', { ...res.body, extra: true }))).toMatch(/must NOT have additional properties/);
  });

  test('an undocumented status is refused', async () => {
    expect(await differenceFromOpenApi(h.base, get('/api/v1/printers', 418, 'application/json', {}))).toMatch(/status 418 is not documented/);
  });

  test('an error body must be the spec envelope, with a date-time timestamp', async () => {
    const res = await h.get('/api/v1/printers/no-such-printer');
    expect(res.status).toBe(404);
    const wrong = { error: { ...res.body.error, timestamp: 'yesterday' } };
    expect(await differenceFromOpenApi(h.base, get('/api/v1/printers/no-such-printer', 404, 'application/json', wrong))).toMatch(/timestamp must match format "date-time"/);
  });
});
