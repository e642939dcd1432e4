/**
 * Ideas by hand: POST /ideas stores an idea with every field (defaults for a minimal one, the
 * platform and model id from a platform URL, one idea per model), PUT edits it, DELETE removes it,
 * unknown ids are 404 and malformed ones 400; refused bodies are 422 naming the field and store
 * nothing. Nothing is fetched for a hand-made idea. On SQLite and PostgreSQL.
 */
import { describeDialects } from '../helpers/dialects';
import { expectError } from '../helpers/service';
import { IDEA_KEYS, ISO, useIdeasApi } from './ideas-fixtures';
import { NO_FILES } from './ideas-model-pages';

describeDialects('ideas API', (db) => {
  const api = useIdeasApi(db);
  const { asked, freshServicePerTest, sharedService, create, list } = api;

  describe('create, read, update, delete', () => {
    freshServicePerTest();

    test('creates a manual idea (201) with every field of an idea', async () => {
      const res = await api.h.post('/api/v1/ideas', {
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
      expect((await api.h.get(`/api/v1/ideas/${res.body.id}`)).body).toEqual(res.body);
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
      const again = await api.h.post('/api/v1/ideas', { title: 'Dragon again', source_url: 'https://printables.com/de/model/234567' });
      expect(expectError(again, 409, 'IDEA_ALREADY_EXISTS').details).toMatchObject({ idea_id: idea.id, source_platform: 'printables', model_id: '234567' });
      // The page is not read by a hand-made entry.
      expect(asked).toEqual([]);
    });

    test('source_url and source_platform must agree', async () => {
      const mismatch = await api.h.post('/api/v1/ideas', { title: 'x', source_platform: 'thingiverse', source_url: 'https://www.printables.com/model/1' });
      expect(expectError(mismatch, 422, 'VALIDATION_ERROR').details.fields).toEqual([expect.objectContaining({ field: 'source_platform' })]);
      const notAModel = await api.h.post('/api/v1/ideas', { title: 'x', source_platform: 'printables', source_url: 'https://example.com/dragon' });
      expect(expectError(notAModel, 422).details.fields).toEqual([expect.objectContaining({ field: 'source_url', message: expect.stringMatching(/Printables/) })]);
      // A manual idea may link anything http(s).
      expect(await create({ title: 'blog', source_url: 'https://example.com/dragon' })).toMatchObject({ source_platform: 'manual', source_url: 'https://example.com/dragon', model_id: null });
    });

    test('updates title, notes, tags and the business marker; clears with null', async () => {
      const idea = await create({ title: 'Old', notes: 'n', tags: ['a'] });
      const res = await api.h.put(`/api/v1/ideas/${idea.id}`, { title: 'New', notes: null, tags: ['b', 'c'], is_business: true, description: 'd' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: idea.id, title: 'New', notes: null, tags: ['b', 'c'], is_business: true, description: 'd', status: 'idea' });
      expect(Date.parse(res.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(idea.updated_at));
      expect((await api.h.get(`/api/v1/ideas/${idea.id}`)).body).toEqual(res.body);
    });

    test('refuses empty, unknown and read-only fields in an update', async () => {
      const idea = await create();
      expectError(await api.h.put(`/api/v1/ideas/${idea.id}`, {}), 422, 'VALIDATION_ERROR');
      for (const body of [{ status: 'planned' }, { source_platform: 'printables' }, { model_id: '1' }, { id: 5 }, { bogus: 1 }]) {
        const err = expectError(await api.h.put(`/api/v1/ideas/${idea.id}`, body), 422, 'VALIDATION_ERROR');
        expect(err.details.fields[0].code).toBe('unknown_field');
      }
      expect((await api.h.get(`/api/v1/ideas/${idea.id}`)).body).toEqual(idea);
    });

    test('deletes an idea', async () => {
      const idea = await create();
      const res = await api.h.del(`/api/v1/ideas/${idea.id}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ id: idea.id, message: 'Idea deleted', deleted_at: expect.stringMatching(ISO) });
      expectError(await api.h.get(`/api/v1/ideas/${idea.id}`), 404, 'IDEA_NOT_FOUND');
      expectError(await api.h.del(`/api/v1/ideas/${idea.id}`), 404, 'IDEA_NOT_FOUND');
    });

    test('unknown ids are 404 IDEA_NOT_FOUND, malformed ids 400', async () => {
      for (const [method, path, body] of [
        ['GET', '/api/v1/ideas/999', undefined],
        ['PUT', '/api/v1/ideas/999', { notes: 'x' }],
        ['DELETE', '/api/v1/ideas/999', undefined],
        ['POST', '/api/v1/ideas/999/status', { status: 'planned' }],
        ['POST', '/api/v1/ideas/999/refresh-metadata', undefined],
      ] as const) {
        expect(expectError(await api.h.request(method, path, body), 404, 'IDEA_NOT_FOUND').details).toEqual({ idea_id: 999 });
      }
      for (const bad of ['abc', '0', '-1', '1.5', '99999999999999999999']) {
        expectError(await api.h.get(`/api/v1/ideas/${bad}`), 400, 'VALIDATION_ERROR');
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
      const res = await api.h.post('/api/v1/ideas', body);
      const err = expectError(res, 422, 'VALIDATION_ERROR');
      expect(err.details.fields.map((f: { field: string }) => f.field)).toContain(field);
      expect((await list()).pagination.total_items).toBe(0);
    });
  });
});
