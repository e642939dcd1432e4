/**
 * The aggregator's two kinds of key and its submission limits. The key every
 * installation carries (a submit key) may submit and delete the installation
 * it names, never read the dashboards, export every installation or send
 * mail (403); and a client that rotates installation ids to get around the
 * per-installation quota is stopped per address and per key (429).
 */
import { randomUUID } from 'node:crypto';
import { addressBucket } from '../../service/aggregator/access';
import { aggregatorOptions } from '../../service/aggregator/config';
import { expectErrorBody, NOW, submission } from '../helpers/aggregator-data';
import { ADMIN_KEY, API_KEY, httpsJson, startAggregator, type AggregatorHarness } from '../helpers/usage';

const ADMIN_ROUTES = [
  ['GET', '/stats/summary'],
  ['GET', '/stats/overview'],
  ['GET', '/stats/export'],
  ['GET', '/stats/anomalies'],
  ['GET', '/reports/email-status'],
  ['POST', '/reports/test-email', {}],
  ['POST', '/reports/weekly', {}],
  ['POST', '/reports/monthly', {}],
] as const;

describe('aggregator keys', () => {
  let a: AggregatorHarness;
  beforeAll(async () => {
    a = await startAggregator({ now: () => NOW });
  });
  afterAll(() => a.close());

  test('a submit key gets 403 on every admin route; the admin key reads them', async () => {
    for (const [method, p, body] of ADMIN_ROUTES) {
      const err = expectErrorBody(await a.call(method, p, body, API_KEY), 403, 'FORBIDDEN');
      expect(err.details).toEqual({ required_role: 'admin' });
      expect(err.message).toMatch(/submit statistics only/);
    }
    expect((await a.call('GET', '/stats/summary', undefined, ADMIN_KEY)).status).toBe(200);
    expect((await a.call('GET', '/stats/export', undefined, ADMIN_KEY)).status).toBe(200);
  });

  test('a submit key submits and deletes the installation it names; the admin key may do both too', async () => {
    const own = submission();
    expect((await a.call('POST', '/submit', own, API_KEY)).status).toBe(201);
    expect((await a.call('DELETE', `/installation/${own.installation_id}`, undefined, API_KEY)).body).toMatchObject({ deleted: true });
    const other = submission();
    expect((await a.call('POST', '/submit', other, ADMIN_KEY)).status).toBe(201);
    expect((await a.call('DELETE', `/installation/${other.installation_id}`, undefined, ADMIN_KEY)).status).toBe(200);
  });

  test('the OpenAPI document says which routes answer 403 to a submit key', async () => {
    const doc = (await a.call('GET', '/openapi.json', undefined, null)).body;
    expect(doc.paths['/stats/summary'].get.responses['403']).toBeDefined();
    expect(doc.paths['/reports/weekly'].post.responses['403']).toBeDefined();
    expect(doc.paths['/submit'].post.responses['403']).toBeUndefined();
  });
});

