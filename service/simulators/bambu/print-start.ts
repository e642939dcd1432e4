/**
 * What the simulated Bambu printer makes of a `project_file` command
 * (QUEUE.md "Starting a print on a Bambu Lab printer"), quirks included:
 *
 * - the file must be on the card and be a readable 3MF with the plate named
 *   in `param` (`Metadata/plate_N.gcode`); otherwise the command is answered
 *   `result: "fail"` and nothing starts;
 * - `task_id`/`subtask_id`/`project_id` must be decimal strings below 2^31-1:
 *   anything else is acknowledged and then nothing happens (a P1S stays IDLE);
 * - calibration flags and `use_ams` must be JSON booleans: anything else is
 *   ignored (flags fall back to false) and listed in `ignored_fields`;
 * - `ams_mapping` needs one entry per filament of the project (shorter is
 *   tolerated as long as every filament the plate uses has one); each filament
 *   the plate uses must map to a loaded tray of an attached AMS, or -1 for the
 *   external spool (254 there too, except on an H2D where it fails with
 *   0700_8012). A wrong length, an empty or missing tray, or the external
 *   spool empty: the printer hangs in PREPARE ("preparing AMS") for ever.
 *   A tray with another material than the file wants is used anyway (the
 *   printer trusts the mapping): `trays` in `last_start` shows what went where.
 *
 * The busy case (a start while PREPARE/RUNNING/PAUSE) is the simulator's: it
 * cancels the running print before this is even asked.
 */
import { strFromU8, unzipSync } from 'fflate';
import { plateSection, type SimFile, type SimStorage } from './files';
import { EXTERNAL_SPOOL, type SimMaterials } from './materials';
import type { Json, StartOptions } from './printer';

/** print_error 0x07008012: an H2D given 254/255 in ams_mapping. */
export const H2D_EXTERNAL_MAPPING_PRINT_ERROR = 0x07008012;

const MAX_ID = 2 ** 31 - 1;
const CALIBRATION_FLAGS = ['timelapse', 'bed_leveling', 'flow_cali', 'vibration_cali', 'layer_inspect'] as const;

/** A filament of the file (slice_info.config `<filament id type color>` of the plate). */
export interface FileFilament {
  id: number;
  type: string;
  color: string;
}

/** Where one filament of the file is fed from, as the printer resolved the mapping. */
export interface TrayUse {
  filament: number;
  type: string;
  color: string;
  /** Global tray number (254 = external spool), null when it could not be resolved. */
  slot: number | null;
  loaded_type: string | null;
  loaded_color: string | null;
}

/** What `last_start` in GET /state shows about an accepted start. */
export interface StartRecord {
  source: 'mqtt' | 'screen';
  file: string;
  plate: number;
  ams_mapping: number[] | null;
  use_ams: boolean | null;
  subtask_id: string;
  task_id: string;
  project_id: string;
  subtask_name: string;
  flags: Record<string, boolean>;
  ignored_fields: string[];
  trays: TrayUse[];
  /** Why the start hangs in PREPARE, if it does. */
  stalled: string | null;
  at: string;
}

export type StartDecision =
  | { kind: 'reject'; reason: string }
  | { kind: 'stuck'; reason: string }
  | { kind: 'start'; file: SimFile; options: StartOptions; record: Omit<StartRecord, 'at' | 'source'> };

interface ProjectInfo {
  plates: number[];
  filaments: FileFilament[];
  /** The project's filament count: ams_mapping may not be longer (at least 1). */
  mappingLength: number;
  /** The highest filament id the plate uses: ams_mapping may not be shorter. */
  usedLength: number;
}

/** Reads what the printer checks in a 3MF; null when it is not a readable 3MF (the printer's "verify failed"). */
export function readProject(file: SimFile, plate: number): ProjectInfo | null {
  const plates: number[] = [];
  let entries: Record<string, Uint8Array>;
  try {
    entries = unzipSync(new Uint8Array(file.data), {
      filter: (f) => {
        const m = /^Metadata\/plate_(\d+)\.gcode$/.exec(f.name);
        if (m) plates.push(Number(m[1]));
        return f.name === 'Metadata/slice_info.config' || f.name === 'Metadata/project_settings.config';
      },
    });
  } catch {
    return null;
  }
  const info = entries['Metadata/slice_info.config'];
  const section = info ? plateSection(strFromU8(info), plate) : null;
  const filaments: FileFilament[] = [];
  for (const f of section?.filaments ?? []) {
    const id = Number(f.id);
    if (Number.isInteger(id) && id > 0 && id <= 64) filaments.push({ id, type: f.type ?? '', color: f.color ?? '' });
  }
  let projectCount = 0;
  const settings = entries['Metadata/project_settings.config'];
  if (settings) {
    try {
      const parsed = JSON.parse(strFromU8(settings)) as Json;
      if (Array.isArray(parsed.filament_type)) projectCount = parsed.filament_type.length;
    } catch {
      // Not JSON: fall back to the filament ids.
    }
  }
  const maxId = filaments.reduce((n, f) => Math.max(n, f.id), 0);
  return { plates: plates.sort((a, b) => a - b), filaments, mappingLength: Math.max(projectCount, maxId, 1), usedLength: maxId };
}

const isDecimalId = (v: unknown): v is string => typeof v === 'string' && /^\d{1,10}$/.test(v) && Number(v) <= MAX_ID;

const isH2 = (model: string) => /^H2/i.test(model);

export interface StartContext {
  storage: SimStorage;
  materials: SimMaterials;
  model: string;
}

