/**
 * What the simulated Bambu printer has loaded: AMS trays and the external
 * spool, addressed the way `project_file`'s `ams_mapping` addresses them
 * (global tray number = ams_id * 4 + slot; 254 = the external spool, which
 * the printer reports as `vt_tray`). It renders the `ams` and `vt_tray`
 * objects of a push_status report as a real P1/X1 does:
 * `ams.ams[].tray[]` with `tray_type`, `tray_color` (RRGGBBAA) and `remain`
 * (percent, -1 unknown); an empty slot is reported as just its `id`.
 * A Bambu spool with an RFID tag reports its `tray_uuid` (32 hex characters)
 * and `remain`; a spool without one reports all zeros and `remain` -1.
 */
import { createHash } from 'node:crypto';
import { bambuFilamentIdx } from '../seed-files';
import type { Json } from './printer';

/** Global tray number of the external spool (Bambu's `vt_tray` id). */
export const EXTERNAL_SPOOL = 254;
/** At most this many AMS units (4 trays each) on one simulated printer. */
export const MAX_AMS_UNITS = 4;

export interface LoadedMaterial {
  /** Global tray number: ams_id * 4 + tray, or 254 for the external spool. */
  slot: number;
  /** Filament type as the printer names it: "PLA", "PETG", "ABS"... */
  type: string;
  /** "#RRGGBB" (upper case). */
  color: string;
  /** Percent left, -1 when unknown (no RFID). */
  remain: number;
  /** The RFID tag's tray_uuid (32 hex characters); null for a spool without a Bambu tag. */
  rfid: string | null;
}

const NO_TAG = '0'.repeat(32);

/** A stable tag for a simulated Bambu spool (the same printer and slot get the same spool after a restart). */
export function simulatedTag(seed: string, slot: number): string {
  return createHash('md5').update(`${seed}:${slot}`).digest('hex').toUpperCase();
}

/** Nozzle temperature range Bambu Studio shows for a filament type (what a tray reports). */
const TEMPS: Record<string, [number, number]> = { PLA: [190, 230], PETG: [230, 260], ABS: [240, 270], ASA: [240, 270], TPU: [200, 240], PC: [260, 290] };

/** The default: a Bambu white PLA spool (RFID tagged) in AMS tray 0, nothing else (a PETG job must wait for someone to load PETG). */
export function defaultMaterials(hasAms: boolean, seed = 'sim'): LoadedMaterial[] {
  const slot = hasAms ? 0 : EXTERNAL_SPOOL;
  return [{ slot, type: 'PLA', color: '#FFFFFF', remain: 100, rfid: simulatedTag(seed, slot) }];
}

/**
 * Checks a `POST /materials` body (`{"materials":[{"slot":0,"type":"PLA","color":"#FFFFFF"}]}`)
 * against the trays this printer has; returns the new list or the reason it is refused.
 * `"rfid": true` makes it a tagged Bambu spool (or `"tray_uuid"` names its tag); without, a
 * spool without a tag (`remain` -1 unless given).
 */
