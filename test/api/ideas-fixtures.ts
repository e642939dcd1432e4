/**
 * What the ideas API tests (test/api/ideas-*.test.ts) share: the keys of an idea, waiting with a
 * deadline, and `useIdeasApi`, which serves the platforms' model pages from a local server (the
 * service's injected fetch goes there, or fails like a missing network when `online` is false),
 * starts the service per test or per block, and gives the small helpers the tests call.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FetchFn } from '../../service/ideas/fetcher';
import type { DialectUnderTest } from '../helpers/dialects';
import { startService, type Harness, type JsonResponse } from '../helpers/service';
import { PAGES } from './ideas-model-pages';

export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const HOUR = 3_600_000;

/** The keys of an idea in every response. */
export const IDEA_KEYS = [
  'id',
  'title',
  'creator_name',
  'source_platform',
  'source_url',
  'model_id',
  'thumbnail_url',
  'description',
  'file_info',
  'notes',
  'tags',
  'is_business',
  'status',
  'job_id',
  'metadata_refresh_needed',
  'metadata_fetched_at',
  'status_changed_at',
  'created_at',
  'updated_at',
].sort();

/** Waits for `check` to hold, polling, with a deadline. */
export async function waitFor(check: () => Promise<boolean>, what: string, ms = 5000) {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The ids of a list answer, in its order. */
export const ids = (body: { ideas: { id: number }[] }) => body.ideas.map((i) => i.id);

export interface IdeasApi {
  /** The service of the running test or block; a test that starts another assigns it here. */
  h: Harness;
  /** Every URL the service asked the injected fetch for (emptied before each test). */
  asked: string[];
  /** False: the injected fetch fails like a missing network (true again before each test). */
  online: boolean;
  /** Extra page handlers by host + path, ahead of the model pages (cleared before each test). */
  extraPages: Map<string, http.RequestListener>;
  /** The injected fetch: platform URLs go to the local page server. */
  localFetch: FetchFn;
  /** A fresh service (and database) for every test of the block. */
  freshServicePerTest(): void;
  /** One service for the whole block: its tests only read, or leave nothing that another test sees. */
  sharedService(setup?: () => Promise<void>): void;
  create(body?: Record<string, unknown>): Promise<any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  importUrl(url: string, extra?: Record<string, unknown>): Promise<JsonResponse>;
  move(id: number, status: string, extra?: Record<string, unknown>): Promise<JsonResponse>;
  list(query?: string): Promise<any>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** Registers the page server and the per-test reset; the service comes from freshServicePerTest or sharedService. */
export function useIdeasApi(db: DialectUnderTest): IdeasApi {
  let pages: http.Server;
  let pagesBase: string;

  const api: IdeasApi = {
    h: undefined as unknown as Harness,
    asked: [],
    online: true,
    extraPages: new Map<string, http.RequestListener>(),
    localFetch: async (url, init) => {
      api.asked.push(url);
      if (!api.online) throw new TypeError('fetch failed');
      const u = new URL(url);
      return fetch(`${pagesBase}/${u.hostname}${u.pathname}${u.search}`, init);
    },
    freshServicePerTest() {
      beforeEach(async () => {
        api.h = await start();
      });
      afterEach(() => api.h.close());
    },
    sharedService(setup = async () => {}) {
      beforeAll(async () => {
        api.h = await start();
        await setup();
      });
      afterAll(() => api.h.close());
    },
    async create(body = {}) {
      const res = await api.h.post('/api/v1/ideas', { title: 'Idea', ...body });
      expect(res.status).toBe(201);
      return res.body;
    },
    async importUrl(url, extra = {}) {
      return api.h.post('/api/v1/ideas/import', { url, ...extra });
    },
    async move(id, status, extra = {}) {
      return api.h.post(`/api/v1/ideas/${id}/status`, { status, ...extra });
    },
    async list(query = '') {
      const res = await api.h.get(`/api/v1/ideas${query}`);
      expect(res.status).toBe(200);
      return res.body;
    },
  };
  const start = async () => startService({ ideas: { fetch: api.localFetch, timeoutMs: 1000, metadataRetryMs: 0 }, ...(await db.options()) });

  beforeAll(async () => {
    pages = http.createServer((req, res) => {
      const key = decodeURIComponent((req.url ?? '/').slice(1).split('?')[0]);
      const extra = api.extraPages.get(key);
      if (extra) return extra(req, res);
      // Printables answers its short model URL with a redirect to the one with the slug.
      if (key === 'www.printables.com/model/234567') {
        res.writeHead(301, { location: '/model/234567-articulated-dragon' }).end();
        return;
      }
      const page = PAGES[key];
      if (!page) return void res.writeHead(404, { 'content-type': 'text/html' }).end('<title>Not found</title>');
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
    });
    await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
    pagesBase = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    pages.closeAllConnections();
    await new Promise((resolve) => pages.close(resolve));
  });
  beforeEach(() => {
    api.asked.length = 0;
    api.online = true;
    api.extraPages.clear();
  });
  return api;
}
