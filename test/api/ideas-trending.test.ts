/**
 * Trending models, GET /ideas/trending/{platform} and POST /ideas/trending/refresh: the documented
 * shape while no discovery source is active, the cached items and saving one as a personal idea
 * (once per model); with a source, failures are logged but never shown (the previous items stay),
 * a failing source is not retried on every read, and an expired cache is answered at once and
 * refreshed in the background. On SQLite and PostgreSQL.
 */
import type { TrendingSource } from '../../service/ideas/trending';
import { describeDialects } from '../helpers/dialects';
import { expectError, startService } from '../helpers/service';
import { HOUR, ISO, useIdeasApi, waitFor } from './ideas-fixtures';

describeDialects('ideas API', (db) => {
  const api = useIdeasApi(db);
  const { asked, localFetch, freshServicePerTest, importUrl, list } = api;

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
      const res = await api.h.get(`/api/v1/ideas/trending/${platform}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual(trendingShape(platform));
      expect(Math.abs(Date.parse(res.body.expires_at) - Date.parse(res.body.cached_at) - 6 * HOUR)).toBeLessThan(1000);
    });

    test('only lower-case platform names with a trending list exist', async () => {
      for (const p of ['thingiverse', 'myminifactory', 'cults3d', 'manual', 'trending']) {
        expectError(await api.h.get(`/api/v1/ideas/trending/${p}`), 404, 'NOT_FOUND');
      }
    });

    test('refresh answers the cache state; bad platforms are 400', async () => {
      const all = await api.h.post('/api/v1/ideas/trending/refresh');
      expect(all.status).toBe(200);
      expect(all.body).toEqual({
        platforms: ['makerworld', 'printables'],
        source: 'inactive',
        total_items: 0,
        cached_at: expect.stringMatching(ISO),
        expires_at: expect.stringMatching(ISO),
        message: expect.stringMatching(/not active/),
      });
      expect((await api.h.post('/api/v1/ideas/trending/refresh?platform=printables')).body.platforms).toEqual(['printables']);
      expectError(await api.h.post('/api/v1/ideas/trending/refresh?platform=thingiverse'), 400, 'VALIDATION_ERROR');
      // Trending never fetches model pages.
      expect(asked).toEqual([]);
    });

    test('lists what the cache holds and saves an item as a personal idea', async () => {
      const { trending } = api.h.service.context.ideas;
      expect(
        await trending.cacheItems('makerworld', [
          { model_id: '1001', title: 'Fidget Gear', creator_name: 'Spinner', thumbnail_url: 'https://makerworld.bblmw.com/gear.jpg', stats: { likes: 950, downloads: 12000 } },
          { model_id: '1002', title: 'Desk Organizer', source_url: 'https://makerworld.com/en/models/1002-desk-organizer' },
          { model_id: '../etc', title: 'Not a model id' },
          { model_id: '1003', title: 'Foreign page', source_url: 'https://evil.example/1003' },
        ]),
      ).toBe(3);
      const mw = await api.h.get('/api/v1/ideas/trending/makerworld');
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
      expect((await api.h.get('/api/v1/ideas/trending/all')).body.total).toBe(3);
      expect((await api.h.get('/api/v1/ideas/trending/printables')).body.total).toBe(0);
      // An inactive refresh keeps what the cache holds.
      expect((await api.h.post('/api/v1/ideas/trending/refresh')).body.total_items).toBe(3);

      const saved = await api.h.post('/api/v1/ideas/trending/makerworld:1001/save');
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
      const again = await api.h.post('/api/v1/ideas/trending/makerworld:1001/save');
      expect(again.status).toBe(200);
      expect(again.body.id).toBe(saved.body.id);
      expect((await api.h.get('/api/v1/ideas/trending/makerworld')).body.items[0].saved_idea_id).toBe(saved.body.id);
      // The same model imported before is found, not stored twice.
      const imported = await importUrl('https://makerworld.com/en/models/1002-desk-organizer');
      expect(imported.status).toBe(201);
      const savedImported = await api.h.post('/api/v1/ideas/trending/makerworld:1002/save');
      expect([savedImported.status, savedImported.body.id]).toEqual([200, imported.body.id]);
      expect((await list()).pagination.total_items).toBe(2);
    });

    test('saving an item the cache does not hold is 404 TRENDING_ITEM_NOT_FOUND', async () => {
      const err = expectError(await api.h.post('/api/v1/ideas/trending/makerworld:404/save'), 404, 'TRENDING_ITEM_NOT_FOUND');
      expect(err.details).toEqual({ trending_id: 'makerworld:404' });
    });
  });

  describe('trending with a discovery source', () => {
    freshServicePerTest();

    async function withSource(source: TrendingSource, ttlMs?: number) {
      await api.h.close();
      api.h = await startService({ ideas: { fetch: localFetch, metadataRetryMs: 0, trending: { source, ttlMs, checkEveryMs: 0 } }, ...(await db.options()) });
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
      const first = await api.h.get('/api/v1/ideas/trending/all');
      expect(first.body).toMatchObject({ source: 'live', total: 1, stale: false });
      expect(first.body.items[0]).toMatchObject({ id: 'printables:55', source_url: 'https://www.printables.com/model/55' });
      fail = true;
      const refreshed = await api.h.post('/api/v1/ideas/trending/refresh');
      expect(refreshed.status).toBe(200);
      expect(refreshed.body).toMatchObject({ total_items: 1, source: 'live' });
      expect(refreshed.text).not.toMatch(/upstream|secret-host/);
      expect((await api.h.get('/api/v1/ideas/trending/printables')).body.total).toBe(1);
      expect(api.h.logs).toContainEqual(expect.objectContaining({ level: 40, msg: 'trending: refresh failed', platform: 'printables' }));
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
      const res = await api.h.get('/api/v1/ideas/trending/makerworld');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ platform: 'makerworld', items: [], total: 0, source: 'live', cached_at: null, expires_at: null, stale: false, message: expect.any(String) });
      expect(res.text).not.toMatch(/ECONNREFUSED/);
      expect(calls).toBe(1);
      await api.h.get('/api/v1/ideas/trending/makerworld');
      expect(calls).toBe(1);
      expect((await api.h.post('/api/v1/ideas/trending/refresh?platform=makerworld')).status).toBe(200);
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
          // Every refresh after the first answers the same: with a 200 ms lifetime, a slow machine may see the
          // refreshed cache expire and refresh again before the test reads it.
          const n = Math.min(calls, 2);
          return [{ model_id: String(n), title: `Model ${n}` }];
        },
      };
      await withSource(source, 200);
      expect((await api.h.get('/api/v1/ideas/trending/makerworld')).body.items.map((i: { title: string }) => i.title)).toEqual(['Model 1']);
      await new Promise((r) => setTimeout(r, 250));
      const stale = await api.h.get('/api/v1/ideas/trending/makerworld');
      expect(stale.body).toMatchObject({ stale: true, total: 1 });
      expect(stale.body.items[0].title).toBe('Model 1');
      release();
      await waitFor(async () => (await api.h.get('/api/v1/ideas/trending/makerworld')).body.items[0]?.title === 'Model 2', 'the background refresh');
    });
  });
});
