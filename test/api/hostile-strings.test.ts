/**
 * Hostile strings that are valid input: SQL-ish text, emoji, right-to-left
 * text, NUL, control characters, combining marks and CJK are stored
 * literally and round-trip exactly, also across a restart (PostgreSQL, which
 * cannot store NUL, refuses that one with a 422); names are measured in
 * characters. Runs on SQLite and PostgreSQL.
 */
import { describeDialects } from '../helpers/dialects';
import { counts, serviceForEachTest } from '../helpers/hostile-input';
import { expectError, prusa } from '../helpers/service';

describeDialects('hostile input', (db) => {
  const svc = serviceForEachTest(db);

  describe('strings stored literally', () => {
    test('an SQL-ish name is stored literally and the table still works', async () => {
      const name = "x'; DROP TABLE printers;--";
      const created = await svc.h.post('/api/v1/printers', prusa('sql-1', { name, model: '" OR 1=1 --' }));
      expect(created.status).toBe(201);
      expect(created.body.name).toBe(name);
      const detail = await svc.h.get('/api/v1/printers/sql-1');
      expect(detail.body).toMatchObject({ name, model: '" OR 1=1 --' });

      // Without an id, one is derived from the name.
      const noId = { ...prusa(), name } as Record<string, unknown>;
      delete noId.id;
      const derived = await svc.h.post('/api/v1/printers', noId);
      expect(derived.status).toBe(201);
      expect(derived.body.id).toMatch(/^[a-z0-9][a-z0-9-]*$/);

      const list = await svc.h.get('/api/v1/printers');
      expect(list.body.total_count).toBe(2);
      expect(list.body.printers.map((p: { name: string }) => p.name)).toEqual([name, name]);
      const job = await svc.h.post('/api/v1/jobs', { printer_id: 'sql-1', job_name: "Robert'); DROP TABLE jobs;--", notes: "1'; DELETE FROM jobs WHERE '1'='1" });
      expect(job.status).toBe(201);
      expect(job.body).toMatchObject({ job_name: "Robert'); DROP TABLE jobs;--", notes: "1'; DELETE FROM jobs WHERE '1'='1", printer_name: name });

      // SQL in path and query parameters is just a value that matches nothing.
      expectError(await svc.h.get(`/api/v1/printers/${encodeURIComponent("' OR '1'='1")}`), 404, 'PRINTER_NOT_FOUND');
      const filtered = await svc.h.get(`/api/v1/jobs?printer_id=${encodeURIComponent("sql-1' OR '1'='1")}`);
      expect(filtered.status).toBe(200);
      expect(filtered.body.jobs).toEqual([]);
      expect((await svc.h.get('/api/v1/jobs?printer_id=sql-1')).body.jobs).toHaveLength(1);
      expect(await counts(svc.h)).toEqual({ jobs_count: 1, files_count: 0, printers_count: 2 });

      svc.h = await svc.h.restart();
      expect((await svc.h.get('/api/v1/printers/sql-1')).body.name).toBe(name);
    });

    test.each([
      ['emoji', '🖨️ Drucker 3000 🚀👩‍🔧'],
      ['right-to-left', 'طابعة ثلاثية الأبعاد'],
      ['Hebrew with an RTL override', 'מדפסת \u202Egnp.exe'],
      ['a NUL character', 'before\u0000after'],
      ['control characters', 'tab\there\r\nline'],
      ['combining marks', 'Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇'],
      ['CJK', '打印机 プリンター 프린터'],
    ])('a name with %s round-trips exactly', async (_kind, name) => {
      const created = await svc.h.post('/api/v1/printers', prusa('uni-1', { name }));
      if (db.name === 'postgres' && name.includes('\u0000')) {
        // PostgreSQL cannot store NUL: a 422 with nothing written (as in printers.test.ts).
        expect(expectError(created, 422, 'VALIDATION_ERROR').details).toEqual({ location: 'body', reason: 'nul_character' });
        expect(await counts(svc.h)).toEqual({ jobs_count: 0, files_count: 0, printers_count: 0 });
        return;
      }
      expect(created.status).toBe(201);
      expect(created.body.name).toBe(name);
      expect((await svc.h.get('/api/v1/printers/uni-1')).body.name).toBe(name);
      const job = await svc.h.post('/api/v1/jobs', { printer_id: 'uni-1', job_name: name });
      expect(job.status).toBe(201);
      expect((await svc.h.get(`/api/v1/jobs/${job.body.id}`)).body).toMatchObject({ job_name: name, printer_name: name });

      const noId = { ...prusa(), name } as Record<string, unknown>;
      delete noId.id;
      const derived = await svc.h.post('/api/v1/printers', noId);
      expect(derived.status).toBe(201);
      expect(derived.body.id).toMatch(/^[a-z0-9][a-z0-9-]*$/);

      svc.h = await svc.h.restart();
      expect((await svc.h.get('/api/v1/printers/uni-1')).body.name).toBe(name);
    });

    test('a name of only whitespace is refused; length is counted in characters', async () => {
      expectError(await svc.h.post('/api/v1/printers', prusa('ws', { name: ' \t\n ' })), 422, 'VALIDATION_ERROR');
      expect((await svc.h.post('/api/v1/printers', prusa('long', { name: 'ä'.repeat(100) }))).status).toBe(201);
      expectError(await svc.h.post('/api/v1/printers', prusa('longer', { name: 'ä'.repeat(101) })), 422, 'VALIDATION_ERROR');
    });
  });
});
