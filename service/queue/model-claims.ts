/**
 * Every place a print file names the printer it was sliced for, and which one
 * decides. A file whose slicer profile was detached has an empty
 * `printer_model` but still says its model elsewhere; a guess ("fits any
 * PrusaLink printer") sends it to a printer that refuses it. Strongest first:
 *  1. the firmware's own model check, `M862.3 P "MK4S"` (the printer enforces it);
 *  2. the plate's `printer_model_id` (Bambu slice_info: what the G-code was sliced with);
 *  3. `printer_model`, then a config `printer_model_id`;
 *  4. the `PRINTER_MODEL_...` keyword of `printer_notes` (PrusaSlicer profiles);
 *  5. a known model named in `printer_settings_id` (the profile's name).
 * `PRINTER_VENDOR_...` in the notes names the family when no model is named.
 */
import { BAMBU_PRINTER_MODELS } from '../preview/metadata';
import type { FirmwareChecks } from './firmware-checks';
import { modelInText } from './models';
import { familyOfVendor } from './printer-families';

export type ModelSource = 'firmware_check' | 'plate_printer_model_id' | 'printer_model' | 'printer_model_id' | 'printer_notes' | 'printer_settings_id';

export interface ModelClaim {
  /** The model as the file names it ("MK4S", "Bambu Lab X1 Carbon"); null when no place names one. */
  model: string | null;
  source: ModelSource | null;
  /** The printer family the file's vendor keyword names (prusa_core), when stated. */
  vendor_family: string | null;
}

/** Words people read in a waiting reason: where the model was found. */
export const SOURCE_WORDS: Record<ModelSource, string> = {
  firmware_check: 'its M862.3 model check',
  plate_printer_model_id: "the plate's printer_model_id",
  printer_model: 'printer_model',
  printer_model_id: 'printer_model_id',
  printer_notes: 'printer_notes',
  printer_settings_id: 'printer_settings_id',
};

const bambuName = (id: string) => BAMBU_PRINTER_MODELS[id.trim()] ?? id.trim();
// printer_notes is stored with its line breaks as the two characters "\n".
const NOTES_MODEL = /PRINTER_MODEL_([A-Z0-9.]+)/i;
const NOTES_VENDOR = /PRINTER_VENDOR_([A-Z0-9]+)/i;

/** The claim that decides, from lower-cased slicer keys, the firmware checks and the plate's model id. */
export function modelClaim(raw: Record<string, string>, checks: FirmwareChecks | null, plateModelId?: string | null): ModelClaim {
  const notes = (raw.printer_notes ?? '').slice(0, 10_000);
  const vendor = NOTES_VENDOR.exec(notes)?.[1] ?? (raw.printer_vendor?.trim() || null);
  const vendor_family = vendor ? familyOfVendor(vendor) : null;
  const candidates: [ModelSource, string | null | undefined][] = [
    ['firmware_check', checks?.model],
    ['plate_printer_model_id', plateModelId ? bambuName(plateModelId) : null],
    ['printer_model', raw.printer_model],
    ['printer_model_id', raw.printer_model_id ? bambuName(raw.printer_model_id) : null],
    ['printer_notes', NOTES_MODEL.exec(notes)?.[1]],
    ['printer_settings_id', modelInText(raw.printer_settings_id)],
  ];
  for (const [source, value] of candidates) {
    const model = value?.trim().slice(0, 100);
    if (model) return { model, source, vendor_family };
  }
  return { model: null, source: null, vendor_family };
}
