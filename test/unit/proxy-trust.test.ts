/**
 * TRUST_PROXY: only what trusted proxies added to X-Forwarded-* counts. A proxy appends the address it was
 * reached from to what the client sent, so the left-hand entries are the client's own words.
 */
import type { IncomingMessage } from 'node:http';
import { clientAddress } from '../../service/api/rate-limit';
import { startupOptions } from '../../service/config';
import { compileTrust, forwardedValue, parseTrustProxy } from '../../service/util/proxy-trust';

function request(peer: string, headers: Record<string, string> = {}): IncomingMessage {
  return { headers, socket: { remoteAddress: peer } } as unknown as IncomingMessage;
}

describe('trusted proxies', () => {
  test('true is one proxy: the right-most X-Forwarded-For entry is the client, whatever the client wrote before it', () => {
    const trust = compileTrust(true);
    expect(clientAddress(request('10.0.0.1', { 'x-forwarded-for': '192.0.2.1' }), trust)).toBe('192.0.2.1');
    expect(clientAddress(request('10.0.0.1', { 'x-forwarded-for': '198.51.100.7, 192.0.2.1' }), trust)).toBe('192.0.2.1');
    expect(clientAddress(request('10.0.0.1'), trust)).toBe('10.0.0.1');
  });

  test('a count trusts that many hops; off trusts none', () => {
    const header = { 'x-forwarded-for': '198.51.100.7, 192.0.2.1, 10.0.0.5' };
    expect(clientAddress(request('10.0.0.1', header), compileTrust(2))).toBe('192.0.2.1');
    expect(clientAddress(request('10.0.0.1', header), compileTrust(9))).toBe('198.51.100.7');
    expect(clientAddress(request('::ffff:10.0.0.1', header), compileTrust(false))).toBe('10.0.0.1');
  });

  test('addresses trust exactly those peers: a client that is no proxy of ours cannot name another address', () => {
    const trust = compileTrust('10.0.0.0/8, fd00::1');
    expect(clientAddress(request('::ffff:10.0.0.1', { 'x-forwarded-for': '198.51.100.7, 192.0.2.1, 10.0.0.5' }), trust)).toBe('192.0.2.1');
    expect(clientAddress(request('fd00::1', { 'x-forwarded-for': '192.0.2.9' }), trust)).toBe('192.0.2.9');
    expect(clientAddress(request('192.0.2.66', { 'x-forwarded-for': '192.0.2.1' }), trust)).toBe('192.0.2.66');
  });

  test('X-Forwarded-Host: the entry the outermost trusted proxy appended, and nothing from an untrusted peer', () => {
    const trust = compileTrust(true);
    expect(forwardedValue(request('10.0.0.1', { 'x-forwarded-host': 'evil.example, farm.example.com' }), 'x-forwarded-host', trust)).toBe('farm.example.com');
    expect(forwardedValue(request('10.0.0.1', { 'x-forwarded-host': 'farm.example.com' }), 'x-forwarded-host', trust)).toBe('farm.example.com');
    const two = request('10.0.0.1', { 'x-forwarded-for': '192.0.2.1, 10.0.0.5', 'x-forwarded-host': 'evil.example, farm.example.com, inner:8000' });
    expect(forwardedValue(two, 'x-forwarded-host', compileTrust(2))).toBe('farm.example.com');
    expect(forwardedValue(request('192.0.2.66', { 'x-forwarded-host': 'farm.example.com' }), 'x-forwarded-host', compileTrust('10.0.0.0/8'))).toBeUndefined();
  });

  test('TRUST_PROXY takes true/false, a count or addresses, and refuses anything else at start', () => {
    expect(startupOptions({}).trust_proxy).toBe(false);
    expect(startupOptions({ TRUST_PROXY: 'true' }).trust_proxy).toBe(true);
    expect(startupOptions({ TRUST_PROXY: '2' }).trust_proxy).toBe(2);
    expect(startupOptions({ TRUST_PROXY: '10.0.0.0/8, ::1' }).trust_proxy).toBe('10.0.0.0/8, ::1');
    expect(() => startupOptions({ TRUST_PROXY: 'everyone' })).toThrow(/TRUST_PROXY/);
    expect(() => parseTrustProxy('10.0.0.0/99')).toThrow(/prefix/);
    expect(() => parseTrustProxy('10.0.0')).toThrow(/no IP address/);
  });
});
