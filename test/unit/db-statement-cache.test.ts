/**
 * SQLite statements are prepared once per SQL text (service/db/connection.ts), and a kept statement reads
 * what is stored now, not what it read the first time.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openStore, type Store } from '../../service/db';
import { sqliteOf } from '../helpers/dialects';
import { nowIso } from '../../service/util/time';

describe('SQLite prepared statements', () => {
  let dir: string;
  let store: Store;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-statements-'));
    store = await openStore(dir);
  });
  afterAll(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('prepares a query once however often it runs, and each run reads the rows as they are', async () => {
    const sqlite = sqliteOf(store.connection);
    const prepare = jest.spyOn(sqlite, 'prepare');
    try {
      const names: string[] = [];
      for (let i = 0; i < 20; i++) {
        await store.settings.setMany({ language: i % 2 ? 'de' : 'en' }, nowIso());
        names.push(String((await store.settings.all()).language));
      }
      expect(names).toEqual(Array.from({ length: 20 }, (_, i) => (i % 2 ? 'de' : 'en')));
      const texts = prepare.mock.calls.map(([sql]) => sql);
      // Each SQL text once: 20 writes (a transaction each) and 20 reads, prepared at their first run only.
      expect(texts.length).toBeGreaterThan(0);
      expect(new Set(texts).size).toBe(texts.length);
    } finally {
      prepare.mockRestore();
    }
  });
});