export function parseMaterials(body: Json, amsUnits: number, seed = 'sim'): { ok: true; materials: LoadedMaterial[] } | { ok: false; error: string } {
  const list = body.materials;
  if (!Array.isArray(list)) return { ok: false, error: 'give {"materials": [{"slot": 0, "type": "PLA", "color": "#FFFFFF"}]}' };
  if (list.length > MAX_AMS_UNITS * 4 + 1) return { ok: false, error: 'too many materials' };
  const out: LoadedMaterial[] = [];
  for (const [i, raw] of list.entries()) {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return { ok: false, error: `materials[${i}] must be an object` };
    const m = raw as Json;
    const slot = m.slot;
    if (typeof slot !== 'number' || !Number.isInteger(slot)) return { ok: false, error: `materials[${i}].slot must be an integer` };
    if (slot !== EXTERNAL_SPOOL && (slot < 0 || slot >= amsUnits * 4))
      return { ok: false, error: `materials[${i}].slot ${slot}: this printer has ${amsUnits ? `AMS trays 0-${amsUnits * 4 - 1} and ` : ''}the external spool ${EXTERNAL_SPOOL}` };
    if (out.some((o) => o.slot === slot)) return { ok: false, error: `slot ${slot} given twice` };
    if (typeof m.type !== 'string' || !/^[A-Za-z0-9+-]{1,16}$/.test(m.type)) return { ok: false, error: `materials[${i}].type must be a filament type such as "PLA"` };
    const color = m.color ?? '#FFFFFF';
    if (typeof color !== 'string' || !/^#[0-9a-fA-F]{6}$/.test(color)) return { ok: false, error: `materials[${i}].color must be "#RRGGBB"` };
    if (m.tray_uuid !== undefined && (typeof m.tray_uuid !== 'string' || !/^[0-9A-Fa-f]{32}$/.test(m.tray_uuid))) return { ok: false, error: `materials[${i}].tray_uuid must be 32 hex characters` };
    const rfid = typeof m.tray_uuid === 'string' && m.tray_uuid !== NO_TAG ? m.tray_uuid.toUpperCase() : m.rfid === true ? simulatedTag(seed, slot) : null;
    const remain = m.remain ?? (rfid ? 100 : -1);
    if (typeof remain !== 'number' || !Number.isInteger(remain) || remain < -1 || remain > 100) return { ok: false, error: `materials[${i}].remain must be -1..100` };
    out.push({ slot, type: m.type.toUpperCase(), color: color.toUpperCase(), remain, rfid });
  }
  return { ok: true, materials: out.sort((a, b) => a.slot - b.slot) };
}

export class SimMaterials {
  private loaded: LoadedMaterial[];

  constructor(
    /** AMS units attached (0 = none: only the external spool). */
    readonly amsUnits: number,
    /** Makes the simulated RFID tags of this printer (its serial). */
    readonly seed = 'sim',
  ) {
    this.loaded = defaultMaterials(amsUnits > 0, seed);
  }

  /** What is loaded, by slot. */
  list(): LoadedMaterial[] {
    return this.loaded.map((m) => ({ ...m }));
  }

  replace(materials: LoadedMaterial[]): void {
    this.loaded = materials.map((m) => ({ ...m }));
  }

  /** Takes `percent` off a tray's `remain` for good (unknown stays unknown). */
  consume(slot: number, percent: number): void {
    const m = this.loaded.find((x) => x.slot === slot);
    if (m && m.remain >= 0) m.remain = Math.max(0, m.remain - percent);
  }

  /** The material in a global tray number, or null when the slot is empty or does not exist. */
  at(slot: number): LoadedMaterial | null {
    return this.loaded.find((m) => m.slot === slot) ?? null;
  }

  /** True when `slot` is a tray of an attached AMS (loaded or not). */
  trayExists(slot: number): boolean {
    return Number.isInteger(slot) && slot >= 0 && slot < this.amsUnits * 4;
  }

  /** The first loaded AMS tray (what a print started on the screen feeds from), else the external spool. */
  defaultFeed(): number | null {
    const ams = this.loaded.find((m) => m.slot !== EXTERNAL_SPOOL);
    return ams ? ams.slot : this.at(EXTERNAL_SPOOL) ? EXTERNAL_SPOOL : null;
  }

  private trayFields(m: LoadedMaterial, used: number): Json {
    const [min, max] = TEMPS[m.type] ?? [200, 250];
    return {
      tray_type: m.type,
      tray_sub_brands: '',
      tray_color: `${m.color.slice(1)}FF`,
      tray_info_idx: bambuFilamentIdx(m.type),
      nozzle_temp_min: String(min),
      nozzle_temp_max: String(max),
      tray_weight: '1000',
      tray_diameter: '1.75',
      tray_uuid: m.rfid ?? NO_TAG,
      tag_uid: m.rfid ? m.rfid.slice(0, 16) : '0000000000000000',
      remain: m.remain < 0 ? -1 : Math.max(0, m.remain - used),
    };
  }

  /**
   * The report's `ams` object. `feeding` is the tray the job uses (its
   * `remain` drops by `used` percent as it prints), null when there is no job;
   * `inUse` says whether the filament is in the nozzle now (`tray_now`).
   */
  amsReport(feeding: number | null, used: number, inUse: boolean): Json {
    const units: Json[] = [];
    let trayBits = 0;
    for (let unit = 0; unit < this.amsUnits; unit++) {
      const trays: Json[] = [];
      for (let tray = 0; tray < 4; tray++) {
        const slot = unit * 4 + tray;
        const m = this.at(slot);
        if (m) trayBits |= 1 << slot;
        trays.push(m ? { id: String(tray), ...this.trayFields(m, slot === feeding ? used : 0) } : { id: String(tray) });
      }
      units.push({ id: String(unit), humidity: '4', temp: '24.5', tray: trays });
    }
    // The tray feeding the nozzle, 254 the external spool, 255 none.
    const now = inUse && feeding !== null ? String(feeding) : '255';
    return {
      ams: units,
      ams_exist_bits: ((1 << this.amsUnits) - 1).toString(16),
      tray_exist_bits: trayBits.toString(16),
      tray_is_bbl_bits: trayBits.toString(16),
      tray_now: now,
      tray_pre: '255',
      tray_tar: now,
      version: 4,
      insert_flag: true,
      power_on_flag: false,
    };
  }

  /** The report's `vt_tray` (external spool): empty fields when nothing is loaded there. */
  externalReport(feeding: number | null, used: number): Json {
    const m = this.at(EXTERNAL_SPOOL);
    if (!m) return { id: String(EXTERNAL_SPOOL), tray_type: '', tray_color: '00000000', tray_info_idx: '', remain: 0, k: 0.02, n: 1 };
    return { id: String(EXTERNAL_SPOOL), ...this.trayFields(m, feeding === EXTERNAL_SPOOL ? used : 0), k: 0.02, n: 1 };
  }
}
