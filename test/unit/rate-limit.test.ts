import { clientKey, RateLimiter, V1_RATE_LIMITS, type LimitName } from '../../service/api/rate-limit';

describe('rate limiter', () => {
  test('a /ws connection slot is released once, however often the release is called', () => {
    const refused: LimitName[] = [];
    const limiter = new RateLimiter({ enabled: () => true, limits: { ...V1_RATE_LIMITS, websockets: 1 }, onRefused: (l) => refused.push(l) });
    const first = limiter.admitWebSocket('10.0.0.5');
    expect('release' in first).toBe(true);
    const second = limiter.admitWebSocket('10.0.0.5');
    expect('error' in second && second.error).toMatchObject({ status: 429, code: 'RATE_LIMIT_EXCEEDED', details: { limit: 'websockets', max: 1 } });
    // Another address has its own share.
    expect('release' in limiter.admitWebSocket('10.0.0.6')).toBe(true);
    if ('release' in first) {
      first.release();
      first.release();
    }
    expect('release' in limiter.admitWebSocket('10.0.0.5')).toBe(true);
    expect('error' in limiter.admitWebSocket('10.0.0.5')).toBe(true);
    expect(refused).toEqual(['websockets', 'websockets']);
  });

  test('disabled, it admits everything and counts nothing', () => {
    const limiter = new RateLimiter({ enabled: () => false, limits: { ...V1_RATE_LIMITS, websockets: 0 } });
    expect('release' in limiter.admitWebSocket('10.0.0.5')).toBe(true);
  });

  test('IPv4-mapped IPv6 addresses are the IPv4 client', () => {
    expect(clientKey('::ffff:192.0.2.7')).toBe('192.0.2.7');
    expect(clientKey('2001:db8::1')).toBe('2001:db8::1');
    expect(clientKey(undefined)).toBe('unknown');
  });
});
