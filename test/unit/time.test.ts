import { calendarDate, creationIso, dayStart, isDateOnly, isoOf, isValidTimeZone, nowIso, rangeEnd, rangeStart, settledWithin } from '../../service/util/time';

const iso = (d: Date) => d.toISOString();
const HOUR = 3_600_000;

/** Every calendar date (YYYY-MM-DD) of a year. */
function datesOf(year: number): string[] {
  const out: string[] = [];
  for (let t = Date.UTC(year, 0, 1); t < Date.UTC(year + 1, 0, 1); t += 86_400_000) out.push(new Date(t).toISOString().slice(0, 10));
  return out;
}

describe('dayStart', () => {
  test('in UTC a day starts at midnight Z', () => {
    expect(iso(dayStart('2026-03-11', 'UTC'))).toBe('2026-03-11T00:00:00.000Z');
    expect(iso(dayStart('2024-02-29', 'UTC'))).toBe('2024-02-29T00:00:00.000Z');
    expect(iso(dayStart('2026-01-01', 'Etc/UTC'))).toBe('2026-01-01T00:00:00.000Z');
  });

  test('in Europe/Berlin a day starts at local midnight, +01:00 in winter and +02:00 in summer', () => {
    expect(iso(dayStart('2026-01-15', 'Europe/Berlin'))).toBe('2026-01-14T23:00:00.000Z');
    expect(iso(dayStart('2026-07-01', 'Europe/Berlin'))).toBe('2026-06-30T22:00:00.000Z');
    expect(iso(dayStart('2027-01-01', 'Europe/Berlin'))).toBe('2026-12-31T23:00:00.000Z');
  });

  test('in Europe/Berlin across the spring-forward change (2026-03-29, 02:00 -> 03:00)', () => {
    expect(iso(dayStart('2026-03-28', 'Europe/Berlin'))).toBe('2026-03-27T23:00:00.000Z');
    expect(iso(dayStart('2026-03-29', 'Europe/Berlin'))).toBe('2026-03-28T23:00:00.000Z'); // still +01:00 at midnight
    expect(iso(dayStart('2026-03-30', 'Europe/Berlin'))).toBe('2026-03-29T22:00:00.000Z'); // +02:00 from here on
  });

  test('in Europe/Berlin across the fall-back change (2026-10-25, 03:00 -> 02:00)', () => {
    expect(iso(dayStart('2026-10-25', 'Europe/Berlin'))).toBe('2026-10-24T22:00:00.000Z'); // still +02:00 at midnight
    expect(iso(dayStart('2026-10-26', 'Europe/Berlin'))).toBe('2026-10-25T23:00:00.000Z');
  });

  test('west of Greenwich and south of the equator', () => {
    expect(iso(dayStart('2026-03-08', 'America/New_York'))).toBe('2026-03-08T05:00:00.000Z'); // DST starts at 02:00 that day
    expect(iso(dayStart('2026-03-09', 'America/New_York'))).toBe('2026-03-09T04:00:00.000Z');
    expect(iso(dayStart('2026-04-05', 'Australia/Sydney'))).toBe('2026-04-04T13:00:00.000Z'); // +11 until 03:00 that day
    expect(iso(dayStart('2026-04-06', 'Australia/Sydney'))).toBe('2026-04-05T14:00:00.000Z'); // then +10
    expect(iso(dayStart('2026-06-01', 'Asia/Kolkata'))).toBe('2026-05-31T18:30:00.000Z');
    expect(iso(dayStart('2026-06-01', 'Asia/Kathmandu'))).toBe('2026-05-31T18:15:00.000Z');
    expect(iso(dayStart('2026-01-01', 'Pacific/Kiritimati'))).toBe('2025-12-31T10:00:00.000Z'); // +14
  });

  test('where the clocks jump at midnight, the day starts at the jump (01:00 local), not an hour before it on the previous day', () => {
    // Chile: on 2026-09-06 local time goes from 00:00 (-04:00) straight to 01:00 (-03:00).
    expect(iso(dayStart('2026-09-06', 'America/Santiago'))).toBe('2026-09-06T04:00:00.000Z');
    expect(calendarDate(dayStart('2026-09-06', 'America/Santiago'), 'America/Santiago')).toBe('2026-09-06');
    // Azores: 2026-03-29 00:00 (-01:00) becomes 01:00 (+00:00).
    expect(iso(dayStart('2026-03-29', 'Atlantic/Azores'))).toBe('2026-03-29T01:00:00.000Z');
    // Chile, fall back at midnight (00:00 -03:00 -> 23:00 -04:00 the day before): the day starts at the (only) 00:00 that follows.
    expect(iso(dayStart('2026-04-05', 'America/Santiago'))).toBe('2026-04-05T04:00:00.000Z');
  });

  test('for every day of a year and a set of zones: the start maps to that date and the instant before it to the previous date', () => {
    const zones = ['UTC', 'Europe/Berlin', 'America/New_York', 'America/Santiago', 'America/Havana', 'Atlantic/Azores', 'Australia/Sydney', 'Asia/Kathmandu', 'Pacific/Chatham', 'Pacific/Kiritimati'];
    const failures: string[] = [];
    const days = datesOf(2026);
    for (const tz of zones) {
      for (let i = 1; i < days.length; i++) {
        const start = dayStart(days[i], tz);
        const on = calendarDate(start, tz);
        const before = calendarDate(new Date(start.getTime() - 1), tz);
        if (on !== days[i] || before !== days[i - 1]) failures.push(`${tz} ${days[i]}: start ${iso(start)} is on ${on}, 1 ms earlier on ${before}`);
      }
    }
    expect(failures).toEqual([]);
  });
});

