/**
 * Printer status history: one row per change of status or connection (not per report), including
 * deactivation, reactivation, deletion and a stop of the service; uptime sums the connected spans
 * of a range; pruning by the retention setting keeps the state in effect at the cutoff, so uptime
 * after it is unchanged. On SQLite and PostgreSQL.
 */
import { HistoryRetention } from '../../service/statistics/retention';
import { describeDialects } from '../helpers/dialects';
import { bambu, prusa } from '../helpers/service';
import { ISO, until, useHandDrivenService } from './statistics-fixtures';

describeDialects('printer status history', (db) => {
  const api = useHandDrivenService(db);

  const states = async (id: string) => (await api.h.service.context.store.statusHistory.list(id)).map((r) => `${r.status}/${r.connection_status}`);
  const waitForRows = (id: string, n: number) => until(async () => (await states(id)).length >= n);

  test('records one row per change of status or connection, not one per report', async () => {
    await api.h.post('/api/v1/printers', bambu('x1c-01'));
    expect(await states('x1c-01')).toEqual(['configuring/testing']);

    api.drivers.get('x1c-01')!.online();
    await waitForRows('x1c-01', 2);
    const driver = api.drivers.get('x1c-01')!;
    driver.report('printing', 200);
    await waitForRows('x1c-01', 3);
    // Reports that change only temperatures or progress are no change of state.
    for (let i = 0; i < 20; i++) driver.report('printing', 201 + i);
    driver.report('paused');
    await waitForRows('x1c-01', 4);
    driver.drop();
    await waitForRows('x1c-01', 5);
    expect(await states('x1c-01')).toEqual(['configuring/testing', 'online/connected', 'printing/connected', 'paused/connected', 'offline/disconnected']);

    const rows = await api.h.service.context.store.statusHistory.list('x1c-01');
    for (const row of rows) expect(row.at).toMatch(ISO);
    expect(rows.map((r) => r.at)).toEqual([...rows.map((r) => r.at)].sort());
  });

  test('deactivation, reactivation and deletion are recorded; a stop of the service ends monitoring', async () => {
    await api.h.post('/api/v1/printers', prusa('mk4-01'));
    api.drivers.get('mk4-01')!.online();
    await waitForRows('mk4-01', 2);
    await api.h.put('/api/v1/printers/mk4-01', { is_active: false });
    await api.h.put('/api/v1/printers/mk4-01', { is_active: true });
    expect(await states('mk4-01')).toEqual(['configuring/testing', 'online/connected', 'offline/disconnected', 'configuring/testing']);
    api.drivers.get('mk4-01')!.online();
    await waitForRows('mk4-01', 5);

    // Stopping the service: the printer is no longer watched; starting again begins with a connection test.
    api.h = await api.h.restart();
    expect(await states('mk4-01')).toEqual([
      'configuring/testing',
      'online/connected',
      'offline/disconnected',
      'configuring/testing',
      'online/connected',
      'offline/disconnected',
      'online/testing',
    ]);

    await api.h.del('/api/v1/printers/mk4-01');
    expect((await states('mk4-01')).slice(-1)).toEqual(['offline/disconnected']);
  });

  test('an inactive printer starts offline; record() skips a row that repeats the state in effect', async () => {
    await api.h.post('/api/v1/printers', prusa('mk4-01', { is_active: false }));
    expect(await states('mk4-01')).toEqual(['offline/disconnected']);
    const history = api.h.service.context.store.statusHistory;
    expect(await history.record('mk4-01', 'offline', 'disconnected', new Date().toISOString())).toBe(false);
    expect(await history.record('mk4-01', 'online', 'connected', new Date().toISOString())).toBe(true);
    expect(await states('mk4-01')).toEqual(['offline/disconnected', 'online/connected']);
  });

  test('uptime sums the connected spans inside the range', async () => {
    await api.h.post('/api/v1/printers', prusa('mk4-01', { is_active: false }));
    const history = api.h.service.context.store.statusHistory;
    // The state at the start of the range comes from the row before it.
    await history.record('lab-1', 'online', 'connected', '2026-01-01T00:00:00.000Z');
    await history.record('lab-1', 'error', 'error', '2026-01-02T06:00:00.000Z');
    await history.record('lab-1', 'printing', 'connected', '2026-01-02T12:00:00.000Z');
    await history.record('lab-1', 'offline', 'disconnected', '2026-01-03T00:00:00.000Z');
    // 2 January: connected 00:00-06:00 and 12:00-24:00
    expect(await history.connectedSeconds('lab-1', '2026-01-02T00:00:00.000Z', '2026-01-03T00:00:00.000Z')).toBeCloseTo(18 * 3600, 3);
    // Before any row: nothing known, nothing counted.
    expect(await history.connectedSeconds('lab-1', '2025-12-31T00:00:00.000Z', '2026-01-01T12:00:00.000Z')).toBeCloseTo(12 * 3600, 3);
    expect(await history.connectedSeconds('nobody', '2026-01-01T00:00:00.000Z', '2026-01-05T00:00:00.000Z')).toBe(0);
    expect(await history.connectedSeconds('lab-1', '2026-01-05T00:00:00.000Z', '2026-01-01T00:00:00.000Z')).toBe(0);
  });

  test('pruning forgets rows before the retention but keeps the state in effect at the cutoff, so uptime after it is unchanged', async () => {
    const history = api.h.service.context.store.statusHistory;
    const day = (d: number, hour = 0) => new Date(Date.UTC(2026, 0, d, hour)).toISOString();
    // Two printers, a change every 6 hours for 20 days.
    for (const printer of ['lab-1', 'lab-2']) {
      for (let i = 0; i < 80; i++) await history.record(printer, i % 2 ? 'offline' : 'online', i % 2 ? 'disconnected' : 'connected', day(1 + Math.floor(i / 4), (i % 4) * 6));
    }
    const after = [day(15, 3), day(21)] as const;
    const before = await history.connectedSeconds('lab-1', ...after);

    const removed = await history.prune(day(15), 7);
    // Rows before 15 January: 56 per printer; the last of them stays for each.
    expect(removed).toBe(2 * 55);
    expect(await history.list('lab-1', { to: day(15) })).toEqual([{ status: 'offline', connection_status: 'disconnected', at: day(14, 18) }]);
    expect(await history.connectedSeconds('lab-1', ...after)).toBeCloseTo(before, 3);
    expect(await history.prune(day(15))).toBe(0);

    // The service prunes by its setting: with the default 400 days these rows stay; with 7 days they go.
    const retention = new HistoryRetention(api.h.service.context.store, api.h.service.context.settings, api.h.service.context.log, () => Date.parse(day(31)));
    expect(await retention.prune()).toBe(0);
    await api.h.put('/api/v1/settings', { status_history_retention_days: 7 });
    // Cutoff 24 January: of the 25 rows left per printer only the last (20 January, 18:00) stays.
    expect(await retention.prune()).toBe(2 * 24);
    expect((await history.list('lab-2')).map((r) => r.at)[0]).toBe(day(20, 18));
    await retention.close();
  });
});
