/**
 * GET /statistics/overview: every figure of a seeded week (printers, jobs, materials, business,
 * files) with its type, counting the same jobs as GET /jobs; days end at midnight in the configured
 * time zone, named periods are whole days ending today, a running job counts as printing up to now,
 * an empty farm gives zeros; bad periods and dates are 400. On SQLite and PostgreSQL. Also how
 * periods resolve to instants (DST days included), without a service.
 */
import { resolvePeriod } from '../../service/statistics/period';
import { calendarDate, dayStart } from '../../service/util/time';
import { describeDialects } from '../helpers/dialects';
import { bambu, expectError } from '../helpers/service';
import { DAY, TZ, useStatisticsApi, WEEK } from './statistics-fixtures';

describeDialects('statistics API', (db) => {
  const api = useStatisticsApi(db);
  const { addPrinter, backdatePrinters, job, overview, seedWeek } = api;

  describe('GET /statistics/overview', () => {
    test('a custom week: every figure, with its type, from jobs, printers and files', async () => {
      await seedWeek();
      const body = await overview(WEEK);
      expect(body).toEqual({
        period: 'custom',
        start_date: '2026-03-09',
        end_date: '2026-03-15',
        printers: {
          total_active: 2,
          online_count: 1,
          // Printing of the active printers in the week: 2 h + 1 h + 3 h + 0.5 h + 1 h + 0.5 h (clipped) + 1 h (clipped) = 32 400 s,
          // against 2 printers x 604 800 s.
          utilization_rate: 2.7,
        },
        jobs: {
          total_jobs: 8,
          completed_jobs: 5,
          failed_jobs: 1,
          // 5 completed of 7 finished (completed, failed, cancelled); the queued job does not count.
          success_rate: 71.4,
          total_print_time: 41_400,
          // 41 400 s over the 7 jobs with a duration.
          average_job_duration: 5914,
        },
        materials: {
          total_used_kg: 0.45,
          most_used_material: 'PLA',
          materials_breakdown: [
            { material: 'PLA', used_kg: 0.32, jobs: 2 },
            { material: 'PETG', used_kg: 0.05, jobs: 2 },
            { material: 'ABS', used_kg: 0.05, jobs: 1 },
            { material: 'unknown', used_kg: 0.03, jobs: 1 },
          ],
        },
        business: {
          business_jobs: 2,
          private_jobs: 6,
          business_percentage: 25,
          // (3 + 0.5 + 2) + (5 + 1 + 10)
          revenue_estimate: 21.5,
        },
        files: {
          total_files: 5,
          downloaded_files: 2,
          local_only_files: 1,
          // 2 downloaded of 3 that finished a download (downloaded or error)
          download_success_rate: 66.7,
          // 1 MiB + 2 MiB + 0.5 MiB kept locally
          total_storage_used_mb: 3.5,
        },
      });
      // Counts and seconds are integers.
      const integers = [body.printers.total_active, body.printers.online_count, body.jobs.total_print_time, body.jobs.average_job_duration];
      integers.push(body.files.total_files, body.files.downloaded_files, body.files.local_only_files, body.business.business_jobs, body.business.private_jobs);
      for (const v of integers) expect(Number.isInteger(v)).toBe(true);
    });

    test('counts the same jobs as GET /jobs with the same dates', async () => {
      await seedWeek();
      const jobs = await api.h.get(`/api/v1/jobs${WEEK}&limit=100`);
      expect(jobs.body.pagination.total_items).toBe((await overview(WEEK)).jobs.total_jobs);
    });

    test('a day ends at midnight in the configured time zone', async () => {
      await seedWeek();
      // 9 March in Berlin holds only the job that started at 00:30 local time (23:30 UTC the day before).
      const body = await overview('?start_date=2026-03-09&end_date=2026-03-09');
      expect(body.jobs).toEqual({ total_jobs: 1, completed_jobs: 1, failed_jobs: 0, success_rate: 100, total_print_time: 3600, average_job_duration: 3600 });
      expect(body.materials).toEqual({ total_used_kg: 0.03, most_used_material: null, materials_breakdown: [{ material: 'unknown', used_kg: 0.03, jobs: 1 }] });
      // 8 March holds the job that started at 23:30 local time.
      expect((await overview('?start_date=2026-03-08&end_date=2026-03-08')).jobs.total_jobs).toBe(1);
    });

    test('periods are whole days ending today; the default is week', async () => {
      await addPrinter(bambu('x1c-01', { is_active: false }));
      const now = Date.now();
      const ago = (ms: number) => new Date(now - ms).toISOString();
      await job({ printer_id: 'x1c-01', status: 'completed', start_time: ago(60_000), end_time: ago(0), actual_duration: 60 });
      await job({ printer_id: 'x1c-01', status: 'completed', start_time: ago(3 * DAY), end_time: ago(3 * DAY - 60_000), actual_duration: 60 });
      await job({ printer_id: 'x1c-01', status: 'failed', start_time: ago(20 * DAY), end_time: ago(20 * DAY - 60_000), actual_duration: 60 });
      await job({ printer_id: 'x1c-01', status: 'failed', start_time: ago(200 * DAY), end_time: ago(200 * DAY - 60_000), actual_duration: 60 });
      await job({ printer_id: 'x1c-01', status: 'failed', start_time: ago(400 * DAY), end_time: ago(400 * DAY - 60_000), actual_duration: 60 });

      const today = calendarDate(new Date(), TZ);
      const minus = (days: number) => new Date(Date.parse(`${today}T00:00:00Z`) - days * DAY).toISOString().slice(0, 10);
      const expected = { day: [1, 0], week: [2, 6], month: [3, 29], year: [4, 364] } as const;
      for (const [period, [total, back]] of Object.entries(expected)) {
        const body = await overview(`?period=${period}`);
        expect([period, body.period, body.start_date, body.end_date, body.jobs.total_jobs]).toEqual([period, period, minus(back), today, total]);
      }
      const byDefault = await overview();
      expect([byDefault.period, byDefault.start_date, byDefault.end_date, byDefault.jobs.total_jobs]).toEqual(['week', minus(6), today, 2]);
      // 2 completed of 4 finished in the year; 1 of 1 today.
      expect((await overview('?period=year')).jobs.success_rate).toBe(50);
      expect((await overview('?period=day')).jobs.success_rate).toBe(100);
    });

    test('a running job counts as printing up to now', async () => {
      await addPrinter(bambu('x1c-01'));
      await backdatePrinters('2020-01-01T00:00:00.000Z');
      const started = Date.now() - 3600_000;
      await job({ printer_id: 'x1c-01', status: 'printing', start_time: new Date(started).toISOString() });
      const before = Date.now();
      const body = await overview('?period=day');
      const after = Date.now();
      // One active printer; today so far, and of it the time since the job started (all of it when it started yesterday).
      const from = dayStart(body.start_date, TZ).getTime();
      const rate = (t: number) => Math.round(((t - Math.max(started, from)) / (t - from)) * 1000) / 10;
      expect(body.printers.utilization_rate).toBeGreaterThanOrEqual(Math.min(rate(before), rate(after)));
      expect(body.printers.utilization_rate).toBeLessThanOrEqual(Math.max(rate(before), rate(after)));
      expect(body.printers.utilization_rate).toBeGreaterThan(0);
      // The job counts in the day of its start: in the first hour of the day (Berlin) it started yesterday.
      const counted = started >= from ? 1 : 0;
      expect(body.jobs).toEqual({ total_jobs: counted, completed_jobs: 0, failed_jobs: 0, success_rate: 0, total_print_time: 0, average_job_duration: 0 });
    });

    test('an empty farm: zeros everywhere, rates 0, no material', async () => {
      const body = await overview(WEEK);
      expect(body).toEqual({
        period: 'custom',
        start_date: '2026-03-09',
        end_date: '2026-03-15',
        printers: { total_active: 0, online_count: 0, utilization_rate: 0 },
        jobs: { total_jobs: 0, completed_jobs: 0, failed_jobs: 0, success_rate: 0, total_print_time: 0, average_job_duration: 0 },
        materials: { total_used_kg: 0, most_used_material: null, materials_breakdown: [] },
        business: { business_jobs: 0, private_jobs: 0, business_percentage: 0, revenue_estimate: 0 },
        files: { total_files: 0, downloaded_files: 0, local_only_files: 0, download_success_rate: 0, total_storage_used_mb: 0 },
      });
      for (const period of ['day', 'week', 'month', 'year']) expect((await overview(`?period=${period}`)).printers.utilization_rate).toBe(0);
    });

    test.each([
      ['?period=decade', 'period'],
      ['?period=week&start_date=2026-03-09&end_date=2026-03-15', 'period'],
      ['?start_date=2026-03-09', 'end_date'],
      ['?end_date=2026-03-15', 'start_date'],
      ['?start_date=2026-03-15&end_date=2026-03-09', 'end_date'],
      ['?start_date=2026-02-30&end_date=2026-03-09', 'start_date'],
      ['?start_date=2026-3-1&end_date=2026-03-09', 'start_date'],
      ['?start_date=2026-03-01T00:00:00Z&end_date=2026-03-09', 'start_date'],
      ['?start_date=1900-01-01&end_date=2026-03-09', 'start_date'],
      ['?start_date=2026-03-01&end_date=2026-03-09&start_date=2026-03-02', 'start_date'],
    ])('%s is 400 VALIDATION_ERROR naming %s', async (query, field) => {
      const err = expectError(await api.h.get(`/api/v1/statistics/overview${query}`), 400, 'VALIDATION_ERROR');
      expect(err.details.location).toBe('query');
      expect(err.details.fields.map((f: { field: string }) => f.field)).toContain(field);
    });

    test('a wide custom range works (no overflow, rates stay within 0 to 100)', async () => {
      await seedWeek();
      const body = await overview('?start_date=1970-01-01&end_date=2999-12-31');
      expect(body.jobs.total_jobs).toBe(10);
      expect(body.printers.utilization_rate).toBeGreaterThanOrEqual(0);
      expect(body.printers.utilization_rate).toBeLessThanOrEqual(100);
    });
  });
});