describe('aggregator submission limits', () => {
  let a: AggregatorHarness | null = null;
  afterEach(async () => {
    await a?.close();
    a = null;
  });

  test('a key rotating installation ids from one address gets 429 after the default 60 an hour', async () => {
    a = await startAggregator({ now: () => NOW, rateLimitPerAddress: undefined, rateLimitPerKey: undefined });
    for (let i = 0; i < 60; i++) expect((await a.call('POST', '/submit', submission({ installation_id: randomUUID() }))).status).toBe(201);
    const over = await a.call('POST', '/submit', submission({ installation_id: randomUUID() }));
    expect(expectErrorBody(over, 429, 'RATE_LIMIT_EXCEEDED').details).toEqual({ scope: 'address', limit: 60, retry_after_seconds: 3600 });
    expect(over.headers['retry-after']).toBe('3600');
    // The other submit key from the same address is no way around it; the dashboards still answer.
    expectErrorBody(await a.call('POST', '/submit', submission(), 'second-key'), 429, 'RATE_LIMIT_EXCEEDED');
    expect((await a.call('GET', '/stats/summary')).body.total_installations).toBe(60);
  });

  test('per key: one key is stopped at its limit, the other key still submits', async () => {
    a = await startAggregator({ now: () => NOW, rateLimitPerAddress: 1000, rateLimitPerKey: 3 });
    for (let i = 0; i < 3; i++) expect((await a.call('POST', '/submit', submission())).status).toBe(201);
    expect(expectErrorBody(await a.call('POST', '/submit', submission()), 429, 'RATE_LIMIT_EXCEEDED').details).toMatchObject({ scope: 'key', limit: 3 });
    expect((await a.call('POST', '/submit', submission(), 'second-key')).status).toBe(201);
  });

  test('deletions count against the same per-address budget: a flood of them gets 429 too', async () => {
    a = await startAggregator({ now: () => NOW, rateLimitPerAddress: 3 });
    const s = submission();
    expect((await a.call('POST', '/submit', s)).status).toBe(201);
    expect((await a.call('DELETE', `/installation/${s.installation_id}`)).status).toBe(200);
    expect((await a.call('DELETE', `/installation/${randomUUID()}`)).status).toBe(404);
    const over = await a.call('DELETE', `/installation/${randomUUID()}`);
    expect(expectErrorBody(over, 429, 'RATE_LIMIT_EXCEEDED').details).toMatchObject({ scope: 'address', limit: 3 });
    expect(over.headers['retry-after']).toBe('3600');
  });

  test('behind a trusted proxy the limit is per forwarded client address', async () => {
    a = await startAggregator({ now: () => NOW, rateLimitPerAddress: 2, trustProxy: true });
    const from = (ip: string) => httpsJson(`${a!.base}/submit`, { method: 'POST', body: submission(), ca: a!.ca, headers: { 'x-api-key': API_KEY, 'x-forwarded-for': ip } });
    expect((await from('203.0.113.1')).status).toBe(201);
    expect((await from('203.0.113.1')).status).toBe(201);
    expect((await from('203.0.113.1')).status).toBe(429);
    // true is one proxy: an entry the client wrote before the one the proxy appended buys nothing.
    expect((await from('198.51.100.7, 203.0.113.1')).status).toBe(429);
    expect((await from('203.0.113.2')).status).toBe(201);
    // One IPv6 host owns a /64: its addresses share one window.
    expect((await from('2001:db8:1:2::1')).status).toBe(201);
    expect((await from('2001:db8:1:2:ffff::9')).status).toBe(201);
    expect((await from('2001:db8:1:2:0:0:0:77')).status).toBe(429);
  });
});

describe('aggregator key settings', () => {
  test('submit and admin keys from flags or environment; the old AGGREGATOR_API_KEY is a submit key', () => {
    const o = aggregatorOptions({}, { AGGREGATOR_SUBMIT_KEY: 's1, s2', AGGREGATOR_ADMIN_KEY: 'adm', AGGREGATOR_RATE_LIMIT_PER_ADDRESS: '30', AGGREGATOR_RATE_LIMIT_PER_KEY: '500', AGGREGATOR_TRUST_PROXY: '1' });
    expect(o).toMatchObject({ submitKeys: ['s1', 's2'], adminKeys: ['adm'], rateLimitPerAddress: 30, rateLimitPerKey: 500, trustProxy: 1 });
    expect(aggregatorOptions({ 'submit-key': ['f'], 'admin-key': ['g,h'] }, { AGGREGATOR_SUBMIT_KEY: 'e' })).toMatchObject({ submitKeys: ['f'], adminKeys: ['g', 'h'] });
    expect(aggregatorOptions({}, { AGGREGATOR_API_KEY: 'old' })).toMatchObject({ submitKeys: ['old'], adminKeys: [] });
    expect(() => aggregatorOptions({}, { AGGREGATOR_ADMIN_KEY: 'adm' })).toThrow(/at least one submit key/);
    expect(() => aggregatorOptions({}, { AGGREGATOR_SUBMIT_KEY: 's', AGGREGATOR_TRUST_PROXY: 'everyone!' })).toThrow(/--trust-proxy/);
  });

  test('a key cannot be both; without an admin key the admin routes are closed to every key, and the log says so', async () => {
    await expect(startAggregator({ submitKeys: ['same'], adminKeys: ['same'] })).rejects.toThrow(/both a submit key and an admin key/);
    const a = await startAggregator({ adminKeys: [] });
    try {
      expectErrorBody(await a.call('GET', '/stats/summary', undefined, API_KEY), 403, 'FORBIDDEN');
      expect(a.logs.some((l) => l.level === 40 && /no admin key/.test(String(l.msg)))).toBe(true);
    } finally {
      await a.close();
    }
  });

  test('address buckets: IPv4 as is (also IPv4-mapped), IPv6 by /64', () => {
    expect(addressBucket('::ffff:192.0.2.7')).toBe('192.0.2.7');
    expect(addressBucket('2001:db8:0:1::5')).toBe('2001:db8:0:1::/64');
    expect(addressBucket('2001:0db8:0000:0001:aaaa:bbbb:cccc:dddd')).toBe('2001:db8:0:1::/64');
    expect(addressBucket('::1')).toBe('0:0:0:0::/64');
  });
});
