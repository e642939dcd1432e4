/**
 * Hostile web pages and remote HTTP answers: the model pages behind ideas
 * (service/ideas: fetcher + metadata) and the update-check source. Peers are
 * real HTTP servers on 127.0.0.1 (the page fetcher's injected fetch maps the
 * platform URL to the local server, since it fetches platform hosts only).
 * CPU-bound extraction runs in a worker thread so a catastrophic regex can be
 * stopped and reported as 'HUNG' instead of freezing jest.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { Worker } from 'node:worker_threads';
import zlib from 'node:zlib';
import pino from 'pino';
import { FetchRefused, PageFetcher, type FetchFn } from '../../service/ideas/fetcher';
import { extractMetadata } from '../../service/ideas/metadata';
import type { TrendingSource } from '../../service/ideas/trending';
import { UpdateChecker } from '../../service/system/update-check';
import { startService } from '../helpers/service';

const PAGE = 'https://www.printables.com/model/1';

// A full garbage collection on demand: a deadline must hold even when the GC runs while it waits.
v8.setFlagsFromString('--expose-gc');
const collectGarbage = vm.runInNewContext('gc') as () => void;

/** Runs extractMetadata(html, PAGE) in a worker: its result, its error message, or 'HUNG' after `ms`. */
function extractInWorker(html: string, ms = 5000): Promise<unknown> {
  const code = `
    const { parentPort, workerData } = require('node:worker_threads');
    const { extractMetadata } = require(workerData.module);
    try { parentPort.postMessage({ ok: extractMetadata(workerData.html, workerData.page) }); }
    catch (e) { parentPort.postMessage({ error: String(e && e.message) }); }`;
  const worker = new Worker(code, {
    eval: true,
    // The built module (npm test builds dist/ first, as for the tests that run the service in a child process).
    workerData: { html, page: PAGE, module: path.resolve(__dirname, '../../dist/service/ideas/metadata.js') },
  });
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve('HUNG'), ms);
    worker.once('message', (m: { ok?: unknown; error?: string }) => {
      clearTimeout(timer);
      resolve(m.error !== undefined ? `THREW ${m.error}` : m.ok);
    });
    worker.once('error', (e) => {
      clearTimeout(timer);
      resolve(`WORKER ${e.message}`);
    });
  }).finally(() => worker.terminate());
}

const TWO_MB = 2 * 1024 * 1024;
const fill = (unit: string) => unit.repeat(Math.floor(TWO_MB / unit.length));

describe('metadata extraction on pathological pages (2 MB, the fetcher cap)', () => {
  test.each([
    ['unclosed <meta tags', () => fill('<meta ')],
    ['unclosed <script tags', () => fill('<script>')],
    ['unclosed <title tags', () => fill('<title>')],
    ['one meta tag with a 2 MB attribute name', () => `<meta ${'a'.repeat(TWO_MB)}>`],
    ['a meta content of 2 MB of "<"', () => `<meta property="og:title" content="${'<'.repeat(TWO_MB)}">`],
    ['a JSON-LD description of 2 MB of "<"', () => `<script type="application/ld+json">{"@type":"3DModel","name":"x","description":"${'<'.repeat(TWO_MB)}"}</script>`],
    ['a million empty tags', () => fill('<a>')],
    ['nesting 100 000 deep', () => '<div>'.repeat(100_000) + '</div>'.repeat(100_000)],
    ['JSON-LD nested 500 000 deep', () => `<script type="application/ld+json">${'['.repeat(500_000)}${']'.repeat(500_000)}</script>`],
    ['a JSON-LD author and image nested 200 000 deep', () => `<script type="application/ld+json">{"@type":"3DModel","name":"x","author":${'['.repeat(200_000)}${']'.repeat(200_000)},"image":${'['.repeat(200_000)}${']'.repeat(200_000)}}</script>`],
  ])('%s: extraction completes', async (_name, page) => {
    const result = await extractInWorker(page());
    // The worker's answer is an object; a string is 'HUNG' or the error it threw.
    expect(typeof result === 'string' ? result : 'completed').toBe('completed');
  });

  test('a JSON-LD @type list of 500 000 entries does not cost the rest of the page', () => {
    const html = `<meta property="og:title" content="Benchy"><script type="application/ld+json">{"@type":[${'"a",'.repeat(500_000)}"3DModel"],"name":"Huge"}</script>`;
    expect(() => extractMetadata(html, PAGE)).not.toThrow();
    expect(extractMetadata(html, PAGE).title).toEqual(expect.any(String));
  });

  test('the extraction still reads attributes, scripts and titles the same way', () => {
    const html = `<title>T &amp; t</title><meta async property = 'og:image' content=/img.png data-x><meta name="author" content="Ann">
      <script type=application/ld+json>{"@type":"Product","name":"P","image":"javascript:alert(1)"}</script>`;
    expect(extractMetadata(html, PAGE)).toMatchObject({ title: 'P', creator_name: 'Ann', thumbnail_url: 'https://www.printables.com/img.png' });
    expect(extractMetadata('<title>A <b>bold</b> <i title="x>y">z</i> 1 < 2</title>', PAGE).title).toBe('A bold y">z 1 < 2');
  });
});