describe('statistics periods', () => {
  test('days follow the configured time zone, DST days included', () => {
    // Berlin moves its clocks forward on 29 March 2026: that day has 23 hours.
    expect(resolvePeriod({ start_date: '2026-03-29', end_date: '2026-03-29' }, TZ)).toEqual({
      period: 'custom',
      start_date: '2026-03-29',
      end_date: '2026-03-29',
      from: '2026-03-28T23:00:00.000Z',
      to: '2026-03-29T22:00:00.000Z',
    });
    expect(resolvePeriod({ start_date: '2026-10-25', end_date: '2026-10-25' }, 'UTC')).toMatchObject({ from: '2026-10-25T00:00:00.000Z', to: '2026-10-26T00:00:00.000Z' });
  });

  test('named periods end today in the time zone and move on at its midnight', () => {
    // 22:30 UTC on 15 March is 23:30 in Berlin: still the 15th.
    const late = resolvePeriod({ period: 'week' }, TZ, new Date('2026-03-15T22:30:00Z'));
    expect(late).toEqual({ period: 'week', start_date: '2026-03-09', end_date: '2026-03-15', from: '2026-03-08T23:00:00.000Z', to: '2026-03-15T23:00:00.000Z' });
    // Half an hour later it is the 16th there (while it still is the 15th in UTC).
    const next = resolvePeriod({ period: 'week' }, TZ, new Date('2026-03-15T23:00:00Z'));
    expect([next.start_date, next.end_date]).toEqual(['2026-03-10', '2026-03-16']);
    expect(resolvePeriod({ period: 'week' }, 'UTC', new Date('2026-03-15T23:00:00Z')).end_date).toBe('2026-03-15');
    expect(resolvePeriod({}, TZ, new Date('2026-03-15T12:00:00Z')).period).toBe('week');
    for (const [period, start] of [
      ['day', '2026-03-15'],
      ['month', '2026-02-14'],
      ['year', '2025-03-16'],
    ] as const) {
      expect(resolvePeriod({ period }, TZ, new Date('2026-03-15T12:00:00Z')).start_date).toBe(start);
    }
  });
});
