/**
 * Can this printer print this queue item, and with which trays? Decided from
 * what the file says (FileFacts) and what the printer reports (model, nozzle,
 * loaded materials), narrowed by the item's target and requirements. Pure
 * functions: the dispatcher feeds them, the unit tests too.
 */
import type { PrinterMaterial } from '../printers/driver';
import type { QueueRequirements, QueueTarget } from '../db/repositories/queue';
import type { PrinterRecord } from '../db/repositories/printers';
import { misfit } from './file-bounds';
import type { FileFacts } from './file-facts';
import { SOURCE_WORDS } from './model-claims';
import { looselySameModel, modelSpec, sameModel, shortModel } from './models';
import { familyOf } from './printer-families';

export const EXTERNAL_SPOOL = 254;

/** A printer as compatibility sees it: its configuration and what it reports now. */
export interface PrinterFacts {
  id: string;
  name: string;
  type: PrinterRecord['type'];
  /** Reported model, else the configured one. */
  model: string | null;
  nozzle_diameter: number | null;
  /** Null when the printer does not report its filament (some PrusaLink firmware). */
  materials: PrinterMaterial[] | null;
}

/** Why a printer cannot take an item, from the farm-wide reason (no such model) to the printer-specific one. */
export type Mismatch =
  | { kind: 'target'; reason: string }
  | { kind: 'format'; reason: string }
  | { kind: 'unnamed'; reason: string }
  | { kind: 'model'; reason: string }
  | { kind: 'size'; reason: string }
  | { kind: 'nozzle'; reason: string }
  | { kind: 'material'; reason: string };

export type Compatibility = { ok: true; ams_mapping: number[] } | { ok: false; mismatch: Mismatch };

export interface ItemNeeds {
  target: QueueTarget | null;
  requirements: QueueRequirements | null;
}

const sameColor = (a: string | null | undefined, b: string | null | undefined) => !!a && !!b && a.toUpperCase() === b.toUpperCase();
const sameType = (a: string | null | undefined, b: string | null | undefined) => !!a && !!b && a.trim().toUpperCase() === b.trim().toUpperCase();

/**
 * The tray for each filament of the file, for THIS printer's trays: one integer per filament slot of the file,
 * the global tray number for each used filament (same type, the same colour preferred), -1 for unused ones and
 * for the external spool (QUEUE.md). Null when a used filament has no tray: the print would use the wrong filament.
 * A requirement (material, colour) replaces what the file says for every used filament ("print this in PETG").
 */
export function amsMapping(facts: FileFacts, materials: readonly PrinterMaterial[], requirements: QueueRequirements | null): { mapping: number[]; missing: string | null } {
  const count = Math.max(facts.filament_count, ...facts.filaments.map((f) => f.id), 1);
  const mapping = new Array<number>(count).fill(-1);
  const used = facts.filaments.length ? facts.filaments : [{ id: 1, type: null, color: null }];
  for (const filament of used) {
    const type = requirements?.material ?? filament.type;
    const wanted = requirements?.color ?? (requirements?.material ? null : filament.color);
    // A file that names no filament type prints with whatever is loaded: the first tray.
    const candidates = type ? materials.filter((m) => sameType(m.type, type)) : [...materials];
    const pick = candidates.find((m) => sameColor(m.color, wanted)) ?? (requirements?.color ? undefined : candidates[0]);
    if (!pick) return { mapping, missing: type ? `${type}${requirements?.color ? ` ${requirements.color}` : ''}` : 'filament' };
    mapping[filament.id - 1] = pick.slot === EXTERNAL_SPOOL ? -1 : pick.slot;
  }
  return { mapping, missing: null };
}

/**
 * A family whose printers report their model ('reported'): the model the file claims against it by model key,
 * the file's vendor keyword against the family; never a guess: a file that names no model goes only where the
 * operator sent it (by printer id or model).
 */
function reportedModelRefusal(facts: FileFacts, t: QueueTarget | null, printer: PrinterFacts): Mismatch | null {
  if (facts.vendor_family && facts.vendor_family !== printer.type) return { kind: 'model', reason: 'sliced for another make of printer' };
  if (facts.printer_model) return sameModel(facts.printer_model, printer.model) ? null : { kind: 'model', reason: `sliced for ${facts.printer_model}` };
  if (!t?.printer_ids?.length && !t?.models?.length) return { kind: 'unnamed', reason: 'the file names no printer model' };
  return null;
}

/**
 * A family whose model is the operator's free text ('configured', Klipper): the file's claimed model and its
 * printer profile against the configured model, loosely. A file naming neither goes only to a printer the item
 * targets, by id, type or model (a target that does not match was refused before). The vendor keyword is not
 * checked: a Prusa running Klipper prints PrusaSlicer files for it.
 */
function configuredModelRefusal(facts: FileFacts, t: QueueTarget | null, printer: PrinterFacts): Mismatch | null {
  const named = [facts.printer_model, facts.printer_profile].filter((m): m is string => !!m);
  const targeted = !!(t?.printer_ids?.includes(printer.id) || t?.printer_type === printer.type || t?.models?.length);
  if (!named.length) return targeted ? null : { kind: 'model', reason: 'the file names no printer model: it goes only to a printer the item targets' };
  return named.some((m) => looselySameModel(m, printer.model)) ? null : { kind: 'model', reason: `sliced for ${named[named.length - 1]}` };
}

