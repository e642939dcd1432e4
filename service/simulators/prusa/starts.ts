/**
 * When the simulated PrusaLink printer takes a print start (PUT with
 * Print-After-Upload, POST on a file), and what POST /materials may load.
 * Buddy starts a print only from its home, print preview or print finished
 * screen, and not while a job runs, a dialog is BUSY, or an ATTENTION or an
 * unacknowledged ERROR waits; everything else is 409 (QUEUE.md).
 */
import type { PrusaFaults, PrusaMaterial } from './types';
import type { SimPrinter } from './printer';

/** Why a start would get 409 now, or null when the printer would take it. */
export function startRefusal(p: SimPrinter, faults: PrusaFaults): string | null {
  p.advance();
  if (faults.reject_commands) return 'The printer refuses commands right now';
  if (p.busy) return 'The printer is busy';
  if (p.overlay === 'ATTENTION' || p.job?.state === 'ERROR') return 'The printer needs attention';
  if (!p.screenReady) return 'The printer is not ready: its screen is not at home, print preview or print finished';
  return null;
}

/** A POST /materials body: `{"materials":[{"slot":0,"type":"PLA","color":"#FFFFFF"}]}`, one tool (slot 0); [] unloads. */
export function parseMaterials(body: Record<string, unknown>): { ok: true; materials: PrusaMaterial[] } | { ok: false; error: string } {
  const list = body.materials;
  if (!Array.isArray(list) || list.length > 1) return { ok: false, error: 'give {"materials": [{"slot": 0, "type": "PLA", "color": "#FFFFFF"}]} (one tool: slot 0, or [] to unload)' };
  const out: PrusaMaterial[] = [];
  for (const raw of list) {
    const m = (raw ?? {}) as Record<string, unknown>;
    if (m.slot !== 0) return { ok: false, error: 'slot must be 0 (this printer has one tool)' };
    if (typeof m.type !== 'string' || !/^[A-Za-z0-9+-]{1,16}$/.test(m.type)) return { ok: false, error: 'type must be a filament type such as "PLA"' };
    const color = m.color ?? '#FFFFFF';
    if (typeof color !== 'string' || !/^#[0-9a-fA-F]{6}$/.test(color)) return { ok: false, error: 'color must be "#RRGGBB"' };
    out.push({ slot: 0, type: m.type.toUpperCase(), color: color.toUpperCase() });
  }
  return { ok: true, materials: out };
}
