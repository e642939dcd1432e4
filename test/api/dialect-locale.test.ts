/**
 * Text that is compared or sorted in SQL gives the same answer on SQLite and on a PostgreSQL server set
 * up with a real locale. The tests' own server is initialised with --locale=C, where PostgreSQL happens
 * to agree with SQLite; servers as installed (Debian's cluster, the Docker image, hosted ones) use
 * en_US.UTF-8 or an ICU locale, where lower() and ILIKE fold every letter and ORDER BY follows the
 * language's rules. Here the PostgreSQL database is made with an ICU locale (en-US) for that reason.
 */
import { describeDialects, localeDatabaseOptions } from '../helpers/dialects';
import { startService, type Harness } from '../helpers/service';

describeDialects('text compared and sorted in SQL', (db) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startService(await localeDatabaseOptions(db));
  });
  afterAll(() => h?.close());

  const idea = async (title: string, tags: string[] = []) => {
    const res = await h.post('/api/v1/ideas', { title, tags });
    expect(res.status).toBe(201);
    return res.body.id as number;
  };
  const titles = async (query: string) => {
    const res = await h.get(`/api/v1/ideas${query}`);
    expect(res.status).toBe(200);
    return (res.body.ideas as { title: string }[]).map((i) => i.title);
  };

  test('ideas by title: the same order on both, letters by their code (case of ASCII letters ignored)', async () => {
    for (const title of ['zebra stand', 'Éclair box', 'apple tray', '_draft', '10 mm cube', 'Apricot', 'a-b clip', 'ab clip']) await idea(title);
    expect(await titles('?order_by=title&order_dir=asc')).toEqual(['10 mm cube', '_draft', 'a-b clip', 'ab clip', 'apple tray', 'Apricot', 'zebra stand', 'Éclair box']);
  });

  test('search and tag filters: ASCII letters match in either case, other letters as written, the same on both', async () => {
    await idea('Crème brûlée mould', ['Île', 'Boat']);
    const found = async (query: string) => (await titles(query)).includes('Crème brûlée mould');
    expect(await found('?search=CRèME BRûLéE')).toBe(true);
    expect(await found('?search=CRÈME')).toBe(false);
    expect(await found('?tags=BOAT,Île')).toBe(true);
    expect(await found('?tags=île')).toBe(false);
  });
});
