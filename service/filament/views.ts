/** Spools as the API shows them, from the embedded inventory or from Spoolman (one shape for both). */
import type { SpoolRecord } from '../db/repositories/spools';
import type { SpoolView } from '../schemas/spools';
import type { SpoolmanSpool } from './spoolman/client';

const round = (n: number | null) => (n === null ? null : Math.round(n * 100) / 100);

export function localSpoolView(s: SpoolRecord, thresholdG: number): SpoolView {
  return {
    id: s.id,
    source: 'local',
    material: s.material,
    color: s.color,
    brand: s.brand,
    name: s.name,
    diameter_mm: s.diameter_mm,
    density_g_cm3: s.density_g_cm3,
    initial_weight_g: round(s.initial_weight_g),
    remaining_weight_g: round(s.remaining_weight_g),
    cost_per_kg: s.cost_per_kg,
    location: s.location,
    printer_id: s.printer_id,
    slot: s.slot,
    rfid_uuid: s.rfid_uuid,
    archived: s.archived,
    low: !s.archived && s.remaining_weight_g < thresholdG,
    created_at: s.created_at,
    updated_at: s.updated_at,
  };
}

/** A Spoolman spool in Printfarm's shape; `at` is the slot Printfarm has it in. */
export function spoolmanSpoolView(s: SpoolmanSpool, at: { printer_id: string; slot: number } | null, thresholdG: number): SpoolView {
  const initial = s.initial_weight ?? s.filament.weight;
  const price = s.price ?? s.filament.price;
  const remaining = s.remaining_weight ?? (initial !== null ? Math.max(0, initial - s.used_weight) : null);
  const hex = s.filament.color_hex?.replace(/^#/, '') ?? '';
  const when = (v: string | null) => (v && !Number.isNaN(Date.parse(v)) ? new Date(Date.parse(v.endsWith('Z') || /[+-]\d\d:?\d\d$/.test(v) ? v : `${v}Z`)).toISOString() : new Date(0).toISOString());
  return {
    id: s.id,
    source: 'spoolman',
    material: s.filament.material ?? 'unknown',
    color: /^[0-9a-f]{6}/i.test(hex) ? `#${hex.slice(0, 6).toUpperCase()}` : null,
    brand: s.filament.vendor,
    name: s.filament.name,
    diameter_mm: s.filament.diameter ?? 1.75,
    density_g_cm3: s.filament.density,
    initial_weight_g: round(initial),
    remaining_weight_g: round(remaining),
    cost_per_kg: price !== null && initial ? round((price / initial) * 1000) : null,
    location: s.location,
    printer_id: at?.printer_id ?? null,
    slot: at?.slot ?? null,
    rfid_uuid: null,
    archived: s.archived,
    low: !s.archived && remaining !== null && remaining < thresholdG,
    created_at: when(s.registered),
    updated_at: when(s.last_used ?? s.registered),
  };
}
