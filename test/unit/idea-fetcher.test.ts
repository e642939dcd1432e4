import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { assertFetchable, FetchRefused, PageFetcher, type FetchFn } from '../../service/ideas/fetcher';

/**
 * A local page server standing in for the platforms: the injected fetch maps
 * https://<platform host>/<path> to http://127.0.0.1:<port>/<host>/<path>.
 */
describe('page fetcher', () => {
  let server: http.Server;
  let base: string;
  const asked: string[] = [];
  const handlers = new Map<string, http.RequestListener>();

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const handler = handlers.get(req.url ?? '');
      if (handler) return handler(req, res);
      res.writeHead(404).end('not found');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  beforeEach(() => {
    asked.length = 0;
    handlers.clear();
  });

  const local: FetchFn = (url, init) => {
    asked.push(url);
    const u = new URL(url);
    return fetch(`${base}/${u.hostname}${u.pathname}${u.search}`, init);
  };
  const html = (body: string, headers: Record<string, string> = {}): http.RequestListener => (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...headers });
    res.end(body);
  };

  test('reads a platform page through the injected fetch', async () => {
    handlers.set('/www.printables.com/model/1', html('<title>One</title>'));
    const page = await new PageFetcher({ fetch: local }).fetchPage('https://www.printables.com/model/1');
    expect(page).toEqual({ url: 'https://www.printables.com/model/1', html: '<title>One</title>', truncated: false });
    expect(asked).toEqual(['https://www.printables.com/model/1']);
  });

  test('follows redirects within the platforms only', async () => {
    handlers.set('/www.printables.com/model/2', (_req, res) => res.writeHead(301, { location: '/model/2-slug' }).end());
    handlers.set('/www.printables.com/model/2-slug', html('<title>Two</title>'));
    const page = await new PageFetcher({ fetch: local }).fetchPage('https://www.printables.com/model/2');
    expect(page.url).toBe('https://www.printables.com/model/2-slug');
    expect(asked).toEqual(['https://www.printables.com/model/2', 'https://www.printables.com/model/2-slug']);

    for (const location of ['http://127.0.0.1:1/x', 'https://evil.example/', 'http://www.printables.com/model/2-slug', 'https://www.printables.com:8443/x', 'file:///etc/passwd']) {
      asked.length = 0;
      handlers.set('/www.printables.com/model/3', (_req, res) => res.writeHead(302, { location }).end());
      await expect(new PageFetcher({ fetch: local }).fetchPage('https://www.printables.com/model/3')).rejects.toBeInstanceOf(FetchRefused);
      expect(asked).toEqual(['https://www.printables.com/model/3']);
    }
  });

  test('stops after a few redirects', async () => {
    handlers.set('/www.thingiverse.com/thing:1', (_req, res) => res.writeHead(302, { location: '/thing:1' }).end());
    await expect(new PageFetcher({ fetch: local, maxRedirects: 2 }).fetchPage('https://www.thingiverse.com/thing:1')).rejects.toThrow(/more than 2 redirects/);
    expect(asked).toHaveLength(3);
  });

  test('never calls fetch for a URL outside the platforms', async () => {
    const f = new PageFetcher({ fetch: local });
    for (const url of ['http://127.0.0.1/', 'https://makerworld.com.evil.net/', 'http://makerworld.com/en/models/1', 'https://u:p@makerworld.com/', 'file:///etc/passwd']) {
      await expect(f.fetchPage(url)).rejects.toBeInstanceOf(FetchRefused);
      expect(() => assertFetchable(url)).toThrow(FetchRefused);
    }
    expect(asked).toEqual([]);
  });

  test('gives up after the timeout when the page never comes', async () => {
    handlers.set('/cults3d.com/slow', () => {
      /* never answers */
    });
    // The fetcher's own timeout gives up (its message says so), not jest's.
    await expect(new PageFetcher({ fetch: local, timeoutMs: 200 }).fetchPage('https://cults3d.com/slow')).rejects.toThrow(/timed out after 200 ms/);
  });

  test('the timeout also covers a body that trickles', async () => {
    handlers.set('/cults3d.com/trickle', (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.write('<title>');
    });
    await expect(new PageFetcher({ fetch: local, timeoutMs: 200 }).fetchPage('https://cults3d.com/trickle')).rejects.toThrow(/timed out/);
  });

  test('an injected fetch that ignores the abort signal still times out', async () => {
    const hang: FetchFn = () => new Promise(() => {});
    await expect(new PageFetcher({ fetch: hang, timeoutMs: 100 }).fetchPage('https://cults3d.com/x')).rejects.toThrow(/timed out/);
  });

  test('reads at most maxBytes of the body', async () => {
    let written = 0;
    let closed = false;
    handlers.set('/www.myminifactory.com/big', (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.on('close', () => (closed = true));
      const chunk = 'a'.repeat(64 * 1024);
      const pump = () => {
        while (written < 50 * 1024 * 1024 && !closed) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
    });
    const page = await new PageFetcher({ fetch: local, maxBytes: 100_000 }).fetchPage('https://www.myminifactory.com/big');
    expect(page.html).toHaveLength(100_000);
    expect(page.truncated).toBe(true);
    // The rest of the page is not downloaded.
    await new Promise((r) => setTimeout(r, 100));
    expect(written).toBeLessThan(10 * 1024 * 1024);
  });

  test('refuses HTTP errors and bodies that are not HTML', async () => {
    handlers.set('/www.thingiverse.com/gone', (_req, res) => res.writeHead(410).end());
    handlers.set('/www.thingiverse.com/image', (_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end('png'));
    const f = new PageFetcher({ fetch: local });
    await expect(f.fetchPage('https://www.thingiverse.com/gone')).rejects.toThrow(/HTTP 410/);
    await expect(f.fetchPage('https://www.thingiverse.com/image')).rejects.toThrow(/not an HTML page \(image\/png\)/);
  });
});
