/** What the Bambu driver publishes to start a print: the `project_file` body for a .3mf (PROTOCOLS.md §1). */
import type { Json } from './values';

/** pybambu's rule: file:///sdcard/ URLs for X1/P1/A1, ftp:/// for H2 and newer. */
export function usesFtpUrl(model: string | null): boolean {
  return !!model && !/^(X1|P1|A1)/i.test(model);
}

/** Fields of `project_file` for the .3mf at `absolute` (plate 1, the AMS when the printer has one, slot mapping [0]). */
export function projectFileFields(absolute: string, model: string | null, useAms: boolean): Json {
  const name = absolute.slice(absolute.lastIndexOf('/') + 1);
  const relative = absolute.slice(1);
  return {
    param: 'Metadata/plate_1.gcode',
    url: usesFtpUrl(model) ? `ftp:///${relative}` : `file:///sdcard/${relative}`,
    subtask_name: name.replace(/(\.gcode)?\.3mf$/i, ''),
    md5: '',
    file: '',
    project_id: '0',
    profile_id: '0',
    task_id: '0',
    subtask_id: '0',
    timelapse: false,
    bed_type: 'auto',
    bed_leveling: true,
    flow_cali: true,
    vibration_cali: true,
    layer_inspect: true,
    use_ams: useAms,
    ams_mapping: [0],
  };
}
