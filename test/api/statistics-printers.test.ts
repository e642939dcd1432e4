/**
 * One printer's statistics, GET /statistics/printers/{printer_id}: uptime from its status history and jobs,
 * jobs, materials, maintenance and quality over a seeded week, utilization from when it was added,
 * zeros for a new printer, 404 for an unknown or deleted one (its history stays). Maintenance
 * events, POST and GET /printers/{printer_id}/maintenance: recorded, listed newest first with a kind
 * filter and pages, refused when invalid (422, nothing stored), removed with their printer. On
 * SQLite and PostgreSQL.
 */
import { calendarDate } from '../../service/util/time';
import { describeDialects } from '../helpers/dialects';
import { bambu, expectError, prusa } from '../helpers/service';
import { ISO, TZ, useStatisticsApi, WEEK } from './statistics-fixtures';

describeDialects('statistics API', (db) => {
  const api = useStatisticsApi(db);
  const { store, addPrinter, printerStats, seedWeek } = api;

  describe('GET /statistics/printers/{printer_id}', () => {
    test('a custom week of one printer: uptime, jobs, materials, maintenance, quality', async () => {
      await seedWeek();
      const history = store().statusHistory;
      // Connected since 1 March, offline for 6 hours on 10 March.
      await history.record('x1c-01', 'online', 'connected', '2026-03-01T00:00:00.000Z');
      await history.record('x1c-01', 'offline', 'disconnected', '2026-03-10T00:00:00.000Z');
      await history.record('x1c-01', 'online', 'connected', '2026-03-10T06:00:00.000Z');
      for (const [kind, at] of [
        ['nozzle_change', '2026-03-01T09:00:00+01:00'],
        ['nozzle_change', '2026-03-10T10:00:00+01:00'],
        ['bed_calibration', '2026-03-12T18:30:00+01:00'],
        ['maintenance', '2026-03-20T08:00:00+01:00'],
      ]) {
        expect((await api.h.post('/api/v1/printers/x1c-01/maintenance', { kind, performed_at: at })).status).toBe(201);
      }

      const body = await printerStats('x1c-01', WEEK);
      expect(body).toEqual({
        printer_id: 'x1c-01',
        printer_name: 'Bambu x1c-01',
        period: 'custom',
        start_date: '2026-03-09',
        end_date: '2026-03-15',
        uptime: {
          // 168 h minus the 6 offline hours
          total_hours: 162,
          // 2 h + 1 h + 1 h + 0.5 h (the job before the week, clipped) + 1 h (the one after, clipped)
          active_hours: 5.5,
          // 19 800 s of 604 800 s
          utilization_rate: 3.3,
        },
        jobs: { total_jobs: 5, completed_jobs: 3, failed_jobs: 1, cancelled_jobs: 0, success_rate: 75, average_duration: 6300 },
        materials: { total_used_kg: 0.24, cost_total: 6.2, most_used: 'PLA' },
        maintenance: { last_maintenance: '2026-03-12T17:30:00.000Z', nozzle_changes: 1, bed_calibrations: 1 },
        quality_metrics: {
          // "Good" of "Good" and "poor" ("weird" is no rating)
          first_layer_success_rate: 50,
          // excellent 5, fair 3, "4"
          average_surface_quality: 4,
          dimensional_accuracy: 0.2,
        },
      });
      expect(Number.isInteger(body.jobs.average_duration)).toBe(true);
    });

    test('the utilization counts from when the printer was added', async () => {
      await seedWeek();
      // Added at the start of 12 March (Berlin): 4 of the 7 days.
      await store().connection.db.updateTable('printers').set({ created_at: '2026-03-11T23:00:00.000Z' }).where('id', '=', 'mk4-01').execute();
      const body = await printerStats('mk4-01', WEEK);
      // 3 h + 0.5 h of printing in 96 h; never connected, but up while it printed
      expect(body.uptime).toEqual({ total_hours: 3.5, active_hours: 3.5, utilization_rate: 3.6 });
      expect(body.jobs).toEqual({ total_jobs: 2, completed_jobs: 1, failed_jobs: 0, cancelled_jobs: 1, success_rate: 50, average_duration: 6300 });
    });

    test('printing while offline or not yet monitored is up time: active hours never exceed total hours', async () => {
      await addPrinter(bambu('x1c-01', { is_active: false }));
      await addPrinter(prusa('mk4-01', { is_active: false }));
      await api.backdatePrinters();
      const history = store().statusHistory;
      // Monitored from 11 March on: connected for a day, down for 12 hours, connected until 14 March.
      await history.record('x1c-01', 'online', 'connected', '2026-03-11T00:00:00.000Z');
      await history.record('x1c-01', 'offline', 'disconnected', '2026-03-12T00:00:00.000Z');
      await history.record('x1c-01', 'online', 'connected', '2026-03-12T12:00:00.000Z');
      await history.record('x1c-01', 'offline', 'disconnected', '2026-03-14T00:00:00.000Z');
      // 4 of its 6 hours before the first row, 2 connected.
      await api.job({ printer_id: 'x1c-01', status: 'completed', start_time: '2026-03-10T20:00:00.000Z', end_time: '2026-03-11T02:00:00.000Z', actual_duration: 21600 });
      // All 3 hours while the connection was down (the printer reported the job when it came back).
      await api.job({ printer_id: 'x1c-01', status: 'completed', start_time: '2026-03-12T02:00:00.000Z', end_time: '2026-03-12T05:00:00.000Z', actual_duration: 10800 });
      await api.job({ printer_id: 'x1c-01', status: 'completed', start_time: '2026-03-13T10:00:00.000Z', end_time: '2026-03-13T11:00:00.000Z', actual_duration: 3600 });
      // Still printing, disconnected since 14 March: its last 3 hours of the week.
      await api.job({ printer_id: 'x1c-01', status: 'printing', start_time: '2026-03-15T20:00:00.000Z' });
      const x1c = (await printerStats('x1c-01', WEEK)).uptime;
      // 60 h connected + 4 h + 3 h + 3 h printing outside them; 6 + 3 + 1 + 3 h printing (13 of 168 h)
      expect(x1c).toEqual({ total_hours: 70, active_hours: 13, utilization_rate: 7.7 });

      // Never connected, and one hour's print recorded twice: up for that hour, printing for that hour.
      for (let i = 0; i < 2; i++) {
        await api.job({ printer_id: 'mk4-01', status: 'completed', start_time: '2026-03-12T00:00:00.000Z', end_time: '2026-03-12T01:00:00.000Z', actual_duration: 3600 });
      }
      expect((await printerStats('mk4-01', WEEK)).uptime).toEqual({ total_hours: 1, active_hours: 1, utilization_rate: 0.6 });
    });

    test('a new printer without jobs: zeros, nulls and rates 0', async () => {
      await addPrinter(prusa('mk4-01', { is_active: false }));
      const body = await printerStats('mk4-01');
      expect(body).toEqual({
        printer_id: 'mk4-01',
        printer_name: 'Prusa mk4-01',
        period: 'week',
        start_date: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
        end_date: calendarDate(new Date(), TZ),
        uptime: { total_hours: 0, active_hours: 0, utilization_rate: 0 },
        jobs: { total_jobs: 0, completed_jobs: 0, failed_jobs: 0, cancelled_jobs: 0, success_rate: 0, average_duration: 0 },
        materials: { total_used_kg: 0, cost_total: 0, most_used: null },
        maintenance: { last_maintenance: null, nozzle_changes: 0, bed_calibrations: 0 },
        quality_metrics: { first_layer_success_rate: 0, average_surface_quality: null, dimensional_accuracy: null },
      });
    });

    test('an unknown printer is 404 PRINTER_NOT_FOUND; bad periods are 400', async () => {
      const err = expectError(await api.h.get('/api/v1/statistics/printers/ghost'), 404, 'PRINTER_NOT_FOUND');
      expect(err.details).toEqual({ printer_id: 'ghost' });
      await addPrinter(prusa('mk4-01', { is_active: false }));
      expectError(await api.h.get('/api/v1/statistics/printers/mk4-01?period=week&end_date=2026-03-01'), 400, 'VALIDATION_ERROR');
      expectError(await api.h.get('/api/v1/statistics/printers/mk4-01?period=fortnight'), 400, 'VALIDATION_ERROR');
    });

    test('a deleted printer is 404, its history stays', async () => {
      await addPrinter(prusa('mk4-01', { is_active: false }));
      expect((await api.h.del('/api/v1/printers/mk4-01')).status).toBe(200);
      expectError(await api.h.get('/api/v1/statistics/printers/mk4-01'), 404, 'PRINTER_NOT_FOUND');
      expect((await store().statusHistory.list('mk4-01')).length).toBeGreaterThan(0);
    });
  });

  describe('maintenance events', () => {
    beforeEach(() => addPrinter(bambu('x1c-01', { is_active: false })));

    test('POST records an event (201); GET lists them newest first, with a kind filter and pages', async () => {
      const before = Date.now();
      const res = await api.h.post('/api/v1/printers/x1c-01/maintenance', { kind: 'nozzle_change', notes: '0.4 mm hardened steel' });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        id: expect.any(Number),
        printer_id: 'x1c-01',
        kind: 'nozzle_change',
        notes: '0.4 mm hardened steel',
        performed_at: expect.stringMatching(ISO),
        created_at: expect.stringMatching(ISO),
      });
      expect(Date.parse(res.body.performed_at)).toBeGreaterThanOrEqual(before - 1);
      expect(res.body.performed_at).toBe(res.body.created_at);

      const older = await api.h.post('/api/v1/printers/x1c-01/maintenance', { kind: 'bed_calibration', performed_at: '2026-03-12T18:30:00+01:00' });
      expect(older.body).toMatchObject({ kind: 'bed_calibration', notes: null, performed_at: '2026-03-12T17:30:00.000Z' });
      await api.h.post('/api/v1/printers/x1c-01/maintenance', { kind: 'cleaning', performed_at: '2026-03-13T08:00:00Z' });

      const all = await api.h.get('/api/v1/printers/x1c-01/maintenance');
      expect(all.status).toBe(200);
      expect(all.body.printer_id).toBe('x1c-01');
      expect(all.body.maintenance.map((e: { kind: string }) => e.kind)).toEqual(['nozzle_change', 'cleaning', 'bed_calibration']);
      expect(all.body.maintenance[0]).toEqual(res.body);
      expect(all.body.pagination).toEqual({ page: 1, limit: 50, total_items: 3, total_pages: 1, has_next: false, has_previous: false });

      const filtered = await api.h.get('/api/v1/printers/x1c-01/maintenance?kind=bed_calibration');
      expect(filtered.body.maintenance).toEqual([older.body]);
      const page = await api.h.get('/api/v1/printers/x1c-01/maintenance?limit=2&page=2');
      expect(page.body.maintenance.map((e: { kind: string }) => e.kind)).toEqual(['bed_calibration']);
      expect(page.body.pagination).toEqual({ page: 2, limit: 2, total_items: 3, total_pages: 2, has_next: false, has_previous: true });
    });

    test('invalid bodies are 422 with the offending fields and store nothing', async () => {
      const future = new Date(Date.now() + 3600_000).toISOString();
      const cases: [unknown, string[]][] = [
        [{}, ['kind']],
        [{ kind: 'repaint' }, ['kind']],
        [{ kind: 'cleaning', colour: 'red' }, ['colour']],
        [{ kind: 'cleaning', notes: 'x'.repeat(2001) }, ['notes']],
        [{ kind: 'cleaning', notes: 42 }, ['notes']],
        [{ kind: 'cleaning', performed_at: future }, ['performed_at']],
        [{ kind: 'cleaning', performed_at: '2026-03-12 10:00' }, ['performed_at']],
        [{ kind: 'cleaning', performed_at: '1969-12-31T23:59:59Z' }, ['performed_at']],
        [[], ['(root)']],
      ];
      for (const [body, fields] of cases) {
        const err = expectError(await api.h.post('/api/v1/printers/x1c-01/maintenance', body), 422, 'VALIDATION_ERROR');
        expect(err.details.fields.map((f: { field: string }) => f.field)).toEqual(fields);
      }
      expectError(await api.h.request('POST', '/api/v1/printers/x1c-01/maintenance', '{"kind":', { 'content-type': 'application/json' }), 422, 'VALIDATION_ERROR');
      expect((await api.h.get('/api/v1/printers/x1c-01/maintenance')).body.pagination.total_items).toBe(0);
    });

    test('an unknown printer is 404 for both; bad list queries are 400', async () => {
      expectError(await api.h.post('/api/v1/printers/ghost/maintenance', { kind: 'cleaning' }), 404, 'PRINTER_NOT_FOUND');
      expectError(await api.h.get('/api/v1/printers/ghost/maintenance'), 404, 'PRINTER_NOT_FOUND');
      expectError(await api.h.get('/api/v1/printers/x1c-01/maintenance?kind=repaint'), 400, 'VALIDATION_ERROR');
      expectError(await api.h.get('/api/v1/printers/x1c-01/maintenance?limit=0'), 400, 'VALIDATION_ERROR');
      expectError(await api.h.get('/api/v1/printers/x1c-01/maintenance?limit=101'), 400, 'VALIDATION_ERROR');
    });

    test("a printer's events go with it", async () => {
      await api.h.post('/api/v1/printers/x1c-01/maintenance', { kind: 'cleaning' });
      expect((await api.h.del('/api/v1/printers/x1c-01')).status).toBe(200);
      await addPrinter(bambu('x1c-01', { is_active: false }));
      expect((await api.h.get('/api/v1/printers/x1c-01/maintenance')).body.maintenance).toEqual([]);
    });
  });
});
