/** Time helpers. Stored timestamps are always `Date#toISOString()` (UTC, ms, "Z"), so they sort as strings. */

let secondStart = Number.NaN;
let secondPrefix = '';
/**
 * An instant (ms since the epoch) as ISO 8601, the same text as `Date#toISOString()`. The text up to the
 * second is made once per second: every report's frame carries a timestamp, 1000 a second at 1000 printers.
 */
export function isoOf(ms: number): string {
  const millis = ((ms % 1000) + 1000) % 1000;
  const start = ms - millis;
  if (start !== secondStart) {
    secondStart = start;
    secondPrefix = new Date(start).toISOString().slice(0, -4);
  }
  return `${secondPrefix}${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}Z`;
}

/** Now as ISO 8601. */
export function nowIso(): string {
  return isoOf(Date.now());
}

let lastCreation = 0;
/**
 * Now as ISO 8601, at least a millisecond after the last value it returned: a record's creation time, for
 * lists sorted by it. Records created within one millisecond (the demo farm's printers, one after another)
 * keep their creation order instead of falling back to the order of their ids.
 */
export function creationIso(): string {
  lastCreation = Math.max(Date.now(), lastCreation + 1);
  return isoOf(lastCreation);
}

/** Offset of `timeZone` from UTC at `instant`, in ms (positive east of Greenwich). */
export function zoneOffset(instant: number, timeZone: string): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).formatToParts(new Date(instant));
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value);
  const asUtc = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second'));
  return asUtc - Math.floor(instant / 1000) * 1000;
}

/** The instant a calendar day (YYYY-MM-DD) starts in `timeZone`. */
export function dayStart(date: string, timeZone: string): Date {
  const [y, m, d] = date.split('-').map(Number);
  const guess = Date.UTC(y, m - 1, d);
  const first = guess - zoneOffset(guess, timeZone);
  // Across a DST change the offset at the guess may differ from the offset at midnight.
  const second = guess - zoneOffset(first, timeZone);
  // Where the clocks jump forward at midnight (America/Santiago, Atlantic/Azores...), local midnight does not
  // exist: `second` then falls on the day before, and the day starts at the jump, which is `first`.
  if (second < first && calendarDate(new Date(second), timeZone) !== date) return new Date(first);
  return new Date(second);
}

/** Today's calendar date (YYYY-MM-DD) in `timeZone`. */
export function calendarDate(instant: Date, timeZone: string): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(instant);
}

export const isDateOnly = (value: string): boolean => /^\d{4}-\d{2}-\d{2}$/.test(value);

/** The first instant of a query date bound: a date means its whole day in `timeZone`. */
export function rangeStart(value: string, timeZone: string): string {
  return isDateOnly(value) ? dayStart(value, timeZone).toISOString() : new Date(value).toISOString();
}

/** The last instant of a query date bound (inclusive). */
export function rangeEnd(value: string, timeZone: string): string {
  if (!isDateOnly(value)) return new Date(value).toISOString();
  const next = new Date(Date.parse(`${value}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
  return new Date(dayStart(next, timeZone).getTime() - 1).toISOString();
}

export function isValidTimeZone(timeZone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
    return true;
  } catch {
    return false;
  }
}

/** Waits for `work` at most `ms`: true when it settled (either way) in time, false when the wait was cut. */
export function settledWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const cut = setTimeout(() => resolve(false), ms);
    const settled = () => {
      clearTimeout(cut);
      resolve(true);
    };
    work.then(settled, settled);
  });
}
