/**
 * The rules that hold a start back whatever the printer (issue 23): working
 * hours, a limit on printers heating at once (a farm's breaker), a pause
 * between two starts, and an item's own deadline. Each gives its waiting
 * reason in words and the instant worth waking up at.
 */
import type { PrinterState } from '../printers/driver';
import type { SettingsService } from '../settings';
import { hoursAt, localLabel, parseHours, type HoursState } from './working-hours';

export interface GateSettings {
  queue_hours: string;
  queue_max_concurrent_heatups: number;
  queue_start_stagger_s: number;
  timezone: string;
}

/** The gate settings as they are now. */
export function gateSettingsOf(s: SettingsService): GateSettings {
  return { queue_hours: s.get('queue_hours'), queue_max_concurrent_heatups: s.get('queue_max_concurrent_heatups'), queue_start_stagger_s: s.get('queue_start_stagger_s'), timezone: s.get('timezone') };
}

export interface FarmGate {
  hours: HoursState;
  /** Why nothing may start now (outside working hours), else null. */
  closed: string | null;
  /** Starts this pass may still make (Infinity: no limit). */
  budget: number;
  /** Why a free, compatible printer gets no start (heat-ups or the stagger). */
  budgetReason: string | null;
  /** Wake the dispatcher then (the hours open, the stagger ends). */
  wakeAt: number | null;
}

/** Bed more than 3 °C or nozzle more than 10 °C below a set target: the heater draws its full power. */
export function isHeating(state: PrinterState | undefined): boolean {
  if (!state) return false;
  if (state.state === 'preparing') return true;
  if (state.state !== 'printing') return false;
  const t = state.temperatures;
  return (t.bed_target > 0 && t.bed < t.bed_target - 3) || (t.nozzle_target > 0 && t.nozzle < t.nozzle_target - 10);
}

const list = (names: string[]) => names.slice(0, 3).join(', ') + (names.length > 3 ? ` and ${names.length - 3} more` : '');

export function duration(seconds: number): string {
  const h = Math.floor(seconds / 3600);
  const m = Math.round((seconds % 3600) / 60);
  return h ? `${h} h${m ? ` ${m} min` : ''}` : `${Math.max(1, m)} min`;
}

/** The farm-wide gate at `now`: `heating` names the printers heating or about to (a start sent, not yet printing). */
export function farmGate(s: GateSettings, now: number, heating: string[], lastStartAt: number): FarmGate {
  const hours = hoursAt(parseHours(s.queue_hours), now, s.timezone);
  if (!hours.open) {
    const when = hours.opens_at === null ? 'no window in the next week' : `starts ${localLabel(hours.opens_at, s.timezone)} (${new Date(hours.opens_at).toISOString()})`;
    return { hours, closed: `outside working hours (${s.queue_hours.trim()}); ${when}`, budget: 0, budgetReason: null, wakeAt: hours.opens_at };
  }
  const staggerEnds = lastStartAt + s.queue_start_stagger_s * 1000;
  if (s.queue_start_stagger_s > 0 && now < staggerEnds) {
    return { hours, closed: null, budget: 0, budgetReason: `next start in ${Math.ceil((staggerEnds - now) / 1000)} s (queue_start_stagger_s)`, wakeAt: staggerEnds };
  }
  // One start per pass with a stagger: the next pass comes when it has passed.
  let budget = s.queue_start_stagger_s > 0 ? 1 : Infinity;
  let budgetReason: string | null = null;
  const max = s.queue_max_concurrent_heatups;
  if (max > 0) {
    budget = Math.min(budget, Math.max(0, max - heating.length));
    if (budget === 0) budgetReason = `waiting for heat-up: ${heating.length} printer${heating.length === 1 ? '' : 's'} heating (${list(heating)}); queue_max_concurrent_heatups is ${max}`;
  }
  return { hours, closed: null, budget, budgetReason, wakeAt: null };
}

/** Why a print of `printTimeS` seconds may not start now: it would end after finish_by or after the hours close. */
export function timeGate(finishBy: string | null, printTimeS: number | null, now: number, hours: HoursState, tz: string): string | null {
  if (printTimeS === null) return null;
  const end = now + printTimeS * 1000;
  if (finishBy && end > Date.parse(finishBy)) {
    return `cannot finish by ${new Date(finishBy).toISOString()}: its estimated ${duration(printTimeS)} print would end at ${new Date(end).toISOString()}`;
  }
  if (hours.closes_at !== null && end > hours.closes_at) {
    return `its estimated ${duration(printTimeS)} print would end after working hours close (${localLabel(hours.closes_at, tz)})`;
  }
  return null;
}
