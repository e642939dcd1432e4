/** What a dispatch sends to its printer: the file's name on the printer and the start with the item's options. */
import { randomInt, randomUUID } from 'node:crypto';
import type { FileRecord } from '../db/repositories/files';
import type { PrinterRecord } from '../db/repositories/printers';
import type { DispatchRecord, QueueItemRecord, QueueVariant } from '../db/repositories/queue';
import { nowIso } from '../util/time';
import type { QueuedStart } from '../printers/driver';

/** The name a queued file gets on the printer: its own name, spaces as "_", nothing a printer's storage refuses. */
export function remoteName(fileName: string, type: PrinterRecord['type']): string {
  const base = (fileName.replace(/\\/g, '/').split('/').pop() ?? 'print').replace(/\s+/g, '_').replace(/[^\w.+-]/g, '_').slice(-120) || 'print';
  if (type === 'bambu_lab') return /\.3mf$/i.test(base) ? base : `${base}.3mf`;
  return base;
}

/** The start of one copy on the printer its dispatch claimed (the AMS mapping computed for that printer). */
export function queuedStart(item: QueueItemRecord, d: DispatchRecord, file: FileRecord & { local_path: string }, mapping: number[]): QueuedStart {
  return {
    localPath: file.local_path,
    remoteName: d.remote_name,
    plate: d.plate ?? item.plate,
    taskId: d.task_id,
    amsMapping: mapping,
    options: startOptions(item),
  };
}

/** The item's start options with their defaults (bed levelling on, the rest off). */
export function startOptions(item: QueueItemRecord): QueuedStart['options'] {
  const o = item.options ?? {};
  return { bed_leveling: o.bed_leveling ?? true, timelapse: o.timelapse ?? false, flow_cali: o.flow_cali ?? false, vibration_cali: o.vibration_cali ?? false };
}

/** A copy's claim of a printer, before it is stored: the variant it prints, a fresh task id, the file's name there. */
export function newDispatch(item: QueueItemRecord, printer: Pick<PrinterRecord, 'id' | 'type'>, fileName: string, variant: QueueVariant, attempt: number): DispatchRecord {
  const now = nowIso();
  return {
    id: randomUUID().replace(/-/g, '').slice(0, 16),
    item_id: item.id,
    printer_id: printer.id,
    job_id: null,
    state: 'claimed',
    attempt,
    error: null,
    remote_name: remoteName(fileName, printer.type),
    // A fresh decimal id below 2^31-1 for every start ("0" resumes an old print, larger ids stall a P1S).
    task_id: String(randomInt(100_000, 2_147_483_647)),
    baseline_job_id: null,
    start_sent_at: null,
    created_at: now,
    updated_at: now,
    file_id: variant.file_id,
    plate: variant.plate,
  };
}