describe('rangeStart / rangeEnd', () => {
  test('a date means its whole day in UTC', () => {
    expect(rangeStart('2026-03-11', 'UTC')).toBe('2026-03-11T00:00:00.000Z');
    expect(rangeEnd('2026-03-11', 'UTC')).toBe('2026-03-11T23:59:59.999Z');
    expect(rangeEnd('2026-12-31', 'UTC')).toBe('2026-12-31T23:59:59.999Z');
    expect(rangeEnd('2028-02-28', 'UTC')).toBe('2028-02-28T23:59:59.999Z');
    expect(rangeEnd('2028-02-29', 'UTC')).toBe('2028-02-29T23:59:59.999Z');
  });

  test('a date means its whole day in Europe/Berlin', () => {
    expect(rangeStart('2026-03-11', 'Europe/Berlin')).toBe('2026-03-10T23:00:00.000Z');
    expect(rangeEnd('2026-03-11', 'Europe/Berlin')).toBe('2026-03-11T22:59:59.999Z');
    expect(rangeStart('2026-07-01', 'Europe/Berlin')).toBe('2026-06-30T22:00:00.000Z');
    expect(rangeEnd('2026-07-01', 'Europe/Berlin')).toBe('2026-07-01T21:59:59.999Z');
  });

  test('DST days in Europe/Berlin are 23 and 25 hours long', () => {
    expect(rangeStart('2026-03-29', 'Europe/Berlin')).toBe('2026-03-28T23:00:00.000Z');
    expect(rangeEnd('2026-03-29', 'Europe/Berlin')).toBe('2026-03-29T21:59:59.999Z');
    expect(Date.parse(rangeEnd('2026-03-29', 'Europe/Berlin')) + 1 - Date.parse(rangeStart('2026-03-29', 'Europe/Berlin'))).toBe(23 * HOUR);

    expect(rangeStart('2026-10-25', 'Europe/Berlin')).toBe('2026-10-24T22:00:00.000Z');
    expect(rangeEnd('2026-10-25', 'Europe/Berlin')).toBe('2026-10-25T22:59:59.999Z');
    expect(Date.parse(rangeEnd('2026-10-25', 'Europe/Berlin')) + 1 - Date.parse(rangeStart('2026-10-25', 'Europe/Berlin'))).toBe(25 * HOUR);
  });

  test('consecutive days tile without gap or overlap', () => {
    for (const tz of ['UTC', 'Europe/Berlin', 'America/Santiago', 'Atlantic/Azores']) {
      const days = datesOf(2026);
      for (let i = 1; i < days.length; i++) {
        expect([tz, Date.parse(rangeEnd(days[i - 1], tz)) + 1]).toEqual([tz, Date.parse(rangeStart(days[i], tz))]);
      }
    }
  });

  test('a full timestamp is taken as that instant (normalised to UTC), whatever the zone', () => {
    expect(rangeStart('2026-03-11T10:00:00Z', 'Europe/Berlin')).toBe('2026-03-11T10:00:00.000Z');
    expect(rangeStart('2026-03-11T10:00:00+02:00', 'UTC')).toBe('2026-03-11T08:00:00.000Z');
    expect(rangeEnd('2026-03-11T10:00:00.250-05:00', 'Europe/Berlin')).toBe('2026-03-11T15:00:00.250Z');
    expect(rangeEnd('2026-03-11T23:59:59Z', 'UTC')).toBe('2026-03-11T23:59:59.000Z');
  });
});