describe('hostile pages through the fetcher', () => {
  let server: http.Server;
  let base: string;
  let route: http.RequestListener = (_req, res) => res.writeHead(404).end();
  beforeAll(async () => {
    server = http.createServer((req, res) => route(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  const asked: string[] = [];
  const local: FetchFn = (url, init) => {
    asked.push(url);
    return fetch(`${base}${new URL(url).pathname}`, init);
  };

  test.each([
    ['gzip', (b: Buffer) => zlib.gzipSync(b)],
    ['gzip, gzip', (b: Buffer) => zlib.gzipSync(zlib.gzipSync(b))],
    ['br', (b: Buffer) => zlib.brotliCompressSync(b)],
    ['deflate', (b: Buffer) => zlib.deflateSync(b)],
  ])('a %s bomb is cut at maxBytes of decoded text', async (encoding, pack) => {
    const bomb = pack(Buffer.alloc(64 * 1024 * 1024, 'a'));
    route = (_req, res) => res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': encoding }).end(bomb);
    const page = await new PageFetcher({ fetch: local, maxBytes: 100_000 }).fetchPage(PAGE);
    expect(page.html).toHaveLength(100_000);
    expect(page.truncated).toBe(true);
  });

  test('redirects to other schemes, loopback in disguise or the service itself are refused before any request', async () => {
    for (const location of ['javascript:alert(1)', 'data:text/html,<title>x</title>', 'https://2130706433/api/v1/printers', 'https://0x7f.1/', 'https://[::1]/', 'https://www.printables.com@127.0.0.1/', 'https://localhost/', `${base}/api/v1/printers`, '//127.0.0.1/x']) {
      asked.length = 0;
      route = (_req, res) => res.writeHead(302, { location }).end();
      await expect(new PageFetcher({ fetch: local }).fetchPage(PAGE)).rejects.toBeInstanceOf(FetchRefused);
      expect(asked).toEqual([PAGE]);
    }
  });

  test('huge headers and a broken Location are errors of the fetch, nothing more', async () => {
    route = (_req, res) => res.writeHead(200, { 'content-type': 'text/html', 'x-big': 'x'.repeat(200_000) }).end('<title>t</title>');
    await expect(new PageFetcher({ fetch: local }).fetchPage(PAGE)).rejects.toThrow();
    route = (_req, res) => res.writeHead(302, { location: 'https://[zz' }).end();
    await expect(new PageFetcher({ fetch: local }).fetchPage(PAGE)).rejects.toThrow();
  });
});

describe('a hostile update source', () => {
  const log = pino({ level: 'silent' });
  let server: http.Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    server = undefined;
  });
  const source = async (listener: http.RequestListener): Promise<string> => {
    server = http.createServer(listener);
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/latest`;
  };

  test('a gzip bomb answer is not read whole: it counts as no answer', async () => {
    const body = Buffer.concat([Buffer.from('{"tag_name":"v9.9.9","body":"'), Buffer.alloc(64 * 1024 * 1024, 'a'), Buffer.from('"}')]);
    const bomb = zlib.gzipSync(body);
    const url = await source((_req, res) => res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(bomb));
    const info = await new UpdateChecker('1.0.0', url, 5000, log).check();
    expect(info).toMatchObject({ latest_version: '1.0.0', update_available: false });
  });

  test('a release URL that is not http(s) and an endless version never reach the API answer', async () => {
    let answer: object = { tag_name: 'v9.9.9', html_url: 'javascript:alert(document.cookie)' };
    const url = await source((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer)));
    const first = await new UpdateChecker('1.0.0', url, 5000, log).check();
    expect(first).toMatchObject({ latest_version: '9.9.9', update_available: true, release_url: 'https://github.com/printfarm/node-red-printfarm/releases' });
    answer = { version: `9.9.9-${'x'.repeat(500_000)}` };
    const second = await new UpdateChecker('1.0.0', url, 5000, log).check();
    expect(second.latest_version).toBe('1.0.0');
  });

  test('an answer that drips a byte at a time is given up at the timeout', async () => {
    const url = await source((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).write('{"tag_name":"v9.9.9"');
      setImmediate(collectGarbage);
      const timer = setInterval(() => res.write(' '), 20);
      res.once('close', () => clearInterval(timer));
    });
    const checker = new UpdateChecker('1.0.0', url, 300, log);
    let timer: NodeJS.Timeout | undefined;
    const info = await Promise.race([checker.check(), new Promise((resolve) => (timer = setTimeout(() => resolve('HUNG'), 5000)))]);
    clearTimeout(timer);
    checker.close();
    expect(info).toMatchObject({ latest_version: '1.0.0', update_available: false });
  });

  test('a redirect loop ends in no update', async () => {
    const url = await source((_req, res) => res.writeHead(302, { location: '/latest' }).end());
    expect(await new UpdateChecker('1.0.0', url, 5000, log).check()).toMatchObject({ latest_version: '1.0.0', update_available: false });
  });
});

describe('a trending source that never answers', () => {
  test('a first read waits for the source at most its timeout', async () => {
    let asked = 0;
    const source: TrendingSource = { active: true, fetch: () => (asked++, setImmediate(collectGarbage), new Promise(() => {})) };
    const h = await startService({ ideas: { metadataRetryMs: 0, trending: { source, checkEveryMs: 0, fetchTimeoutMs: 300 } } });
    try {
      let timer: NodeJS.Timeout | undefined;
      const res = await Promise.race([h.get('/api/v1/ideas/trending/makerworld'), new Promise((resolve) => (timer = setTimeout(() => resolve('HUNG'), 5000)))]);
      clearTimeout(timer);
      expect(res).toMatchObject({ status: 200, body: { total: 0, source: 'live' } });
      expect(asked).toBe(1);
    } finally {
      await h.close();
    }
  });
});
