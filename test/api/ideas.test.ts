
import { describeDialects } from '../helpers/dialects';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FetchFn } from '../../service/ideas/fetcher';
import { FETCHABLE_HOSTS } from '../../service/ideas/platforms';
import type { TrendingSource } from '../../service/ideas/trending';
import { bambu, expectError, startService, type Harness } from '../helpers/service';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const HOUR = 3_600_000;

/** The keys of an idea in every response. */
const IDEA_KEYS = [
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
const NO_FILES = { file_count: null, formats: [], files: [] };

const ld = (data: unknown) => `<script type="application/ld+json">${JSON.stringify(data)}</script>`;

/** Model pages as the five platforms serve them (trimmed to what the import reads), by host + path. */
const PAGES: Record<string, string> = {
  'makerworld.com/en/models/123456': `<!DOCTYPE html><html lang="en"><head>
    <title>Flexi Rex - Print in place | MakerWorld</title>
    <meta property="og:type" content="website">
    <meta property="og:title" content="Flexi Rex - Print in place">
    <meta property="og:description" content="An articulated T-Rex, printed in one piece. No supports needed.">
    <meta property="og:image" content="https://makerworld.bblmw.com/makerworld/model/flexirex/cover.jpg">
    <meta name="author" content="DinoMaker">
    </head><body><div id="__next"></div></body></html>`,
  'www.printables.com/model/234567-articulated-dragon': `<!doctype html><html><head>
    <title>Articulated Dragon by Jane | Download free STL model | Printables.com</title>
    <meta property="og:title" content="Articulated Dragon by Jane | Download free STL model | Printables.com">
    <meta property="og:image" content="https://media.printables.com/media/prints/234567/images/dragon.webp">
    ${ld({
      '@context': 'https://schema.org',
      '@type': '3DModel',
      name: 'Articulated Dragon',
      author: { '@type': 'Person', name: 'Jane' },
      description: '<p>A print-in-place dragon with 30 joints.</p><p>PLA, 0.2 mm layers.</p>',
      image: 'https://media.printables.com/media/prints/234567/images/dragon_large.webp',
      encoding: [
        { '@type': 'MediaObject', name: 'dragon.3mf', encodingFormat: 'model/3mf', contentSize: '4.1 MB' },
        { '@type': 'MediaObject', name: 'dragon_body.stl', contentSize: '12 MB' },
      ],
    })}
    </head><body></body></html>`,
  'www.thingiverse.com/thing:345678': `<html><head>
    <title>Cable Clips by Bob - Thingiverse</title>
    <meta property="og:title" content="Cable Clips">
    <meta property="og:description" content="Clips for desk cables &amp; chargers.">
    <meta property="og:image" content="https://cdn.thingiverse.com/assets/ab/cd/cable_clips.jpg">
    <meta name="twitter:creator" content="Bob">
    </head></html>`,
  'www.myminifactory.com/object/3d-print-castle-tower-456789': `<html><head>
    <meta property="og:title" content="Castle Tower">
    ${ld({
      '@context': 'https://schema.org',
      '@type': 'Product',
      name: 'Castle Tower',
      brand: { '@type': 'Brand', name: 'Medieval Minis' },
      description: 'A modular castle tower for tabletop games.',
      image: ['https://dl.myminifactory.com/object-assets/castle/tower.jpg'],
    })}
    </head></html>`,
  'cults3d.com/en/3d-model/gadget/phone-stand': `<html><head>
    <meta property="og:title" content="Phone Stand">
    <meta property="og:description" content="Adjustable phone stand.">
    <meta property="og:image" content="https://files.cults3d.com/uploaders/phone-stand.png">
    ${ld({ '@type': 'CreativeWork', name: 'Phone Stand', creator: 'Lena3D', encoding: { contentUrl: 'https://files.cults3d.com/phone_stand.stl' } })}
    </head></html>`,
};

const IMPORTS = [
  {
    platform: 'makerworld',
    url: 'https://makerworld.com/en/models/123456-flexi-rex?from=search#profileId-99',
    again: 'https://makerworld.com/de/models/123456',
    model_id: '123456',
    source_url: 'https://makerworld.com/en/models/123456',
    offline_title: 'Flexi rex',
    meta: {
      title: 'Flexi Rex - Print in place',
      creator_name: 'DinoMaker',
      description: 'An articulated T-Rex, printed in one piece. No supports needed.',
      thumbnail_url: 'https://makerworld.bblmw.com/makerworld/model/flexirex/cover.jpg',
      file_info: NO_FILES,
    },
  },
  {
    platform: 'printables',
    url: 'https://www.printables.com/de/model/234567-articulated-dragon/files',
    again: 'https://printables.com/model/234567',
    model_id: '234567',
    source_url: 'https://www.printables.com/model/234567',
    offline_title: 'Articulated dragon',
    meta: {
      title: 'Articulated Dragon',
      creator_name: 'Jane',
      description: 'A print-in-place dragon with 30 joints.\nPLA, 0.2 mm layers.',
      thumbnail_url: 'https://media.printables.com/media/prints/234567/images/dragon_large.webp',
      file_info: {
        file_count: 2,
        formats: ['3MF', 'STL'],
        files: [
          { name: 'dragon.3mf', format: '3MF', size: '4.1 MB' },
          { name: 'dragon_body.stl', format: 'STL', size: '12 MB' },
        ],
      },
    },
  },
  {
    platform: 'thingiverse',
    url: 'https://www.thingiverse.com/thing:345678/files',
    again: 'https://thingiverse.com/thing:345678',
    model_id: '345678',
    source_url: 'https://www.thingiverse.com/thing:345678',
    offline_title: 'Thingiverse model 345678',
    meta: {
      title: 'Cable Clips',
      creator_name: 'Bob',
      description: 'Clips for desk cables & chargers.',
      thumbnail_url: 'https://cdn.thingiverse.com/assets/ab/cd/cable_clips.jpg',
      file_info: NO_FILES,
    },
  },
  {
    platform: 'myminifactory',
    url: 'https://www.myminifactory.com/object/3d-print-castle-tower-456789?ref=home',
    again: 'https://myminifactory.com/object/3d-print-castle-tower-456789/',
    model_id: '456789',
    source_url: 'https://www.myminifactory.com/object/3d-print-castle-tower-456789',
    offline_title: 'Castle tower',
    meta: {
      title: 'Castle Tower',
      creator_name: 'Medieval Minis',
      description: 'A modular castle tower for tabletop games.',
      thumbnail_url: 'https://dl.myminifactory.com/object-assets/castle/tower.jpg',
      file_info: NO_FILES,
    },
  },
  {
    platform: 'cults3d',
    url: 'https://cults3d.com/fr/mod%C3%A8le-3d/gadget/phone-stand',
    again: 'https://cults3d.com/en/3d-model/gadget/phone-stand?utm_source=newsletter',
    model_id: 'phone-stand',
    source_url: 'https://cults3d.com/en/3d-model/gadget/phone-stand',
    offline_title: 'Phone stand',
    meta: {
      title: 'Phone Stand',
      creator_name: 'Lena3D',
      description: 'Adjustable phone stand.',
      thumbnail_url: 'https://files.cults3d.com/uploaders/phone-stand.png',
      file_info: { file_count: 1, formats: ['STL'], files: [{ name: 'phone_stand.stl', format: 'STL', size: null }] },
    },
  },
] as const;

/** Waits for `check` to hold, polling, with a deadline. */
async function waitFor(check: () => Promise<boolean>, what: string, ms = 5000) {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describeDialects('ideas API', (db) => {
  let pages: http.Server;
  let pagesBase: string;
  /** Every URL the service asked the injected fetch for. */
  const asked: string[] = [];
  let online = true;
  const extraPages = new Map<string, http.RequestListener>();

  /** The injected fetch: platform URLs go to the local page server; "offline" fails like a missing network. */
  const localFetch: FetchFn = async (url, init) => {
    asked.push(url);
    if (!online) throw new TypeError('fetch failed');
    const u = new URL(url);
    return fetch(`${pagesBase}/${u.hostname}${u.pathname}${u.search}`, init);
  };

  beforeAll(async () => {
    pages = http.createServer((req, res) => {
      const key = decodeURIComponent((req.url ?? '/').slice(1).split('?')[0]);
      const extra = extraPages.get(key);
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

  let h: Harness;
  const start = async () => startService({ ideas: { fetch: localFetch, timeoutMs: 1000, metadataRetryMs: 0 }, ...(await db.options()) });
  beforeEach(() => {
    asked.length = 0;
    online = true;
    extraPages.clear();
  });
  /** A fresh service (and database) for every test of the block. */
  function freshServicePerTest() {
    beforeEach(async () => {
      h = await start();
    });
    afterEach(() => h.close());
  }
  /** One service for the whole block: its tests only read, or leave nothing that another test sees. */
  function sharedService(setup: () => Promise<void> = async () => {}) {
    beforeAll(async () => {
      h = await start();
      await setup();
    });
    afterAll(() => h.close());
  }

  async function create(body: Record<string, unknown> = {}) {
    const res = await h.post('/api/v1/ideas', { title: 'Idea', ...body });
    expect(res.status).toBe(201);
    return res.body;
  }
  async function importUrl(url: string, extra: Record<string, unknown> = {}) {
    return h.post('/api/v1/ideas/import', { url, ...extra });
  }
  async function move(id: number, status: string, extra: Record<string, unknown> = {}) {
    return h.post(`/api/v1/ideas/${id}/status`, { status, ...extra });
  }
  async function list(query = '') {
    const res = await h.get(`/api/v1/ideas${query}`);
    expect(res.status).toBe(200);
    return res.body;
  }
  const ids = (body: { ideas: { id: number }[] }) => body.ideas.map((i) => i.id);

  describe('create, read, update, delete', () => {
    freshServicePerTest();

    test('creates a manual idea (201) with every field of an idea', async () => {
      const res = await h.post('/api/v1/ideas', {
        title: '  Wall-mounted spool holder ',
        creator_name: 'me',
        description: 'Two arms,\nscrewed to the wall.',
        thumbnail_url: 'https://example.com/spool.png',
        file_info: { files: [{ name: 'arm.stl', format: 'STL' }] },
        notes: 'for the garage',
        tags: ['Workshop', 'storage', 'workshop'],
        is_business: true,
      });
      expect(res.status).toBe(201);
      expect(Object.keys(res.body).sort()).toEqual(IDEA_KEYS);
      expect(res.body).toEqual({
        id: expect.any(Number),
        title: 'Wall-mounted spool holder',
        creator_name: 'me',
        source_platform: 'manual',
        source_url: null,
        model_id: null,
        thumbnail_url: 'https://example.com/spool.png',
        description: 'Two arms,\nscrewed to the wall.',
        file_info: { file_count: 1, formats: ['STL'], files: [{ name: 'arm.stl', format: 'STL', size: null }] },
        notes: 'for the garage',
        tags: ['Workshop', 'storage'],
        is_business: true,
        status: 'idea',
        job_id: null,
        metadata_refresh_needed: false,
        metadata_fetched_at: null,
        status_changed_at: expect.stringMatching(ISO),
        created_at: expect.stringMatching(ISO),
        updated_at: expect.stringMatching(ISO),
      });
      expect((await h.get(`/api/v1/ideas/${res.body.id}`)).body).toEqual(res.body);
      // Nothing was fetched for a hand-made idea.
      expect(asked).toEqual([]);
    });

    test('a minimal idea gets the defaults', async () => {
      const idea = await create({ title: 'Just a title' });
      expect(idea).toMatchObject({ source_platform: 'manual', tags: [], is_business: false, notes: null, file_info: NO_FILES, status: 'idea' });
    });

    test('every one of the six platforms can be stored by hand', async () => {
      for (const platform of ['makerworld', 'printables', 'thingiverse', 'myminifactory', 'cults3d', 'manual']) {
        const idea = await create({ title: platform, source_platform: platform });
        expect(idea).toMatchObject({ source_platform: platform, model_id: null });
      }
      expect((await list()).summary.total_ideas).toBe(6);
    });

    test('a platform source_url gives the idea its platform and model id, and the model is kept once', async () => {
      const idea = await create({ title: 'Dragon', source_url: 'https://www.printables.com/model/234567-articulated-dragon?lang=en' });
      expect(idea).toMatchObject({ source_platform: 'printables', model_id: '234567', source_url: 'https://www.printables.com/model/234567' });
      const again = await h.post('/api/v1/ideas', { title: 'Dragon again', source_url: 'https://printables.com/de/model/234567' });
      expect(expectError(again, 409, 'IDEA_ALREADY_EXISTS').details).toMatchObject({ idea_id: idea.id, source_platform: 'printables', model_id: '234567' });
      // The page is not read by a hand-made entry.
      expect(asked).toEqual([]);
    });

    test('source_url and source_platform must agree', async () => {
      const mismatch = await h.post('/api/v1/ideas', { title: 'x', source_platform: 'thingiverse', source_url: 'https://www.printables.com/model/1' });
      expect(expectError(mismatch, 422, 'VALIDATION_ERROR').details.fields).toEqual([expect.objectContaining({ field: 'source_platform' })]);
      const notAModel = await h.post('/api/v1/ideas', { title: 'x', source_platform: 'printables', source_url: 'https://example.com/dragon' });
      expect(expectError(notAModel, 422).details.fields).toEqual([expect.objectContaining({ field: 'source_url', message: expect.stringMatching(/Printables/) })]);
      // A manual idea may link anything http(s).
      expect(await create({ title: 'blog', source_url: 'https://example.com/dragon' })).toMatchObject({ source_platform: 'manual', source_url: 'https://example.com/dragon', model_id: null });
    });

    test('updates title, notes, tags and the business marker; clears with null', async () => {
      const idea = await create({ title: 'Old', notes: 'n', tags: ['a'] });
      const res = await h.put(`/api/v1/ideas/${idea.id}`, { title: 'New', notes: null, tags: ['b', 'c'], is_business: true, description: 'd' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: idea.id, title: 'New', notes: null, tags: ['b', 'c'], is_business: true, description: 'd', status: 'idea' });
      expect(Date.parse(res.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(idea.updated_at));
      expect((await h.get(`/api/v1/ideas/${idea.id}`)).body).toEqual(res.body);
    });

    test('refuses empty, unknown and read-only fields in an update', async () => {
      const idea = await create();
      expectError(await h.put(`/api/v1/ideas/${idea.id}`, {}), 422, 'VALIDATION_ERROR');
      for (const body of [{ status: 'planned' }, { source_platform: 'printables' }, { model_id: '1' }, { id: 5 }, { bogus: 1 }]) {
        const err = expectError(await h.put(`/api/v1/ideas/${idea.id}`, body), 422, 'VALIDATION_ERROR');
        expect(err.details.fields[0].code).toBe('unknown_field');
      }
      expect((await h.get(`/api/v1/ideas/${idea.id}`)).body).toEqual(idea);
    });

    test('deletes an idea', async () => {
      const idea = await create();
      const res = await h.del(`/api/v1/ideas/${idea.id}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ id: idea.id, message: 'Idea deleted', deleted_at: expect.stringMatching(ISO) });
      expectError(await h.get(`/api/v1/ideas/${idea.id}`), 404, 'IDEA_NOT_FOUND');
      expectError(await h.del(`/api/v1/ideas/${idea.id}`), 404, 'IDEA_NOT_FOUND');
    });

    test('unknown ids are 404 IDEA_NOT_FOUND, malformed ids 400', async () => {
      for (const [method, path, body] of [
        ['GET', '/api/v1/ideas/999', undefined],
        ['PUT', '/api/v1/ideas/999', { notes: 'x' }],
        ['DELETE', '/api/v1/ideas/999', undefined],
        ['POST', '/api/v1/ideas/999/status', { status: 'planned' }],
        ['POST', '/api/v1/ideas/999/refresh-metadata', undefined],
      ] as const) {
        expect(expectError(await h.request(method, path, body), 404, 'IDEA_NOT_FOUND').details).toEqual({ idea_id: 999 });
      }
      for (const bad of ['abc', '0', '-1', '1.5', '99999999999999999999']) {
        expectError(await h.get(`/api/v1/ideas/${bad}`), 400, 'VALIDATION_ERROR');
      }
    });
  });

  describe('refused bodies', () => {
    sharedService();

    test.each([
      ['no title', {}, 'title'],
      ['an empty title', { title: '   ' }, 'title'],
      ['an unknown platform', { title: 'x', source_platform: 'youtube' }, 'source_platform'],
      ['an upper-case platform', { title: 'x', source_platform: 'Printables' }, 'source_platform'],
      ['a javascript: thumbnail', { title: 'x', thumbnail_url: 'javascript:alert(1)' }, 'thumbnail_url'],
      ['a file: source', { title: 'x', source_url: 'file:///etc/passwd' }, 'source_url'],
      ['a tag with a comma', { title: 'x', tags: ['a,b'] }, 'tags.0'],
      ['too many tags', { title: 'x', tags: Array.from({ length: 31 }, (_, i) => `t${i}`) }, 'tags'],
      ['a string for tags', { title: 'x', tags: 'a' }, 'tags'],
      ['a status', { title: 'x', status: 'planned' }, 'status'],
      ['a title of 301 characters', { title: 'x'.repeat(301) }, 'title'],
      ['a control character in the title', { title: 'a\u0000b' }, 'title'],
      ['is_business as a string', { title: 'x', is_business: 'yes' }, 'is_business'],
    ])('refuses %s (422 naming the field)', async (_name, body, field) => {
      const res = await h.post('/api/v1/ideas', body);
      const err = expectError(res, 422, 'VALIDATION_ERROR');
      expect(err.details.fields.map((f: { field: string }) => f.field)).toContain(field);
      expect((await list()).pagination.total_items).toBe(0);
    });
  });

  describe('list', () => {
    let a: { id: number }, b: { id: number }, c: { id: number }, d: { id: number };
    sharedService(async () => {
      a = await create({ title: 'Benchy', tags: ['Calibration', 'boat'], source_platform: 'thingiverse' });
      b = await create({ title: 'Gear set', tags: ['mechanical'], is_business: true, notes: 'for customer 100% urgent' });
      c = await create({ title: 'Dragon', tags: ['toy', 'calibration'], creator_name: 'Jane Doe', source_platform: 'printables' });
      d = await create({ title: 'Shelf bracket', description: 'holds a dragon_egg', is_business: true });
      expect((await move(b.id, 'planned')).status).toBe(200);
      expect((await move(c.id, 'archived')).status).toBe(200);
    });

    test('lists newest first, with pagination and a summary over all ideas', async () => {
      const body = await list();
      expect(ids(body)).toEqual([d.id, c.id, b.id, a.id]);
      expect(body.pagination).toEqual({ page: 1, limit: 50, total_items: 4, total_pages: 1, has_next: false, has_previous: false });
      expect(body.summary).toEqual({ total_ideas: 4, by_status: { idea: 2, planned: 1, printing: 0, completed: 0, archived: 1 } });
    });

    test('pages', async () => {
      const p1 = await list('?limit=3');
      expect(ids(p1)).toEqual([d.id, c.id, b.id]);
      expect(p1.pagination).toEqual({ page: 1, limit: 3, total_items: 4, total_pages: 2, has_next: true, has_previous: false });
      const p2 = await list('?limit=3&page=2');
      expect(ids(p2)).toEqual([a.id]);
      expect(p2.pagination).toMatchObject({ page: 2, has_next: false, has_previous: true });
      expect(ids(await list('?limit=3&page=3'))).toEqual([]);
      expect(ids(await list('?order_by=title&order_dir=asc'))).toEqual([a.id, c.id, b.id, d.id]);
    });

    test.each([
      ['?status=planned', () => [b.id]],
      ['?status=idea', () => [d.id, a.id]],
      ['?source_platform=printables', () => [c.id]],
      ['?source_platform=manual', () => [d.id, b.id]],
      ['?tags=calibration', () => [c.id, a.id]],
      ['?tags=CALIBRATION,boat', () => [a.id]],
      ['?tags=calibration&tags=toy', () => [c.id]],
      ['?tags=nothing', () => []],
      ['?is_business=true', () => [d.id, b.id]],
      ['?is_business=false', () => [c.id, a.id]],
      ['?search=dragon', () => [d.id, c.id]],
      ['?search=JANE', () => [c.id]],
      ['?search=100%25', () => [b.id]],
      ['?search=_', () => [d.id]],
      ['?is_business=true&search=gear', () => [b.id]],
    ])('filters %s', async (query, expected) => {
      const body = await list(query);
      expect(ids(body)).toEqual(expected());
      expect(body.pagination.total_items).toBe(expected().length);
    });

    test.each([
      ['?status=done'],
      ['?status=IDEA'],
      ['?source_platform=youtube'],
      ['?is_business=maybe'],
      ['?limit=0'],
      ['?limit=101'],
      ['?page=0'],
      ['?order_by=rank'],
      ['?search='],
    ])('refuses %s with 400', async (query) => {
      const err = expectError(await h.get(`/api/v1/ideas${query}`), 400, 'VALIDATION_ERROR');
      expect(err.details.location).toBe('query');
    });
  });

  describe('import from a model page', () => {
    freshServicePerTest();

    test.each(IMPORTS)('$platform: reads title, creator, description, thumbnail and files from the page (201)', async (p) => {
      const res = await importUrl(p.url, { notes: 'print in silk PLA', tags: ['gift'] });
      expect(res.status).toBe(201);
      expect(Object.keys(res.body).sort()).toEqual(IDEA_KEYS);
      expect(res.body).toEqual({
        id: expect.any(Number),
        ...p.meta,
        source_platform: p.platform,
        source_url: p.source_url,
        model_id: p.model_id,
        notes: 'print in silk PLA',
        tags: ['gift'],
        is_business: false,
        status: 'idea',
        job_id: null,
        metadata_refresh_needed: false,
        metadata_fetched_at: expect.stringMatching(ISO),
        status_changed_at: expect.stringMatching(ISO),
        created_at: expect.stringMatching(ISO),
        updated_at: expect.stringMatching(ISO),
      });
      // Only the canonical page (and a redirect on the same platform) was fetched, never the URL as given.
      expect(asked[0]).toBe(p.source_url);
      for (const url of asked) expect(FETCHABLE_HOSTS.has(new URL(url).hostname)).toBe(true);

      // The same model again, through another URL shape: 200 and the same idea, nothing fetched.
      asked.length = 0;
      const again = await importUrl(p.again, { notes: 'other notes' });
      expect(again.status).toBe(200);
      expect(again.body).toEqual(res.body);
      expect(asked).toEqual([]);
      expect((await list()).pagination.total_items).toBe(1);
    });

    test.each(IMPORTS)('$platform without network: stored from the URL and marked for a metadata refresh', async (p) => {
      online = false;
      const res = await importUrl(p.url, { is_business: true });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        title: p.offline_title,
        creator_name: null,
        description: null,
        thumbnail_url: null,
        file_info: NO_FILES,
        source_platform: p.platform,
        source_url: p.source_url,
        model_id: p.model_id,
        is_business: true,
        metadata_refresh_needed: true,
        metadata_fetched_at: null,
      });
      expect(h.logs).toContainEqual(expect.objectContaining({ level: 40, msg: expect.stringMatching(/model page not read/), platform: p.platform, reason: 'fetch failed' }));

      // The network is back: a refresh fills the metadata in, the user's fields stay.
      online = true;
      await h.put(`/api/v1/ideas/${res.body.id}`, { notes: 'mine', tags: ['x'] });
      const refreshed = await h.post(`/api/v1/ideas/${res.body.id}/refresh-metadata`);
      expect(refreshed.status).toBe(200);
      expect(refreshed.body).toMatchObject({ ...p.meta, notes: 'mine', tags: ['x'], is_business: true, metadata_refresh_needed: false, metadata_fetched_at: expect.stringMatching(ISO) });
    });

    test('a refresh that still fails changes nothing but stays marked', async () => {
      online = false;
      const idea = (await importUrl(IMPORTS[0].url)).body;
      const res = await h.post(`/api/v1/ideas/${idea.id}/refresh-metadata`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ title: idea.title, metadata_refresh_needed: true, metadata_fetched_at: null });
    });

    test('the background retry fills in ideas still missing their metadata', async () => {
      online = false;
      const first = (await importUrl(IMPORTS[1].url)).body;
      const second = (await importUrl(IMPORTS[2].url)).body;
      online = true;
      expect(await h.service.context.ideas.retryMetadata()).toBe(2);
      expect((await h.get(`/api/v1/ideas/${first.id}`)).body).toMatchObject({ title: 'Articulated Dragon', metadata_refresh_needed: false });
      expect((await h.get(`/api/v1/ideas/${second.id}`)).body).toMatchObject({ title: 'Cable Clips', metadata_refresh_needed: false });
      expect(await h.service.context.ideas.retryMetadata()).toBe(0);
    });

    test('a page that is missing, too slow, or redirects off the platform leaves the idea marked for a refresh', async () => {
      // 404 on the platform
      const missing = await importUrl('https://www.thingiverse.com/thing:999');
      expect(missing.status).toBe(201);
      expect(missing.body).toMatchObject({ title: 'Thingiverse model 999', metadata_refresh_needed: true });
      // A page that never answers: the import answers after the fetch timeout (1 s here).
      extraPages.set('makerworld.com/en/models/777', () => {});
      const started = Date.now();
      const slow = await importUrl('https://makerworld.com/en/models/777-slow-one');
      expect(slow.status).toBe(201);
      expect(slow.body).toMatchObject({ title: 'Slow one', metadata_refresh_needed: true });
      expect(Date.now() - started).toBeLessThan(4000);
      // A redirect to an address the user could pick is never followed.
      extraPages.set('www.printables.com/model/888', (_req, res) => res.writeHead(302, { location: 'http://127.0.0.1:9/admin' }).end());
      const redirected = await importUrl('https://www.printables.com/model/888-evil');
      expect(redirected.status).toBe(201);
      expect(redirected.body).toMatchObject({ title: 'Evil', metadata_refresh_needed: true });
      expect(asked.filter((u) => !FETCHABLE_HOSTS.has(new URL(u).hostname))).toEqual([]);
      expect(h.logs).toContainEqual(expect.objectContaining({ msg: expect.stringMatching(/model page not read/), reason: expect.stringMatching(/refused http:\/\/127\.0\.0\.1/) }));
    });

    test('two imports of the same model at once store it once', async () => {
      const [x, y] = await Promise.all([importUrl(IMPORTS[0].url), importUrl(IMPORTS[0].again)]);
      expect([x.status, y.status].sort()).toEqual([200, 201]);
      expect(x.body.id).toBe(y.body.id);
      expect((await list()).pagination.total_items).toBe(1);
    });

    test('refuses bodies without a URL string and unknown fields', async () => {
      for (const body of [{}, { url: 42 }, { url: null }, { url: IMPORTS[0].url, title: 'x' }, { url: IMPORTS[0].url, tags: 'x' }]) {
        expectError(await h.post('/api/v1/ideas/import', body), 422, 'VALIDATION_ERROR');
      }
      expect(asked).toEqual([]);
    });

    test('refresh-metadata needs a platform page', async () => {
      const manual = await create({ title: 'mine' });
      expect(expectError(await h.post(`/api/v1/ideas/${manual.id}/refresh-metadata`), 409, 'NO_SOURCE_PAGE').details).toMatchObject({ idea_id: manual.id });
    });
  });

  describe('refused import URLs', () => {
    sharedService();

    test.each([
      ['a lookalike host', 'https://makerworld.com.evil.net/en/models/123456', /not a supported platform/],
      ['another site', 'https://example.com/model/1', /not a supported platform/],
      ['an IP address', 'http://127.0.0.1:8000/api/v1/printers', /IP addresses/],
      ['a metadata service', 'http://169.254.169.254/latest/meta-data/', /IP addresses/],
      ['file:', 'file:///etc/passwd', /scheme "file"/],
      ['ftp:', 'ftp://www.thingiverse.com/thing:1', /scheme "ftp"/],
      ['javascript:', 'javascript:alert(document.cookie)', /scheme "javascript"/],
      ['credentials', 'https://admin:secret@www.printables.com/model/1', /credentials/],
      ['a port', 'https://www.printables.com:8080/model/1', /port 8080/],
      ['a platform page that is no model', 'https://www.printables.com/social/1-someone', /not a Printables model page/],
      ['no URL at all', 'dragon', /not a valid absolute URL/],
    ])('refuses %s: 422 naming url, nothing fetched or stored', async (_name, url, reason) => {
      const res = await importUrl(url);
      const err = expectError(res, 422, 'VALIDATION_ERROR');
      expect(err.details).toEqual({ location: 'body', fields: [{ field: 'url', message: expect.stringMatching(reason), code: 'custom' }] });
      expect(asked).toEqual([]);
      expect((await list()).pagination.total_items).toBe(0);
    });
  });

  describe('life cycle', () => {
    freshServicePerTest();

    test('idea -> planned -> printing -> completed, then archived and back to idea', async () => {
      const idea = await create();
      let last = idea;
      for (const status of ['planned', 'printing', 'completed', 'archived', 'idea']) {
        const res = await move(idea.id, status);
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ id: idea.id, status });
        expect(Date.parse(res.body.status_changed_at)).toBeGreaterThanOrEqual(Date.parse(last.status_changed_at));
        last = res.body;
      }
    });

    test('planned -> idea and printing -> planned go back; archived is reachable from every state', async () => {
      const idea = await create();
      expect((await move(idea.id, 'planned')).status).toBe(200);
      expect((await move(idea.id, 'idea')).body.status).toBe('idea');
      for (const path of [[], ['planned'], ['planned', 'printing'], ['planned', 'printing', 'completed']]) {
        const other = await create();
        for (const s of path) expect((await move(other.id, s)).status).toBe(200);
        expect((await move(other.id, 'archived')).body.status).toBe('archived');
      }
      const printing = await create();
      await move(printing.id, 'planned');
      await move(printing.id, 'printing');
      expect((await move(printing.id, 'planned')).body).toMatchObject({ status: 'planned', job_id: null });
    });

    test('asking for the current status changes nothing', async () => {
      const idea = await create();
      const res = await move(idea.id, 'idea');
      expect(res.status).toBe(200);
      expect(res.body).toEqual(idea);
    });

    test('refuses bad status bodies with 422', async () => {
      const idea = await create();
      for (const body of [{}, { status: 'done' }, { status: 'PLANNED' }, { status: 'planned', job_id: 1 }, { status: 'planned', extra: 1 }, { status: 'printing', job_id: 'x' }]) {
        expectError(await h.post(`/api/v1/ideas/${idea.id}/status`, body), 422, 'VALIDATION_ERROR');
      }
      expect((await h.get(`/api/v1/ideas/${idea.id}`)).body.status).toBe('idea');
    });
  });

  describe('refused moves', () => {
    sharedService();

    test.each([
      [[], 'completed'],
      [[], 'printing'],
      [['planned'], 'completed'],
      [['planned', 'printing'], 'idea'],
      [['planned', 'printing', 'completed'], 'idea'],
      [['planned', 'printing', 'completed'], 'planned'],
      [['planned', 'printing', 'completed'], 'printing'],
      [['archived'], 'planned'],
      [['archived'], 'completed'],
    ])('after %j refuses a move to %s with 409', async (path, to) => {
      const idea = await create();
      for (const s of path) expect((await move(idea.id, s)).status).toBe(200);
      const from = path.length ? path[path.length - 1] : 'idea';
      const err = expectError(await move(idea.id, to), 409, 'INVALID_STATUS_TRANSITION');
      expect(err.details).toEqual({ idea_id: idea.id, from, to, allowed: expect.any(Array) });
      expect(err.details.allowed).not.toContain(to);
      expect((await h.get(`/api/v1/ideas/${idea.id}`)).body.status).toBe(from);
    });
  });

  describe('linked job', () => {
    freshServicePerTest();

    let jobId: number;
    beforeEach(async () => {
      // An inactive printer: the service never connects to it.
      expect((await h.post('/api/v1/printers', bambu('x1c-01', { is_active: false }))).status).toBe(201);
      const job = await h.post('/api/v1/jobs', { printer_id: 'x1c-01', job_name: 'Dragon', status: 'printing' });
      expect(job.status).toBe(201);
      jobId = job.body.id;
    });
    async function printing(job = jobId) {
      const idea = await create({ title: 'Dragon' });
      await move(idea.id, 'planned');
      const res = await move(idea.id, 'printing', { job_id: job });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'printing', job_id: job });
      return res.body;
    }
    const completeJob = async () => {
      expect(await h.service.context.store.jobs.update(jobId, { status: 'completed', progress: 100, end_time: new Date().toISOString() })).toBe(true);
    };

    test('the idea completes when its job completes (job_update event)', async () => {
      const idea = await printing();
      await completeJob();
      h.service.context.bus.emit('job_update', { id: jobId, job_id: jobId, printer_id: 'x1c-01', change: 'status', status: 'completed', progress: 100 });
      // Read the row itself (the API also checks on read): the event alone moved it.
      await waitFor(async () => (await h.service.context.store.ideas.get(idea.id))?.status === 'completed', 'the idea to complete');
      expect((await h.get(`/api/v1/ideas/${idea.id}`)).body).toMatchObject({ status: 'completed', job_id: jobId });
    });

    test('a completion missed while not listening is caught on read', async () => {
      const idea = await printing();
      await completeJob();
      expect((await h.get(`/api/v1/ideas/${idea.id}`)).body).toMatchObject({ status: 'completed', job_id: jobId });
      expect((await list('?status=completed')).ideas.map((i: { id: number }) => i.id)).toEqual([idea.id]);
    });

    test('a job that fails or is cancelled leaves the idea printing', async () => {
      const idea = await printing();
      expect((await h.post(`/api/v1/jobs/${jobId}/cancel`)).status).toBe(200);
      expect((await h.get(`/api/v1/ideas/${idea.id}`)).body).toMatchObject({ status: 'printing', job_id: jobId });
    });

    test('an archived idea does not follow its job', async () => {
      const idea = await printing();
      await move(idea.id, 'archived');
      await completeJob();
      h.service.context.bus.emit('job_update', { id: jobId, job_id: jobId, printer_id: 'x1c-01', change: 'status', status: 'completed', progress: 100 });
      expect((await h.get(`/api/v1/ideas/${idea.id}`)).body).toMatchObject({ status: 'archived', job_id: jobId });
    });

    test('linking a job that has already completed completes the idea', async () => {
      await completeJob();
      const idea = await create();
      await move(idea.id, 'planned');
      expect((await move(idea.id, 'printing', { job_id: jobId })).body).toMatchObject({ status: 'completed', job_id: jobId });
    });

    test('the job must exist (422 naming job_id)', async () => {
      const idea = await create();
      await move(idea.id, 'planned');
      const err = expectError(await move(idea.id, 'printing', { job_id: 424242 }), 422, 'VALIDATION_ERROR');
      expect(err.details.fields).toEqual([{ field: 'job_id', message: 'no job 424242', code: 'not_found' }]);
      expect((await h.get(`/api/v1/ideas/${idea.id}`)).body).toMatchObject({ status: 'planned', job_id: null });
    });

    test('a printing idea can be linked to another job; deleting the job unlinks it', async () => {
      const idea = await printing();
      const other = (await h.post('/api/v1/jobs', { printer_id: 'x1c-01', job_name: 'Dragon 2', status: 'printing' })).body.id;
      expect((await move(idea.id, 'printing', { job_id: other })).body).toMatchObject({ status: 'printing', job_id: other });
      expect((await h.del(`/api/v1/jobs/${other}`)).status).toBe(200);
      expect((await h.get(`/api/v1/ideas/${idea.id}`)).body).toMatchObject({ status: 'printing', job_id: null });
    });
  });

  describe('trending', () => {
    freshServicePerTest();

    const trendingShape = (platform: string) => ({
      platform,
      items: [],
      total: 0,
      source: 'inactive',
      cached_at: expect.stringMatching(ISO),
      expires_at: expect.stringMatching(ISO),
      stale: false,
      message: expect.stringMatching(/not active/),
    });

    test.each(['all', 'makerworld', 'printables'])('GET /ideas/trending/%s is empty with the documented shape', async (platform) => {
      const res = await h.get(`/api/v1/ideas/trending/${platform}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual(trendingShape(platform));
      expect(Math.abs(Date.parse(res.body.expires_at) - Date.parse(res.body.cached_at) - 6 * HOUR)).toBeLessThan(1000);
    });

    test('only lower-case platform names with a trending list exist', async () => {
      for (const p of ['thingiverse', 'myminifactory', 'cults3d', 'manual', 'trending']) {
        expectError(await h.get(`/api/v1/ideas/trending/${p}`), 404, 'NOT_FOUND');
      }
    });

    test('refresh answers the cache state; bad platforms are 400', async () => {
      const all = await h.post('/api/v1/ideas/trending/refresh');
      expect(all.status).toBe(200);
      expect(all.body).toEqual({
        platforms: ['makerworld', 'printables'],
        source: 'inactive',
        total_items: 0,
        cached_at: expect.stringMatching(ISO),
        expires_at: expect.stringMatching(ISO),
        message: expect.stringMatching(/not active/),
      });
      expect((await h.post('/api/v1/ideas/trending/refresh?platform=printables')).body.platforms).toEqual(['printables']);
      expectError(await h.post('/api/v1/ideas/trending/refresh?platform=thingiverse'), 400, 'VALIDATION_ERROR');
      // Trending never fetches model pages.
      expect(asked).toEqual([]);
    });

    test('lists what the cache holds and saves an item as a personal idea', async () => {
      const { trending } = h.service.context.ideas;
      expect(
        await trending.cacheItems('makerworld', [
          { model_id: '1001', title: 'Fidget Gear', creator_name: 'Spinner', thumbnail_url: 'https://makerworld.bblmw.com/gear.jpg', stats: { likes: 950, downloads: 12000 } },
          { model_id: '1002', title: 'Desk Organizer', source_url: 'https://makerworld.com/en/models/1002-desk-organizer' },
          { model_id: '../etc', title: 'Not a model id' },
          { model_id: '1003', title: 'Foreign page', source_url: 'https://evil.example/1003' },
        ]),
      ).toBe(3);
      const mw = await h.get('/api/v1/ideas/trending/makerworld');
      expect(mw.body).toMatchObject({ platform: 'makerworld', total: 3, source: 'inactive', stale: false });
      expect(mw.body.items[0]).toEqual({
        id: 'makerworld:1001',
        platform: 'makerworld',
        model_id: '1001',
        rank: 1,
        title: 'Fidget Gear',
        creator_name: 'Spinner',
        source_url: 'https://makerworld.com/en/models/1001',
        thumbnail_url: 'https://makerworld.bblmw.com/gear.jpg',
        description: null,
        stats: { likes: 950, downloads: 12000 },
        fetched_at: expect.stringMatching(ISO),
        saved_idea_id: null,
      });
      expect(mw.body.items.map((i: { source_url: string }) => i.source_url)).toEqual([
        'https://makerworld.com/en/models/1001',
        'https://makerworld.com/en/models/1002-desk-organizer',
        'https://makerworld.com/en/models/1003',
      ]);
      expect((await h.get('/api/v1/ideas/trending/all')).body.total).toBe(3);
      expect((await h.get('/api/v1/ideas/trending/printables')).body.total).toBe(0);
      // An inactive refresh keeps what the cache holds.
      expect((await h.post('/api/v1/ideas/trending/refresh')).body.total_items).toBe(3);

      const saved = await h.post('/api/v1/ideas/trending/makerworld:1001/save');
      expect(saved.status).toBe(201);
      expect(saved.body).toMatchObject({
        title: 'Fidget Gear',
        creator_name: 'Spinner',
        source_platform: 'makerworld',
        model_id: '1001',
        source_url: 'https://makerworld.com/en/models/1001',
        thumbnail_url: 'https://makerworld.bblmw.com/gear.jpg',
        is_business: false,
        status: 'idea',
        tags: [],
        metadata_refresh_needed: true,
      });
      const again = await h.post('/api/v1/ideas/trending/makerworld:1001/save');
      expect(again.status).toBe(200);
      expect(again.body.id).toBe(saved.body.id);
      expect((await h.get('/api/v1/ideas/trending/makerworld')).body.items[0].saved_idea_id).toBe(saved.body.id);
      // The same model imported before is found, not stored twice.
      const imported = await importUrl('https://makerworld.com/en/models/1002-desk-organizer');
      expect(imported.status).toBe(201);
      const savedImported = await h.post('/api/v1/ideas/trending/makerworld:1002/save');
      expect([savedImported.status, savedImported.body.id]).toEqual([200, imported.body.id]);
      expect((await list()).pagination.total_items).toBe(2);
    });

    test('saving an item the cache does not hold is 404 TRENDING_ITEM_NOT_FOUND', async () => {
      const err = expectError(await h.post('/api/v1/ideas/trending/makerworld:404/save'), 404, 'TRENDING_ITEM_NOT_FOUND');
      expect(err.details).toEqual({ trending_id: 'makerworld:404' });
    });
  });

  describe('trending with a discovery source', () => {
    freshServicePerTest();

    async function withSource(source: TrendingSource, ttlMs?: number) {
      await h.close();
      h = await startService({ ideas: { fetch: localFetch, metadataRetryMs: 0, trending: { source, ttlMs, checkEveryMs: 0 } }, ...(await db.options()) });
    }

    test('fetch failures are logged, never shown; the previous items stay', async () => {
      let fail = false;
      const source: TrendingSource = {
        active: true,
        fetch: async (platform) => {
          if (fail) throw new Error('upstream said 503 at secret-host.internal');
          return platform === 'printables' ? [{ model_id: '55', title: 'Vase' }] : [];
        },
      };
      await withSource(source);
      const first = await h.get('/api/v1/ideas/trending/all');
      expect(first.body).toMatchObject({ source: 'live', total: 1, stale: false });
      expect(first.body.items[0]).toMatchObject({ id: 'printables:55', source_url: 'https://www.printables.com/model/55' });
      fail = true;
      const refreshed = await h.post('/api/v1/ideas/trending/refresh');
      expect(refreshed.status).toBe(200);
      expect(refreshed.body).toMatchObject({ total_items: 1, source: 'live' });
      expect(refreshed.text).not.toMatch(/upstream|secret-host/);
      expect((await h.get('/api/v1/ideas/trending/printables')).body.total).toBe(1);
      expect(h.logs).toContainEqual(expect.objectContaining({ level: 40, msg: 'trending: refresh failed', platform: 'printables' }));
    });

    test('a source that keeps failing: empty lists, and reads do not retry it at once', async () => {
      let calls = 0;
      await withSource({
        active: true,
        fetch: async () => {
          calls += 1;
          throw new Error('ECONNREFUSED');
        },
      });
      const res = await h.get('/api/v1/ideas/trending/makerworld');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ platform: 'makerworld', items: [], total: 0, source: 'live', cached_at: null, expires_at: null, stale: false, message: expect.any(String) });
      expect(res.text).not.toMatch(/ECONNREFUSED/);
      expect(calls).toBe(1);
      await h.get('/api/v1/ideas/trending/makerworld');
      expect(calls).toBe(1);
      expect((await h.post('/api/v1/ideas/trending/refresh?platform=makerworld')).status).toBe(200);
      expect(calls).toBe(2);
    });

    test('an expired cache is answered at once and refreshed in the background', async () => {
      let calls = 0;
      let release: () => void = () => {};
      const gate = new Promise<void>((r) => (release = r));
      const source: TrendingSource = {
        active: true,
        fetch: async () => {
          calls += 1;
          if (calls > 1) await gate;
          return [{ model_id: String(calls), title: `Model ${calls}` }];
        },
      };
      await withSource(source, 200);
      expect((await h.get('/api/v1/ideas/trending/makerworld')).body.items.map((i: { title: string }) => i.title)).toEqual(['Model 1']);
      await new Promise((r) => setTimeout(r, 250));
      const stale = await h.get('/api/v1/ideas/trending/makerworld');
      expect(stale.body).toMatchObject({ stale: true, total: 1 });
      expect(stale.body.items[0].title).toBe('Model 1');
      release();
      await waitFor(async () => (await h.get('/api/v1/ideas/trending/makerworld')).body.items[0]?.title === 'Model 2', 'the background refresh');
    });
  });
});
