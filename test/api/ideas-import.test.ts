/**
 * Importing an idea from a model page, POST /ideas/import, for each of the five platforms: title,
 * creator, description, thumbnail and files are read from the page; without network (or with a
 * missing, slow or off-platform page) the idea is stored from the URL and marked for a metadata
 * refresh, which a refresh or the background retry fills in later; the same model is stored once.
 * Only the platforms' own hosts are ever fetched; URLs of other sites, IP addresses, schemes,
 * credentials and ports are refused (422, nothing fetched or stored). On SQLite and PostgreSQL.
 */
import { FETCHABLE_HOSTS } from '../../service/ideas/platforms';
import { describeDialects } from '../helpers/dialects';
import { expectError } from '../helpers/service';
import { IDEA_KEYS, ISO, useIdeasApi } from './ideas-fixtures';
import { IMPORTS, NO_FILES } from './ideas-model-pages';

describeDialects('ideas API', (db) => {
  const api = useIdeasApi(db);
  const { asked, extraPages, freshServicePerTest, sharedService, create, importUrl, list } = api;

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
      api.online = false;
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
      expect(api.h.logs).toContainEqual(expect.objectContaining({ level: 40, msg: expect.stringMatching(/model page not read/), platform: p.platform, reason: 'fetch failed' }));

      // The network is back: a refresh fills the metadata in, the user's fields stay.
      api.online = true;
      await api.h.put(`/api/v1/ideas/${res.body.id}`, { notes: 'mine', tags: ['x'] });
      const refreshed = await api.h.post(`/api/v1/ideas/${res.body.id}/refresh-metadata`);
      expect(refreshed.status).toBe(200);
      expect(refreshed.body).toMatchObject({ ...p.meta, notes: 'mine', tags: ['x'], is_business: true, metadata_refresh_needed: false, metadata_fetched_at: expect.stringMatching(ISO) });
    });

    test('a refresh that still fails changes nothing but stays marked', async () => {
      api.online = false;
      const idea = (await importUrl(IMPORTS[0].url)).body;
      const res = await api.h.post(`/api/v1/ideas/${idea.id}/refresh-metadata`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ title: idea.title, metadata_refresh_needed: true, metadata_fetched_at: null });
    });

    test('the background retry fills in ideas still missing their metadata', async () => {
      api.online = false;
      const first = (await importUrl(IMPORTS[1].url)).body;
      const second = (await importUrl(IMPORTS[2].url)).body;
      api.online = true;
      expect(await api.h.service.context.ideas.retryMetadata()).toBe(2);
      expect((await api.h.get(`/api/v1/ideas/${first.id}`)).body).toMatchObject({ title: 'Articulated Dragon', metadata_refresh_needed: false });
      expect((await api.h.get(`/api/v1/ideas/${second.id}`)).body).toMatchObject({ title: 'Cable Clips', metadata_refresh_needed: false });
      expect(await api.h.service.context.ideas.retryMetadata()).toBe(0);
    });

    test('a page that is missing, too slow, or redirects off the platform leaves the idea marked for a refresh', async () => {
      // 404 on the platform
      const missing = await importUrl('https://www.thingiverse.com/thing:999');
      expect(missing.status).toBe(201);
      expect(missing.body).toMatchObject({ title: 'Thingiverse model 999', metadata_refresh_needed: true });
      // A page that never answers: the import answers after the fetch timeout (1 s here).
      extraPages.set('makerworld.com/en/models/777', () => {});
      const slow = await importUrl('https://makerworld.com/en/models/777-slow-one');
      expect(slow.status).toBe(201);
      expect(slow.body).toMatchObject({ title: 'Slow one', metadata_refresh_needed: true });
      // Given up by the fetch timeout (its reason in the log), not by a stopwatch in this test.
      expect(api.h.logs).toContainEqual(expect.objectContaining({ msg: expect.stringMatching(/model page not read/), model_id: '777', reason: expect.stringMatching(/timed out after \d+ ms/) }));
      // A redirect to an address the user could pick is never followed.
      extraPages.set('www.printables.com/model/888', (_req, res) => res.writeHead(302, { location: 'http://127.0.0.1:9/admin' }).end());
      const redirected = await importUrl('https://www.printables.com/model/888-evil');
      expect(redirected.status).toBe(201);
      expect(redirected.body).toMatchObject({ title: 'Evil', metadata_refresh_needed: true });
      expect(asked.filter((u) => !FETCHABLE_HOSTS.has(new URL(u).hostname))).toEqual([]);
      expect(api.h.logs).toContainEqual(expect.objectContaining({ msg: expect.stringMatching(/model page not read/), reason: expect.stringMatching(/refused http:\/\/127\.0\.0\.1/) }));
    });

    test('two imports of the same model at once store it once', async () => {
      const [x, y] = await Promise.all([importUrl(IMPORTS[0].url), importUrl(IMPORTS[0].again)]);
      expect([x.status, y.status].sort()).toEqual([200, 201]);
      expect(x.body.id).toBe(y.body.id);
      expect((await list()).pagination.total_items).toBe(1);
    });

    test('refuses bodies without a URL string and unknown fields', async () => {
      for (const body of [{}, { url: 42 }, { url: null }, { url: IMPORTS[0].url, title: 'x' }, { url: IMPORTS[0].url, tags: 'x' }]) {
        expectError(await api.h.post('/api/v1/ideas/import', body), 422, 'VALIDATION_ERROR');
      }
      expect(asked).toEqual([]);
    });

    test('refresh-metadata needs a platform page', async () => {
      const manual = await create({ title: 'mine' });
      expect(expectError(await api.h.post(`/api/v1/ideas/${manual.id}/refresh-metadata`), 409, 'NO_SOURCE_PAGE').details).toMatchObject({ idea_id: manual.id });
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
});