describe('calendarDate, isDateOnly, nowIso', () => {
  test('calendarDate is the date in the zone', () => {
    const instant = new Date('2026-03-10T23:30:00Z');
    expect(calendarDate(instant, 'UTC')).toBe('2026-03-10');
    expect(calendarDate(instant, 'Europe/Berlin')).toBe('2026-03-11');
    expect(calendarDate(instant, 'America/New_York')).toBe('2026-03-10');
    expect(calendarDate(new Date('2026-01-01T09:59:59Z'), 'Pacific/Kiritimati')).toBe('2026-01-01');
    expect(calendarDate(new Date('2026-01-01T10:00:00Z'), 'Pacific/Kiritimati')).toBe('2026-01-02');
    expect(calendarDate(new Date('2026-01-01T02:00:00Z'), 'America/Los_Angeles')).toBe('2025-12-31');
  });

  test('isDateOnly accepts YYYY-MM-DD only', () => {
    expect(isDateOnly('2026-03-11')).toBe(true);
    for (const v of ['2026-03-11T00:00:00Z', '2026-3-11', '11.03.2026', '20260311', '2026-03-11 ', '']) expect([v, isDateOnly(v)]).toEqual([v, false]);
  });

  test('isoOf gives the text of toISOString, across second, day and year boundaries and before 1970', () => {
    const instants = [0, 1, 9, 10, 99, 100, 999, 1000, 1001, -1, -999, -1000, -1001, Date.UTC(2026, 11, 31, 23, 59, 59, 999), Date.UTC(2027, 0, 1), Date.UTC(2024, 1, 29, 12, 0, 0, 5)];
    for (let i = 0; i < 3000; i++) instants.push(Date.UTC(2026, 10, 26) + i * 7 + (i % 3) * 1000);
    for (const ms of instants) expect([ms, isoOf(ms)]).toEqual([ms, new Date(ms).toISOString()]);
  });

  test('nowIso is the current instant as toISOString', () => {
    const before = Date.now();
    const now = nowIso();
    const after = Date.now();
    expect(now).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(Date.parse(now)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(now)).toBeLessThanOrEqual(after);
  });
});

describe('isValidTimeZone', () => {
  test('IANA names and UTC are valid', () => {
    for (const tz of ['UTC', 'Etc/UTC', 'Europe/Berlin', 'America/Santiago', 'Asia/Kathmandu', 'Etc/GMT+5']) expect([tz, isValidTimeZone(tz)]).toEqual([tz, true]);
  });

  test('unknown names, padding and empty strings are not', () => {
    for (const tz of ['Mars/Olympus', 'Europe/Berlinn', 'Europe/Berlin ', '', 'not a zone']) expect([tz, isValidTimeZone(tz)]).toEqual([tz, false]);
  });
});

describe('settledWithin', () => {
  test('true when the work settles in time, resolved or rejected; false when the wait is cut', async () => {
    expect(await settledWithin(Promise.resolve(1), 1000)).toBe(true);
    expect(await settledWithin(Promise.reject(new Error('no')), 1000)).toBe(true);
    expect(await settledWithin(new Promise(() => undefined), 20)).toBe(false);
  });
});

test('creationIso: each value after the last, even within one millisecond, and never behind the clock', () => {
  const before = Date.now();
  const values = Array.from({ length: 1000 }, () => creationIso());
  for (let i = 1; i < values.length; i++) expect(values[i] > values[i - 1]).toBe(true);
  expect(Date.parse(values[0])).toBeGreaterThanOrEqual(before);
  // Caught up with the clock again a little later.
  expect(Date.parse(creationIso())).toBeGreaterThan(Date.parse(values[values.length - 1]));
});
