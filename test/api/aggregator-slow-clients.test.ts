/**
 * Slow clients at the aggregation service: a request whose headers or body trickle in is answered
 * 408 REQUEST_TIMEOUT (the spec's error body) and its connection closed after the request timeout,
 * instead of holding the connection for Node's default five minutes.
 */
import tls from 'node:tls';
import { API_KEY, startAggregator, type AggregatorHarness } from '../helpers/usage';

let a: AggregatorHarness;
beforeAll(async () => {
  a = await startAggregator({ requestTimeoutMs: 1500 });
});
afterAll(() => a.close());

/** Sends `head` and then nothing; resolves with what came back and when the server closed, or null after `giveUpMs`. */
function stall(head: string, giveUpMs: number): Promise<{ text: string; ms: number } | null> {
  return new Promise((resolve) => {
    const started = Date.now();
    let text = '';
    const socket = tls.connect({ host: '127.0.0.1', port: a.agg.port, ca: a.ca, servername: 'localhost' }, () => socket.write(head));
    socket.setEncoding('utf8');
    socket.on('data', (d) => (text += d));
    socket.on('error', () => undefined);
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(null);
    }, giveUpMs);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text, ms: Date.now() - started });
    });
  });
}

const post = `POST /submit HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: ${API_KEY}\r\nContent-Type: application/json\r\n`;

test.each([
  ['headers that never end', `${post}X-Slow: 1\r\n`],
  ['a body that never ends', `${post}Content-Length: 2000\r\n\r\n{"installation_id":`],
])('%s: 408 REQUEST_TIMEOUT with the error body, the connection closed within seconds', async (_label, head) => {
  const result = await stall(head, 8000);
  expect(result).not.toBeNull();
  expect(result!.ms).toBeLessThan(6000);
  expect(result!.text).toMatch(/^HTTP\/1\.1 408 /);
  const body = JSON.parse(result!.text.slice(result!.text.indexOf('\r\n\r\n') + 4));
  expect(body.error).toEqual({ code: 'REQUEST_TIMEOUT', message: expect.any(String), details: expect.any(Object), timestamp: expect.any(String), request_id: expect.any(String) });
});
