/**
 * Which slot each filament of a print comes from, and how many grams: the
 * plan of a print, taken when its job starts (and again at its end when the
 * start was missed). A queued print uses the dispatcher's own tray choice
 * (`amsMapping`, the same pure function with the same trays and requirements
 * the dispatcher decided with); a print started by hand on a single filament
 * uses the tray the printer reports feeding while it prints.
 */
import type { Store } from '../db';
import type { JobRecord } from '../db/repositories/jobs';
import type { PlanEntry } from '../db/repositories/filament-usage';
import type { PrinterState } from '../printers/driver';
import { amsMapping, EXTERNAL_SPOOL } from '../queue/compatibility';
import type { FileFacts } from '../queue/file-facts';
import type { FileGramsCache, FilamentGrams } from './file-grams';

const baseName = (p: string) => p.replace(/\\/g, '/').split('/').filter(Boolean).pop()?.toLowerCase() ?? '';

/** The print file the job prints, when the service has a local copy of it, and the 3MF plate. */
async function fileOf(store: Store, job: JobRecord) {
  let plate = 1;
  let requirements: { material?: string; color?: string } | null = null;
  let file = null;
  if (job.queue_item_id) {
    const item = await store.queue.getItem(job.queue_item_id);
    if (item) {
      plate = item.plate;
      requirements = item.requirements;
      file = (await store.files.get(item.file_id)) ?? null;
    }
  }
  if (!file && job.filename) {
    const name = baseName(job.filename);
    file = (await store.files.forPrinter(job.printer_id)).find((f) => f.local_path && baseName(f.filename) === name) ?? null;
  }
  return { local: file?.local_path ? { ...file, local_path: file.local_path } : null, plate, requirements };
}

/** The plan entries of a job: grams per filament and the slot each is fed from (null: decided at the end from the trays seen). */
export async function planEntries(store: Store, grams: FileGramsCache, job: JobRecord, printerType: string, state: PrinterState | undefined): Promise<PlanEntry[]> {
  const file = await fileOf(store, job);
  let filaments: FilamentGrams[] = [];
  if (file.local) filaments = await grams.get(file.local, file.plate).catch(() => []);
  if (filaments.length === 0 && job.material_estimated_usage) {
    filaments = [{ filament: 1, type: job.material_type, color: job.material_color, grams: job.material_estimated_usage }];
  }
  if (filaments.length === 0) return printerType === 'bambu_lab' ? byRemainDrop(state) : [];
  if (printerType !== 'bambu_lab') {
    // PrusaLink: extruder i prints filament i + 1; a single-tool printer has slot 0.
    return filaments.map((f) => ({ filament: f.filament, slot: f.filament - 1, grams: f.grams, material: f.type, color: f.color }));
  }
  const materials = state?.materials ?? [];
  if (!job.queue_item_id && filaments.length === 1) {
    return [{ ...entryOf(filaments[0]), slot: state?.active_slot ?? null }];
  }
  const facts: FileFacts = {
    format: '3mf',
    printer_model: null,
    nozzle_diameter: null,
    filament_count: Math.max(...filaments.map((f) => f.filament)),
    filaments: filaments.map((f) => ({ id: f.filament, type: f.type, color: f.color })),
    sliced_plates: [],
    model_source: null,
    vendor_family: null,
    bounds: null,
    print_time_s: null,
  };
  const { mapping } = amsMapping(facts, materials, file.requirements);
  const external = materials.some((m) => m.slot === EXTERNAL_SPOOL);
  return filaments.map((f) => {
    const tray = mapping[f.filament - 1] ?? -1;
    return { ...entryOf(f), slot: tray >= 0 ? tray : external ? EXTERNAL_SPOOL : null };
  });
}

/** Bambuddy's fallback: the AMS's remaining percentage of each tagged tray now, to take the drop at the end. */
function byRemainDrop(state: PrinterState | undefined): PlanEntry[] {
  const remain: NonNullable<PlanEntry['remain_start']> = {};
  for (const m of state?.materials ?? []) {
    if (m.remaining_percent !== null) remain[String(m.slot)] = { percent: m.remaining_percent, full_g: m.tray_weight_g ?? 1000 };
  }
  if (Object.keys(remain).length === 0) return [];
  const slot = state?.active_slot ?? null;
  const loaded = state?.materials?.find((m) => m.slot === slot);
  return [{ filament: 1, slot, grams: 0, material: loaded?.type ?? null, color: loaded?.color ?? null, remain_start: remain }];
}

function entryOf(f: FilamentGrams): PlanEntry {
  return { filament: f.filament, slot: null, grams: f.grams, material: f.type, color: f.color };
}
