/**
 * What a real X1C with four AMS units puts in a full `push_status` beyond
 * what the simulator models: the camera, network, upload and AI-monitoring
 * blocks and every tray field the firmware sends. The service reads none of
 * it (pickUsedKeys drops it), but it parses every byte, so the fleet bench
 * (`--report full|mixed`) sends reports of a real printer's size, 6-10 KB,
 * instead of the simulator's lean 2 KB.
 */
import type { Json } from './printer';

/** Tray fields a real AMS reports that the simulator's trays leave out (values as a real X1C sends them). */
const TRAY_EXTRA: Json = {
  tray_id_name: 'A00-W1',
  tray_temp: '55',
  tray_time: '8',
  bed_temp_type: '1',
  bed_temp: '35',
  xcam_info: '803E803E803E803EE8030000AE4200000000000000000000',
  tray_uuid: '7A1B5C3D9E8F4A2B1C0D9E8F7A6B5C4D',
  k: 0.02,
  n: 1.0,
  cols: ['FFFFFFFF'],
  ctype: 0,
  cali_idx: -1,
  total_len: 330000,
  state: 11,
  drying_temp: '55',
  drying_time: '8',
};

/** Top-level blocks only an X1-family printer sends, with a real printer's values. */
const X1_BLOCKS: Json = {
  xcam: {
    allow_skip_parts: false,
    buildplate_marker_detector: true,
    first_layer_inspector: true,
    halt_print_sensitivity: 'medium',
    print_halt: true,
    printing_monitor: true,
    spaghetti_detector: true,
    cfg: 6_291_576,
  },
  xcam_status: '0',
  net: { conf: 16, info: [{ ip: 1_711_319_232, mask: 16_777_215 }, { ip: 0, mask: 0 }] },
  upload: { file_size: 0, finish_size: 0, message: 'Good', oss_url: '', progress: 0, sequence_id: '0903', speed: 0, status: 'idle', task_id: '', time_remaining: 0, trouble_id: '' },
  s_obj: [],
  filam_bak: [],
  fan_gear: 0,
  stg: [2, 14, 1],
  hw_switch_state: 1,
  lifecycle: 'product',
  force_upgrade: false,
  ams_rfid_status: 6,
  ams_status: 0,
  aux_part_fan: true,
  queue_est: 0,
  queue_sts: 0,
  queue_total: 0,
  nozzle_target_temper_2: 0,
  print_gcode_action: 0,
  print_real_action: 0,
  sdcard_state: 'SD_CARD_STATE_NORMAL',
  device: {
    airduct: { modeCur: 0, modeList: [{ ctrl: [16, 32, 48], modeId: 0, off: [96] }, { ctrl: [16], modeId: 1, off: [32, 48] }] },
    bed_temp: 0,
    cam: { laser: { cond: 252, state: 0 } },
    cham_temp: 0,
    ext_tool: { calib: 2, mount: 0, type: '' },
    extruder: { info: [{ filam_bak: [], hnow: 0, hpre: 0, htar: 0, id: 0, info: 8, snow: 65535, spre: 65535, star: 65535, stat: 0, temp: 0 }], state: 2 },
    fan: 0,
    nozzle: { exist: 1, info: [{ diameter: 0.4, id: 0, tm: 0, type: 'HS01', wear: 0 }], state: 0 },
    plate: { base: 1, cali2d_id: '', cur_id: '', mat: 1, tar_id: '' },
    type: 1,
  },
};

function padTray(tray: unknown): unknown {
  if (typeof tray !== 'object' || tray === null || Array.isArray(tray)) return tray;
  const t = tray as Json;
  // An empty slot stays as the firmware sends it: its id alone.
  return typeof t.tray_type === 'string' && t.tray_type ? { ...TRAY_EXTRA, ...t } : t;
}

/** A full report of a real printer's size: the simulator's snapshot plus what the real firmware adds. */
export function realSizeReport(snapshot: Json): Json {
  const out: Json = { ...X1_BLOCKS, ...snapshot };
  const ams = snapshot.ams as Json | undefined;
  if (ams && Array.isArray(ams.ams)) {
    out.ams = { ...ams, ams: ams.ams.map((unit) => (typeof unit === 'object' && unit !== null ? { ...(unit as Json), info: '2003', dry_time: 0, tray: ((unit as Json).tray as unknown[] | undefined)?.map(padTray) } : unit)) };
  }
  if (snapshot.vt_tray) out.vt_tray = padTray(snapshot.vt_tray);
  return out;
}
