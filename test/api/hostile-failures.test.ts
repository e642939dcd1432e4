/**
 * What failures leave behind: a refused request (4xx) changes nothing in the
 * database; a failing database (SQLite made read-only) gives 500
 * DATABASE_ERROR without a stack, changes nothing and recovers; requests that
 * arrive during shutdown get 503 and nothing they carried is stored. Runs on
 * SQLite and PostgreSQL (the failing database on SQLite only).
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describeDialects, sqliteOf } from '../helpers/dialects';
import { counts, serviceForEachTest } from '../helpers/hostile-input';
import { bambu, expectError, prusa } from '../helpers/service';

describeDialects('hostile input', (db) => {
  const svc = serviceForEachTest(db);

  test('a 4xx leaves the database unchanged', async () => {
    await svc.h.post('/api/v1/printers', bambu());
    const job = await svc.h.post('/api/v1/jobs', { printer_id: 'x1c-01', job_name: 'Benchy', notes: 'original' });
    expect(job.status).toBe(201);
    await svc.h.put('/api/v1/settings', { monitoring_interval: 45 });
    const before = {
      counts: await counts(svc.h),
      printer: (await svc.h.get('/api/v1/printers/x1c-01')).body,
      job: (await svc.h.get(`/api/v1/jobs/${job.body.id}`)).body,
      settings: (await svc.h.get('/api/v1/settings')).body,
    };

    const attempts: [string, string, unknown, number][] = [
      ['POST', '/api/v1/printers', bambu(), 409],
      ['POST', '/api/v1/printers', { ...bambu('new-1'), serial_number: undefined }, 400],
      ['POST', '/api/v1/printers', { ...bambu('new-2'), extra: 1 }, 422],
      ['POST', '/api/v1/printers', '{"id":"new-3"', 422],
      ['PUT', '/api/v1/printers/x1c-01', { name: '' }, 422],
      ['PUT', '/api/v1/printers/x1c-01', { name: 'Renamed', ip_address: 'not a host' }, 400],
      ['PUT', '/api/v1/printers/x1c-01', { name: 'Renamed', surprise: true }, 422],
      ['DELETE', '/api/v1/printers/x1c-02', undefined, 404],
      ['POST', '/api/v1/jobs', { printer_id: 'ghost', job_name: 'x' }, 422],
      ['POST', '/api/v1/jobs', { printer_id: 'x1c-01', job_name: 'x', material_cost: -1 }, 422],
      ['PUT', `/api/v1/jobs/${job.body.id}`, { notes: 'changed', is_business: 'yes' }, 422],
      ['DELETE', '/api/v1/jobs/999999', undefined, 404],
      ['PUT', '/api/v1/settings', { monitoring_interval: 60, usage_stats_timeout: 100 }, 422],
      ['PUT', '/api/v1/settings/gcode-optimization', { render_max_lines: 50, optimize_print_only: false }, 422],
    ];
    for (const [method, url, body, status] of attempts) {
      const res = await svc.h.request(method, url, body);
      expectError(res, status);
    }

    const after = {
      counts: await counts(svc.h),
      printer: (await svc.h.get('/api/v1/printers/x1c-01')).body,
      job: (await svc.h.get(`/api/v1/jobs/${job.body.id}`)).body,
      settings: (await svc.h.get('/api/v1/settings')).body,
    };
    expect(after).toEqual(before);
  });

  describe('a failing database', () => {
    // Breaks the database through SQLite's query_only pragma; PostgreSQL's failures are covered in storage-faults.
    (db.name === 'sqlite' ? test : test.skip)('gives 500 DATABASE_ERROR without a stack, changes nothing, and recovers', async () => {
      await svc.h.post('/api/v1/printers', prusa());
      const sqlite = sqliteOf(svc.h.service.context.store.connection);
      sqlite.pragma('query_only = ON');
      try {
        const res = await svc.h.post('/api/v1/printers', bambu());
        const err = expectError(res, 500, 'DATABASE_ERROR');
        expect(err.details).toEqual({ sqlite_code: 'SQLITE_READONLY' });
        expect(res.text).not.toMatch(/SqliteError|INSERT|printers"|stack/i);

        const settings = expectError(await svc.h.put('/api/v1/settings', { job_creation_auto_create: false, monitoring_interval: 99 }), 500, 'DATABASE_ERROR');
        expect(settings.request_id).toEqual(expect.any(String));
        // A failed write does not change the values in memory either.
        expect((await svc.h.get('/api/v1/settings')).body).toMatchObject({ job_creation_auto_create: true, monitoring_interval: 30 });
        expectError(await svc.h.put('/api/v1/settings/gcode-optimization', { render_max_lines: 500 }), 500, 'DATABASE_ERROR');
        expect((await svc.h.get('/api/v1/settings/gcode-optimization')).body.render_max_lines).toBe(10000);

        expectError(await svc.h.post('/api/v1/jobs', { printer_id: 'mk4-01', job_name: 'x' }), 500, 'DATABASE_ERROR');
        expectError(await svc.h.del('/api/v1/printers/mk4-01'), 500, 'DATABASE_ERROR');

        // Reads still work.
        expect((await svc.h.get('/api/v1/printers')).body.total_count).toBe(1);
        expect((await svc.h.get('/api/v1/health')).body.database).toBe('connected');

        // The error is logged with its request id (the client only gets the code).
        const logged = svc.h.logs.filter((l) => l.msg === 'database error');
        expect(logged.length).toBeGreaterThanOrEqual(5);
        expect(logged.map((l) => l.req_id)).toContain(err.request_id);
      } finally {
        sqlite.pragma('query_only = OFF');
      }
      expect((await svc.h.post('/api/v1/printers', bambu())).status).toBe(201);
      expect(await counts(svc.h)).toEqual({ jobs_count: 0, files_count: 0, printers_count: 2 });
    });
  });

  describe('shutdown', () => {
    /** A WebSocket client over a raw socket that never answers the server's close frame (so shutdown waits for it). */
    async function stubbornWebSocket(port: number) {
      const socket = net.connect(port, '127.0.0.1');
      let buffer = Buffer.alloc(0);
      let upgraded: () => void = () => {};
      let closeFrame: () => void = () => {};
      const upgradedP = new Promise<void>((resolve) => (upgraded = resolve));
      const closeFrameP = new Promise<void>((resolve) => (closeFrame = resolve));
      let handshakeDone = false;
      socket.on('data', (d: Buffer) => {
        buffer = Buffer.concat([buffer, d]);
        if (!handshakeDone) {
          const end = buffer.indexOf('\r\n\r\n');
          if (end < 0) return;
          expect(buffer.subarray(0, end).toString()).toMatch(/^HTTP\/1\.1 101/);
          buffer = buffer.subarray(end + 4);
          handshakeDone = true;
          upgraded();
        }
        // Opcode 0x8 with FIN: a close frame.
        if (buffer.length > 0 && buffer[0] === 0x88) closeFrame();
      });
      socket.on('error', () => {});
      socket.write(
        'GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
          'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
      );
      await upgradedP;
      return { socket, closeFrame: closeFrameP };
    }

    test('requests that arrive once shutdown began get 503; after it, connections are refused', async () => {
      await svc.h.post('/api/v1/printers', prusa());
      // A keep-alive connection that is idle when the shutdown starts.
      expect((await svc.h.get('/api/v1/health')).status).toBe(200);
      const ws = await stubbornWebSocket(svc.h.service.port);

      const closing = svc.h.service.close();
      // The service sent its close frame: the shutdown has begun and waits for this client.
      await ws.closeFrame;

      const health = await svc.h.get('/api/v1/health');
      const err = expectError(health, 503, 'SERVICE_UNAVAILABLE');
      expect(err.details).toEqual({ phase: 'stopping' });
      expect(health.headers.get('retry-after')).toBe('5');
      expect(health.headers.get('connection')).toBe('close');
      expectError(await svc.h.post('/api/v1/printers', bambu()), 503, 'SERVICE_UNAVAILABLE');
      expectError(await svc.h.put('/api/v1/settings', { monitoring_interval: 99 }), 503, 'SERVICE_UNAVAILABLE');

      ws.socket.destroy();
      await closing;
      await expect(fetch(`${svc.h.base}/api/v1/health`)).rejects.toThrow();

      // Nothing the refused requests carried was stored.
      svc.h = await svc.h.restart();
      expect((await svc.h.get('/api/v1/printers')).body.printers.map((p: { id: string }) => p.id)).toEqual(['mk4-01']);
      expect((await svc.h.get('/api/v1/settings')).body.monitoring_interval).toBe(30);
      expect(fs.existsSync(path.join(svc.h.dataDir, 'printfarm.db'))).toBe(db.name === 'sqlite');
    });
  });
});
