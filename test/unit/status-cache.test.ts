/**
 * The live status cache: zeros before a printer reports, one entry per
 * printer written in place on every report (no object per report).
 */
import { StatusCache } from '../../service/monitoring/status-cache';
import type { PrinterState } from '../../service/printers/driver';

const state = (nozzle: number, job: PrinterState['job'] = null): PrinterState => ({
  state: job ? 'printing' : 'idle',
  raw_state: job ? 'RUNNING' : 'IDLE',
  temperatures: { nozzle, bed: 60, nozzle_target: 220, bed_target: 60 },
  job,
  error: null,
  firmware_version: null,
  model: 'X1C',
  capabilities: null,
});

const job = (progress: number): NonNullable<PrinterState['job']> => ({ name: 'benchy', file: 'benchy.gcode', progress, layer_current: 12, layer_total: 200, remaining_seconds: 600, started_at: null, printer_job_id: null, time_printing: null });

describe('StatusCache', () => {
  it('answers zeros for a printer that has not reported, without handing out anything it keeps', () => {
    const cache = new StatusCache();
    const empty = cache.get('p1');
    expect(empty).toEqual({ temperatures: { nozzle: 0, bed: 0, nozzle_target: 0, bed_target: 0 }, progress: 0, layer_current: null, layer_total: null, remaining_seconds: null });
    expect(cache.has('p1')).toBe(false);
    cache.report('p1', state(200, job(5)));
    expect(cache.get('p2')).toEqual(empty);
    expect(cache.get('p2').progress).toBe(0);
  });

  it('keeps one entry per printer and writes every report into it', () => {
    const cache = new StatusCache();
    cache.report('p1', state(200, job(10)));
    const entry = cache.get('p1');
    expect(entry).toMatchObject({ temperatures: { nozzle: 200 }, progress: 10, layer_current: 12, layer_total: 200, remaining_seconds: 600 });
    const next = state(201);
    cache.report('p1', next);
    expect(cache.get('p1')).toBe(entry);
    // The report's own temperatures (a driver never changes a state it handed out), and no job left over.
    expect(entry.temperatures).toBe(next.temperatures);
    expect(entry).toMatchObject({ progress: 0, layer_current: null, layer_total: null, remaining_seconds: null });
  });

  it('forgets a deleted printer', () => {
    const cache = new StatusCache();
    cache.report('p1', state(200, job(40)));
    expect(cache.has('p1')).toBe(true);
    cache.delete('p1');
    expect(cache.has('p1')).toBe(false);
    expect(cache.get('p1').progress).toBe(0);
  });
});
