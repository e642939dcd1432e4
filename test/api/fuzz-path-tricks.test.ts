/**
 * Schema-driven fuzzing, path tricks: file names and ids that try to climb
 * out of the data dir (dot segments, both slashes, absolute paths, encodings,
 * NUL, RTL overrides, reserved names) are refused or stored as a plain file
 * inside DATA_DIR/files/local that serves back what was sent; nothing appears
 * anywhere else, and no id in a URL reaches the database file.
 *
 * Reproduce a failure with the seed it prints: FUZZ_SEED=<seed> npx jest test/api/fuzz-path-tricks.test.ts
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { describeDialects } from '../helpers/dialects';
import { GCODE, multipart } from '../helpers/fuzz/cases';
import { SEED } from '../helpers/fuzz/rng';
import { connectionOf, listFiles, useFuzzedService } from '../helpers/fuzz/seeded-service';

describeDialects('schema-driven fuzzing of every operation in the OpenAPI document', (dialect) => {
  const fuzz = useFuzzedService(dialect);

  test('path tricks in ids and file names stay inside the data dir', async () => {
    const { h } = fuzz;
    const marker = `fuzz-escape-${SEED}`;
    const B = 'trick';
    const names = [
      `../../${marker}.gcode`,
      `..\\..\\${marker}.gcode`,
      `/tmp/${marker}.gcode`,
      `%2e%2e%2f${marker}.gcode`,
      `....//....//${marker}.gcode`,
      `${marker}\u0000.gcode`,
      `.${marker}.gcode`,
      `\u202E${marker}.gcode`,
      `${marker}:stream.gcode`,
      `CON.gcode`,
    ];
    const stored: string[] = [];
    for (const name of names) {
      const res = await h.request('POST', '/api/v1/files/upload', multipart(B, 'file', name, GCODE), { 'content-type': `multipart/form-data; boundary=${B}` });
      // A name may be refused; a stored one is a plain file inside DATA_DIR/files/local that serves back what was sent.
      expect({ name, status: res.status < 500 ? 'below 500' : res.status }).toEqual({ name, status: 'below 500' });
      if (res.status !== 201) continue;
      stored.push(res.body.id);
      const content = await fetch(`${h.base}/api/v1/files/${res.body.id}/content`);
      expect(content.status).toBe(200);
      expect(await content.text()).toBe(GCODE);
    }
    expect(stored.length).toBeGreaterThan(0);

    // Printer paths to download from, and ids in the URL: refused or not found, never a file.
    for (const file_path of [`../../${marker}.gcode`, `/etc/passwd`, `..%2F..%2F${marker}`, `C:\\Windows\\${marker}`]) {
      const res = await h.post('/api/v1/files/download', { printer_id: 'x1c-01', file_path });
      // The printer never answers: 502, or a 4xx for a path it refuses outright.
      expect({ file_path, refused: res.status === 502 || (res.status >= 400 && res.status < 500) }).toEqual({ file_path, refused: true });
    }
    for (const trick of ['..%2F..%2F' + marker, '%2e%2e%2f%2e%2e%2fprintfarm.db', '..%2Fprintfarm.db', '..%5C..%5Cprintfarm.db']) {
      for (const suffix of ['', '/content', '/thumbnail', '/download/status']) {
        const res = await fetch(`${h.base}/api/v1/files/${trick}${suffix}`);
        expect([res.status, trick + suffix]).toEqual([404, trick + suffix]);
        expect(await res.text()).not.toContain('SQLite format');
      }
    }

    // Every file of the service is in its data dir: the db, and the uploads under files/local with one safe name each.
    const inData = listFiles(h.dataDir);
    for (const f of inData) expect(f).toMatch(/^(printfarm\.(db(-wal|-shm)?|lock)|files\/local\/[0-9a-f]{20}-[^/\\\u0000]+)$/);
    for (const id of stored) {
      const { rows } = await sql<{ local_path: string }>`SELECT local_path FROM files WHERE id = ${id}`.execute(connectionOf(h).db);
      expect(path.resolve(rows[0].local_path).startsWith(path.join(h.dataDir, 'files', 'local') + path.sep)).toBe(true);
      expect(fs.existsSync(rows[0].local_path)).toBe(true);
    }
    // Nothing with the marker outside: next to the data dir, in the temp dir, in the working directory.
    for (const dir of new Set([path.dirname(h.dataDir), path.dirname(path.dirname(h.dataDir)), os.tmpdir(), process.cwd(), '/tmp'])) {
      expect(fs.readdirSync(dir).filter((n) => n.includes(marker))).toEqual([]);
    }
  }, 60_000);
});
