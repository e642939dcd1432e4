/**
 * Working hours (`queue_hours`): weekly windows in the service's time zone
 * outside which the queue starts nothing, e.g. `Mon-Fri 07:00-22:00, Sat
 * 08:00-14:00`. A window may run past midnight (`Fri 22:00-06:00` ends on
 * Saturday morning); `24:00` is the end of the day; `daily` means every day.
 * Empty: no restriction. Windows that touch or overlap count as one open span
 * (a print may run from Monday's window into Tuesday's when they meet at midnight).
 */
import { calendarDate, zoneOffset } from '../util/time';

export interface HoursWindow {
  /** Days the window starts on, 0 = Sunday. */
  days: number[];
  /** Minutes after local midnight. */
  start: number;
  /** Minutes after local midnight of the start day; above 1440 when the window runs past midnight. */
  end: number;
}

export interface WorkingHours {
  text: string;
  windows: HoursWindow[];
}

const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];
const FULL_DAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];
const MAX_WINDOWS = 50;
const WINDOW = /^([a-z]+)(?:\s*-\s*([a-z]+))?\s+(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})$/i;

export class HoursError extends Error {}

function day(name: string, window: string): number {
  const lower = name.toLowerCase();
  const i = DAYS.indexOf(lower.slice(0, 3));
  if (i < 0 || (lower.length > 3 && FULL_DAYS[i] !== lower)) {
    throw new HoursError(`"${window}": "${name}" is not a day (Mon, Tue, Wed, Thu, Fri, Sat, Sun or daily)`);
  }
  return i;
}

function minutes(h: string, m: string, window: string): number {
  const value = Number(h) * 60 + Number(m);
  if (Number(m) > 59 || value > 1440) throw new HoursError(`"${window}": ${h}:${m} is not a time of day (00:00 to 24:00)`);
  return value;
}

/** Parses `queue_hours`; throws HoursError with a message people can act on. Empty text: null (always open). */
export function parseHours(text: string): WorkingHours | null {
  const trimmed = text.trim();
  if (!trimmed) return null;
  const parts = trimmed.split(/[,;]/).map((p) => p.trim()).filter(Boolean);
  if (parts.length > MAX_WINDOWS) throw new HoursError(`at most ${MAX_WINDOWS} windows`);
  const windows = parts.map((part): HoursWindow => {
    const m = WINDOW.exec(part);
    if (!m) throw new HoursError(`"${part}" is not a window like "Mon-Fri 07:00-22:00" or "daily 06:00-23:00"`);
    const start = minutes(m[3], m[4], part);
    let end = minutes(m[5], m[6], part);
    if (end === start) throw new HoursError(`"${part}": the window is empty (start and end are the same)`);
    if (end < start) end += 1440; // runs past midnight
    let days: number[];
    if (/^(daily|everyday)$/i.test(m[1]) && !m[2]) days = [0, 1, 2, 3, 4, 5, 6];
    else {
      const from = day(m[1], part);
      const to = m[2] ? day(m[2], part) : from;
      days = [];
      for (let d = from; ; d = (d + 1) % 7) {
        days.push(d);
        if (d === to) break;
      }
    }
    return { days, start, end };
  });
  return { text: trimmed, windows };
}

/** The message of a bad `queue_hours`, or null when it is valid. */
export function hoursError(text: string): string | null {
  try {
    parseHours(text);
    return null;
  } catch (err) {
    if (err instanceof HoursError) return err.message;
    throw err;
  }
}

/** The instant of local `date` (YYYY-MM-DD) plus `min` minutes in `tz` (the offset taken at that instant, DST-safe). */
function localInstant(date: string, min: number, tz: string): number {
  const [y, m, d] = date.split('-').map(Number);
  const guess = Date.UTC(y, m - 1, d) + min * 60_000;
  const first = guess - zoneOffset(guess, tz);
  return guess - zoneOffset(first, tz);
}

/** The open spans from a day before `now` to 8 days after, merged where they touch. */
function spans(hours: WorkingHours, now: number, tz: string): [number, number][] {
  const out: [number, number][] = [];
  for (let k = -1; k <= 8; k++) {
    const date = calendarDate(new Date(now + k * 86_400_000), tz);
    const [y, m, d] = date.split('-').map(Number);
    const weekday = new Date(Date.UTC(y, m - 1, d)).getUTCDay();
    for (const w of hours.windows) if (w.days.includes(weekday)) out.push([localInstant(date, w.start, tz), localInstant(date, w.end, tz)]);
  }
  out.sort((a, b) => a[0] - b[0]);
  const merged: [number, number][] = [];
  for (const s of out) {
    const last = merged[merged.length - 1];
    if (last && s[0] <= last[1]) last[1] = Math.max(last[1], s[1]);
    else merged.push([...s]);
  }
  return merged;
}

export interface HoursState {
  open: boolean;
  /** Open: when the current span closes. */
  closes_at: number | null;
  /** Closed: when the next span opens (null: none in the next week). */
  opens_at: number | null;
}

export function hoursAt(hours: WorkingHours | null, now: number, tz: string): HoursState {
  if (!hours) return { open: true, closes_at: null, opens_at: null };
  const all = spans(hours, now, tz);
  const current = all.find(([a, b]) => a <= now && now < b);
  if (current) return { open: true, closes_at: current[1], opens_at: null };
  return { open: false, closes_at: null, opens_at: all.find(([a]) => a > now)?.[0] ?? null };
}

/** "Mon 07:00" in the service's time zone, for waiting reasons. */
export function localLabel(instant: number, tz: string): string {
  return new Intl.DateTimeFormat('en-GB', { timeZone: tz, weekday: 'short', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(new Date(instant));
}
