/**
 * The `project_file` command that starts a queued 3MF on a Bambu printer,
 * with the field types real firmware needs (QUEUE.md): the three ids as fresh
 * decimal strings below 2^31-1, calibration flags as JSON booleans,
 * `auto_bed_leveling` as an integer, `use_ams` a boolean that is true only
 * when the mapping uses an AMS tray, and the mapping computed for this printer.
 */
import { DriverError, type QueuedStart, type QueuedStartHooks } from '../driver';
import { usesFtpUrl } from './commands';
import type { BambuFtp } from './ftp';

/** The fields of the `print` object (the driver adds sequence_id and command). */
export function projectFileFields(start: QueuedStart, model: string | null): Record<string, unknown> {
  const name = start.remoteName;
  const mapping = start.amsMapping.length ? start.amsMapping : [-1];
  const usesAms = mapping.some((slot) => slot >= 0);
  return {
    param: `Metadata/plate_${start.plate}.gcode`,
    url: usesFtpUrl(model) ? `ftp:///${name}` : `file:///sdcard/${name}`,
    file: name,
    md5: '',
    bed_type: 'auto',
    cfg: '0',
    profile_id: '0',
    project_id: start.taskId,
    subtask_id: start.taskId,
    task_id: start.taskId,
    subtask_name: name.replace(/(\.gcode)?\.3mf$/i, ''),
    timelapse: start.options.timelapse,
    bed_leveling: start.options.bed_leveling,
    auto_bed_leveling: start.options.bed_leveling ? 1 : 0,
    flow_cali: start.options.flow_cali,
    vibration_cali: start.options.vibration_cali,
    layer_inspect: false,
    use_ams: usesAms,
    ams_mapping: mapping,
    ams_mapping2: mapping.map((slot) => (slot < 0 ? { ams_id: 255, slot_id: 255 } : slot >= 128 ? { ams_id: slot, slot_id: 0 } : { ams_id: Math.floor(slot / 4), slot_id: slot % 4 })),
  };
}

export interface QueuedStartDeps {
  ftp: BambuFtp;
  model(): string | null;
  /** Publishes `project_file` with these fields (QoS 1) and waits for the printer's reply. */
  command(fields: Record<string, unknown>): Promise<void>;
}

/**
 * Uploads the file to the card root (one upload per printer: the FTP queue serialises them), then sends the
 * start. A refusal by the printer rejects (REJECTED); a missing reply does not: its state decides.
 */
export async function sendQueuedStart(deps: QueuedStartDeps, start: QueuedStart, hooks: QueuedStartHooks): Promise<void> {
  await deps.ftp.upload(start.localPath, `/${start.remoteName}`, hooks.onProgress);
  await hooks.beforeStart();
  await deps.command(projectFileFields(start, deps.model())).catch((err: unknown) => {
    if (!(err instanceof DriverError && err.code === 'TIMEOUT')) throw err;
  });
}
