/**
 * Whether two PrinterStates show the same thing, field by field. Drivers call
 * it on every report to decide whether anything changed; it replaces a
 * JSON.stringify of the whole state per report (the materials of four AMS
 * units alone are a kilobyte), and objects a driver kept from the last state
 * compare by identity first.
 */
import type { PrinterMaterial, PrinterState, PrintProgress } from './driver';

function sameJob(a: PrintProgress | null, b: PrintProgress | null): boolean {
  if (a === b) return true;
  if (!a || !b) return false;
  return (
    a.name === b.name &&
    a.file === b.file &&
    a.display_name === b.display_name &&
    a.progress === b.progress &&
    a.layer_current === b.layer_current &&
    a.layer_total === b.layer_total &&
    a.remaining_seconds === b.remaining_seconds &&
    a.started_at === b.started_at &&
    a.printer_job_id === b.printer_job_id &&
    a.time_printing === b.time_printing
  );
}

export function sameMaterials(a: PrinterMaterial[] | undefined, b: PrinterMaterial[] | undefined): boolean {
  if (a === b) return true;
  if (!a || !b || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    const y = b[i];
    if (x.slot !== y.slot || x.type !== y.type || x.color !== y.color || x.remaining_percent !== y.remaining_percent) return false;
  }
  return true;
}

function sameCapabilities(a: PrinterState['capabilities'], b: PrinterState['capabilities']): boolean {
  if (a === b) return true;
  if (!a || !b) return false;
  return a.has_camera === b.has_camera && a.has_ams === b.has_ams && a.supports_remote_control === b.supports_remote_control;
}

export function samePrinterState(a: PrinterState | null, b: PrinterState | null): boolean {
  if (a === b) return true;
  if (!a || !b) return false;
  const ta = a.temperatures;
  const tb = b.temperatures;
  return (
    ta.nozzle === tb.nozzle &&
    ta.bed === tb.bed &&
    ta.chamber === tb.chamber &&
    ta.nozzle_target === tb.nozzle_target &&
    ta.bed_target === tb.bed_target &&
    sameApartFromTemperatures(a, b)
  );
}

/** Whether two states show the same but for their temperatures (the Fleet's telemetry: listeners that ignore it are spared). */
export function sameApartFromTemperatures(a: PrinterState, b: PrinterState): boolean {
  return (
    a.state === b.state &&
    a.raw_state === b.raw_state &&
    sameJob(a.job, b.job) &&
    (a.error === b.error || (a.error?.code === b.error?.code && a.error?.message === b.error?.message)) &&
    a.firmware_version === b.firmware_version &&
    a.model === b.model &&
    a.nozzle_diameter === b.nozzle_diameter &&
    (a.active_slot ?? null) === (b.active_slot ?? null) &&
    (a.camera_url ?? null) === (b.camera_url ?? null) &&
    // A driver keeps the same record object while its history says the same (klipper/history.ts).
    (a.ended_print ?? null) === (b.ended_print ?? null) &&
    sameCapabilities(a.capabilities, b.capabilities) &&
    sameMaterials(a.materials, b.materials) &&
    // Drivers keep the same attention list while the printer says the same (bambu/state.ts AttentionMemo, prusa/state.ts).
    (a.attention ?? null) === (b.attention ?? null)
  );
}

/** The same filaments in the same slots (what is left of them aside: it changes all through a print). */
export function sameLoadedMaterials(a: PrinterMaterial[] | undefined, b: PrinterMaterial[] | undefined): boolean {
  if (a === b) return true;
  if (!a || !b || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    if (a[i].slot !== b[i].slot || a[i].type !== b[i].type || a[i].color !== b[i].color) return false;
  }
  return true;
}
