/** What a dispatch sends to its printer: the file's name on the printer and the start with the item's options. */
import type { FileRecord } from '../db/repositories/files';
import type { PrinterRecord } from '../db/repositories/printers';
import type { DispatchRecord, QueueItemRecord } from '../db/repositories/queue';
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
    plate: item.plate,
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
