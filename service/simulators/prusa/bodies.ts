/**
 * The printer-API answers of the simulated PrusaLink printer that describe
 * it: /api/version and /api/v1/info (model in `text` as Buddy writes it,
 * nozzle diameter), /api/v1/status (Buddy's fields, `printer.material` included;
 * with the `partial_reports` fault every answer leaves out a different half
 * of the optional fields), /api/v1/job and /api/v1/storage.
 */
import { refs } from './file-routes';
import type { SimStorage } from './files';
import { round1 } from './http-util';
import type { SimPrinter } from './printer';
import type { PrusaSimulator } from './simulator';

/** Filament type names as Buddy shows them; "---" is what it reports with nothing loaded. */
const NO_FILAMENT = '---';

/** What /api/version and /api/v1/info tell. */
export interface PrinterFacts {
  name: string;
  model: string;
  nozzleDiameter: number;
  httpPort: number;
  serial?: string;
  mmu?: boolean;
  camera?: boolean;
}

export function versionBody(p: PrinterFacts) {
  return {
    api: '2.0.0',
    server: '2.1.2',
    version: '2.1.2',
    // Buddy names its model here ("PrusaLink MINI" on a MINI).
    text: `PrusaLink ${p.model}`,
    hostname: hostnameOf(p.model),
    firmware: '6.2.4+8808',
    sdk: '2.1.2',
    nozzle_diameter: p.nozzleDiameter,
    capabilities: { 'upload-by-put': true },
  };
}

/** Buddy's default hostname for a model: "prusa-mk4s", "prusa-core-one". */
export function hostnameOf(model: string): string {
  return `prusa-${model.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
}

export function infoBody(p: PrinterFacts) {
  return {
    name: p.name,
    location: 'Print farm',
    farm_mode: false,
    nozzle_diameter: p.nozzleDiameter,
    min_extrusion_temp: 170,
    serial: p.serial ?? `SIM${String(p.httpPort).padStart(5, '0')}X004XC34242`,
    hostname: hostnameOf(p.model),
    port: '',
    mmu: p.mmu ?? false,
    sd_ready: false,
    active_camera: p.camera ?? false,
  };
}

export function statusBody(sim: PrusaSimulator, turn: () => number): Record<string, unknown> {
  const p = sim.printer;
  const job = p.job;
  const printer: Record<string, unknown> = {
    state: p.state,
    temp_nozzle: round1(p.nozzle),
    target_nozzle: p.targetNozzle,
    temp_bed: round1(p.bed),
    target_bed: p.targetBed,
    material: sim.materials[0]?.type ?? NO_FILAMENT,
    axis_z: p.axisZ(),
    flow: 100,
    speed: 100,
    fan_hotend: p.targetNozzle > 0 || p.nozzle > 50 ? 7000 : 0,
    fan_print: job?.state === 'PRINTING' && job.heated ? 5200 : 0,
  };
  if (job?.state !== 'PRINTING') Object.assign(printer, { axis_x: 241, axis_y: 170 });
  if (p.message && (p.state === 'ERROR' || p.state === 'ATTENTION')) printer.status_printer = { ok: false, message: p.message };
  const body: Record<string, unknown> = { printer };
  if (job) body.job = { id: job.id, progress: p.progress(), time_remaining: p.timeRemaining(), time_printing: p.timePrinting() };
  body.storage = { path: `/${sim.storage.name}/`, name: sim.storage.name, read_only: false };
  if (!sim.faults.partial_reports) return body;

  // Partial reports: every answer leaves out a different half of the optional fields.
  const odd = turn() % 2 === 1;
  const partial: Record<string, unknown> = { printer: { state: p.state } };
  const pr = partial.printer as Record<string, unknown>;
  if (odd) {
    for (const k of ['temp_nozzle', 'target_nozzle', 'temp_bed', 'target_bed']) pr[k] = printer[k];
  } else {
    for (const k of ['axis_z', 'flow', 'speed']) pr[k] = printer[k];
    if (job) partial.job = body.job;
  }
  return partial;
}

export function jobBody(printer: SimPrinter, storage: SimStorage) {
  const p = printer;
  const job = p.job;
  if (!job) return null;
  const f = job.file;
  return {
    id: job.id,
    state: job.state,
    progress: p.progress(),
    time_remaining: p.timeRemaining(),
    time_printing: p.timePrinting(),
    inaccurate_estimates: !job.heated,
    file: {
      name: f.sfn,
      display_name: f.lfn,
      path: f.parent ? storage.pathOf(f.parent) : `/${storage.name}`,
      display_path: f.parent ? `/${storage.name}${storage.longPathOf(f.parent) ? '/' + storage.longPathOf(f.parent) : ''}` : undefined,
      size: f.data?.length ?? 0,
      m_timestamp: f.mtime,
      refs: refs(storage, f),
    },
  };
}

export function storageBody(storage: SimStorage) {
  const used = storage.usedBytes();
  return {
    storage_list: [
      {
        name: storage.name,
        type: 'USB',
        path: `/${storage.name}`,
        print_files: used,
        system_files: 0,
        free_space: storage.totalSpace - used,
        total_space: storage.totalSpace,
        available: true,
        read_only: false,
      },
    ],
  };
}
