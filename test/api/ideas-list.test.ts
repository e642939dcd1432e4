/**
 * Listing ideas, GET /ideas: newest first, pages and ordering, a summary over all ideas, and the
 * filters by status, platform, tags, business marker and search text (wildcards are plain
 * characters); bad query values are 400. On SQLite and PostgreSQL.
 */
import { describeDialects } from '../helpers/dialects';
import { expectError } from '../helpers/service';
import { ids, useIdeasApi } from './ideas-fixtures';

describeDialects('ideas API', (db) => {
  const api = useIdeasApi(db);
  const { sharedService, create, move, list } = api;

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
      const err = expectError(await api.h.get(`/api/v1/ideas${query}`), 400, 'VALIDATION_ERROR');
      expect(err.details.location).toBe('query');
    });
  });
});
