/**
 * What a Bambu printer has loaded, from its merged report: AMS trays (global
 * tray number ams_id*4 + tray, an AMS-HT unit its own id from 128), and the
 * external spool `vt_tray` (slot 254). Pure functions of the report.
 */
import type { PrinterMaterial } from '../driver';
import { isObject, num, str, type Json } from './state';

export const EXTERNAL_SPOOL_SLOT = 254;
/** Most AMS units and trays read from one report (a peer cannot make us build a huge list). */
const MAX_UNITS = 16;
const MAX_TRAYS = 8;

/** "DFE2E3FF" (RRGGBBAA) or "#DFE2E3" -> "#DFE2E3"; null for anything else. */
export function trayColor(value: unknown): string | null {
  const text = str(value)?.trim().replace(/^#/, '') ?? '';
  return /^[0-9a-f]{6}([0-9a-f]{2})?$/i.test(text) ? `#${text.slice(0, 6).toUpperCase()}` : null;
}

function material(slot: number, tray: Json): PrinterMaterial | null {
  const type = str(tray.tray_type)?.trim();
  if (!type) return null; // an empty slot
  const remain = num(tray.remain);
  const uuid = str(tray.tray_uuid)?.trim() ?? '';
  const weight = num(tray.tray_weight);
  return {
    slot,
    type,
    color: trayColor(tray.tray_color),
    remaining_percent: remain === null || remain < 0 ? null : Math.min(100, remain),
    // All zeros: a spool without a Bambu RFID tag.
    tray_uuid: /^[0-9a-f]{32}$/i.test(uuid) && !/^0+$/.test(uuid) ? uuid.toUpperCase() : null,
    tray_weight_g: weight !== null && weight > 0 && weight <= 10_000 ? weight : null,
  };
}

/** The global tray feeding the nozzle (`ams.tray_now`): 254 the external spool, null for none ("255") or nonsense. */
export function activeSlotOf(print: Json): number | null {
  const now = isObject(print.ams) ? num(print.ams.tray_now) : null;
  if (now === null || !Number.isInteger(now) || now < 0 || now >= 255) return null;
  return now;
}

/** The loaded filaments: AMS trays in tray order, then the external spool. */
export function materialsOf(print: Json): PrinterMaterial[] {
  const out: PrinterMaterial[] = [];
  const ams = isObject(print.ams) && Array.isArray(print.ams.ams) ? print.ams.ams.slice(0, MAX_UNITS) : [];
  for (const unit of ams) {
    if (!isObject(unit)) continue;
    const amsId = num(unit.id);
    if (amsId === null || amsId < 0) continue;
    const trays = Array.isArray(unit.tray) ? unit.tray.slice(0, MAX_TRAYS) : [];
    for (const tray of trays) {
      if (!isObject(tray)) continue;
      const trayId = num(tray.id);
      if (trayId === null || trayId < 0 || trayId > 3) continue;
      const slot = amsId >= 128 ? amsId : amsId * 4 + trayId;
      const m = material(slot, tray);
      if (m) out.push(m);
    }
  }
  if (isObject(print.vt_tray)) {
    const m = material(EXTERNAL_SPOOL_SLOT, print.vt_tray);
    if (m) out.push(m);
  }
  return out.sort((a, b) => a.slot - b.slot);
}

/** The nozzle diameter in mm ("0.4" or 0.4), null when not reported or not plausible. */
export function nozzleDiameterOf(print: Json): number | null {
  const d = num(print.nozzle_diameter);
  return d !== null && d > 0 && d < 5 ? d : null;
}