/** Whether `printer` can print the item's file now (materials as loaded now), and the tray mapping it would use. */
export function checkPrinter(facts: FileFacts, item: ItemNeeds, printer: PrinterFacts): Compatibility {
  const fail = (kind: Mismatch['kind'], reason: string): Compatibility => ({ ok: false, mismatch: { kind, reason } as Mismatch });
  const t = item.target;
  if (t?.printer_ids?.length && !t.printer_ids.includes(printer.id)) return fail('target', 'not a target printer');
  if (t?.printer_type && t.printer_type !== printer.type) return fail('target', `not a ${t.printer_type} printer`);
  if (t?.models?.length && !t.models.some((m) => sameModel(m, printer.model))) return fail('target', `not one of the target models`);

  const family = familyOf(printer.type);
  if (!family) return fail('format', `the queue cannot start prints on ${printer.type} printers`);
  if (!family.formats.includes(facts.format)) return fail('format', `${family.label} printers print ${family.formats.map((f) => `.${f}`).join(' and ')} files`);
  const modelRefusal = family.modelMatch === 'configured' ? configuredModelRefusal(facts, t, printer) : reportedModelRefusal(facts, t, printer);
  if (modelRefusal) return { ok: false, mismatch: modelRefusal };
  const spec = modelSpec(printer.model);
  const tooBig = spec ? misfit(facts.bounds, spec.bed, spec.height) : null;
  if (tooBig) return fail('size', `${tooBig} (${printer.name})`);

  const nozzle = item.requirements?.nozzle_diameter ?? facts.nozzle_diameter;
  if (nozzle !== null && nozzle !== undefined) {
    if (printer.nozzle_diameter !== null && Math.abs(printer.nozzle_diameter - nozzle) > 0.001) {
      return fail('nozzle', `${printer.name} has a ${printer.nozzle_diameter} mm nozzle, the file needs ${nozzle} mm`);
    }
    if (printer.nozzle_diameter === null && item.requirements?.nozzle_diameter !== undefined) return fail('nozzle', `${printer.name} does not report its nozzle diameter`);
  }

  const needsMaterial = item.requirements?.material !== undefined || item.requirements?.color !== undefined;
  if (printer.materials === null) {
    // Filament not reported: only an explicit requirement can't be checked.
    if (needsMaterial) return fail('material', `${printer.name} does not report its loaded filament`);
    return { ok: true, ams_mapping: [] };
  }
  const { mapping, missing } = amsMapping(facts, printer.materials, item.requirements);
  if (missing) return fail('material', `${missing} not loaded on ${printer.name}`);
  return { ok: true, ams_mapping: family.trayMapping ? mapping : [] };
}

/**
 * The waiting reason when no printer could take the item: the farm-wide reason when no printer passes a
 * check (the model named as people know it), else the printer-specific reasons of the closest printers.
 */
export function mismatchReason(facts: FileFacts, results: { printer: PrinterFacts; mismatch: Mismatch }[], farmSize: number): string {
  if (farmSize === 0) return 'no printers in the farm';
  const order: Mismatch['kind'][] = ['target', 'format', 'unnamed', 'model', 'size', 'nozzle', 'material'];
  // The furthest check any printer reached decides which reason to give.
  const furthest = Math.max(...results.map((r) => order.indexOf(r.mismatch.kind)));
  const at = results.filter((r) => order.indexOf(r.mismatch.kind) === furthest);
  switch (order[furthest]) {
    case 'target':
      return 'no printer matches the target';
    case 'format':
      return `no printer in the farm prints ${facts.format === 'other' ? 'this kind of' : `.${facts.format}`} files`;
    case 'unnamed':
      return 'the file names no printer model; it prints only on printers the item targets (target.printer_ids or target.models)';
    case 'model': {
      if (!facts.printer_model) {
        if (facts.vendor_family) return 'sliced for another make of printer; no such printer in the farm';
        // Klipper matches the printer profile too: name it when it is all the file says.
        if (facts.printer_profile) return `sliced for ${facts.printer_profile}; no ${shortModel(facts.printer_profile)} in the farm`;
        // A file that names no model (Klipper: goes only where targeted) has no model to name: the printers' reasons.
        return [...new Set(at.map((r) => r.mismatch.reason))].slice(0, 3).join('; ');
      }
      const where = facts.model_source && facts.model_source !== 'printer_model' && facts.model_source !== 'plate_printer_model_id' ? ` (${SOURCE_WORDS[facts.model_source]})` : '';
      return `sliced for ${facts.printer_model}${where}; no ${shortModel(facts.printer_model)} in the farm`;
    }
    default: {
      const reasons = [...new Set(at.map((r) => r.mismatch.reason))];
      return reasons.slice(0, 3).join('; ') + (reasons.length > 3 ? `; and ${reasons.length - 3} more` : '');
    }
  }
}