/** Decides what a `project_file` request does on this printer (see the file comment). */
export function decideProjectFile(request: Json, ctx: StartContext): StartDecision {
  const name = String(request.url || request.file || request.param || '');
  const file = ctx.storage.find(name);
  if (!file) return { kind: 'reject', reason: `file not found: ${name}` };
  if (!/\.3mf$/i.test(file.path)) return { kind: 'reject', reason: `project_file cannot print ${file.path}` };
  const param = typeof request.param === 'string' ? request.param : '';
  const plateMatch = /^Metadata\/plate_(\d{1,3})\.gcode$/.exec(param);
  if (!plateMatch) return { kind: 'reject', reason: `param must name a plate ("Metadata/plate_1.gcode"), got "${param.slice(0, 64)}"` };
  const plate = Number(plateMatch[1]);
  const project = readProject(file, plate);
  if (!project) return { kind: 'reject', reason: `verify failed: ${file.path} is not a readable 3MF` };
  if (!project.plates.includes(plate)) return { kind: 'reject', reason: `verify failed: ${param} is not in ${file.path}` };

  for (const key of ['task_id', 'subtask_id', 'project_id'] as const) {
    if (request[key] !== undefined && !isDecimalId(request[key])) return { kind: 'stuck', reason: `${key} is not a decimal string below 2^31-1` };
  }

  const ignored: string[] = [];
  const flags: Record<string, boolean> = {};
  for (const flag of CALIBRATION_FLAGS) {
    const value = flag === 'bed_leveling' ? (request.bed_leveling ?? request.bed_levelling) : request[flag];
    if (value === undefined) continue;
    if (typeof value === 'boolean') flags[flag] = value;
    else {
      ignored.push(flag);
      flags[flag] = false;
    }
  }
  let useAms = false;
  if (request.use_ams !== undefined) {
    if (typeof request.use_ams === 'boolean') useAms = request.use_ams;
    else {
      ignored.push('use_ams');
      useAms = Boolean(request.use_ams);
    }
  }

  const rawMapping = request.ams_mapping;
  const mapping = Array.isArray(rawMapping) && rawMapping.length <= 64 && rawMapping.every((n) => Number.isInteger(n)) ? (rawMapping as number[]) : null;
  const trays: TrayUse[] = [];
  let stall: string | null = null;
  let failCode: number | null = null;
  const stallOnce = (why: string) => (stall ??= `preparing AMS: ${why}`);
  if (useAms && !mapping) stallOnce('ams_mapping is not a list of tray numbers');
  if (useAms && mapping && (mapping.length < project.usedLength || mapping.length > project.mappingLength))
    stallOnce(`ams_mapping has ${mapping.length} entries, the file has ${project.mappingLength} filaments`);

  for (const filament of project.filaments) {
    let slot: number | null = EXTERNAL_SPOOL;
    if (useAms && mapping) {
      const entry = mapping[filament.id - 1];
      if (entry === undefined) slot = null;
      else if (entry === -1) slot = EXTERNAL_SPOOL;
      else if (entry === EXTERNAL_SPOOL || entry === 255) {
        if (isH2(ctx.model)) failCode = H2D_EXTERNAL_MAPPING_PRINT_ERROR;
        slot = entry === EXTERNAL_SPOOL ? EXTERNAL_SPOOL : null;
      } else if (ctx.materials.trayExists(entry)) slot = entry;
      else slot = null;
      if (slot === null) stallOnce(`filament ${filament.id} maps to ${entry ?? 'nothing'}, no such tray`);
    }
    const loaded = slot === null ? null : ctx.materials.at(slot);
    if (slot !== null && !loaded && failCode === null) stallOnce(slot === EXTERNAL_SPOOL ? `filament ${filament.id}: the external spool is empty` : `filament ${filament.id}: tray ${slot} is empty`);
    trays.push({ filament: filament.id, type: filament.type, color: filament.color, slot, loaded_type: loaded?.type ?? null, loaded_color: loaded?.color ?? null });
  }

  const ids = {
    task: request.task_id as string | undefined,
    subtask: request.subtask_id as string | undefined,
    project: request.project_id as string | undefined,
  };
  // "0" is what a client sends when it has no id of its own: the printer makes one up.
  const given = (id: string | undefined) => (id && Number(id) > 0 ? id : undefined);
  const subtaskName = typeof request.subtask_name === 'string' && request.subtask_name.trim() ? request.subtask_name.slice(0, 256) : undefined;
  const options: StartOptions = {
    subtaskName,
    plate,
    taskId: given(ids.task) ?? given(ids.subtask),
    subtaskId: given(ids.subtask) ?? given(ids.task),
    projectId: given(ids.project),
    feed: trays.find((t) => t.slot !== null)?.slot ?? null,
    stall,
    failCode,
  };
  return {
    kind: 'start',
    file,
    options,
    record: {
      file: file.path,
      plate,
      ams_mapping: mapping,
      use_ams: request.use_ams === undefined ? null : useAms,
      subtask_id: ids.subtask ?? '',
      task_id: ids.task ?? '',
      project_id: ids.project ?? '',
      subtask_name: subtaskName ?? '',
      flags,
      ignored_fields: ignored,
      trays,
      stalled: stall,
    },
  };
}

/** The record of a start that has no project_file behind it (gcode_file, the screen): what the printer reports. */
export function plainStartRecord(source: 'mqtt' | 'screen', file: SimFile, snapshot: Json): StartRecord {
  return {
    source,
    file: file.path,
    plate: 1,
    ams_mapping: null,
    use_ams: null,
    subtask_id: String(snapshot.subtask_id),
    task_id: String(snapshot.task_id),
    project_id: String(snapshot.project_id),
    subtask_name: String(snapshot.subtask_name),
    flags: {},
    ignored_fields: [],
    trays: [],
    stalled: null,
    at: new Date().toISOString(),
  };
}
