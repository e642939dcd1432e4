/**
 * The simulated Bambu printer's machine: the print life cycle
 * (IDLE -> PREPARE -> RUNNING <-> PAUSE -> FINISH, or FAILED), temperatures
 * that heat towards their targets, layers, AMS trays, HMS and print_error,
 * and the full `print` object a real P1/X1 reports. Time is simulated
 * seconds: the owner advances it (scaled by its speed factor).
 *
 * Every phase is reported at least once, however fast the clock runs: a tick
 * that crosses a phase boundary stops at the boundary.
 */
import { basename, printPlan, type SimFile } from './files';

export type Json = Record<string, unknown>;

/** print_error 0x0300400C: the user stopped the print. */
export const USER_CANCELLED_PRINT_ERROR = 50348044;

export type GcodeState = 'IDLE' | 'PREPARE' | 'RUNNING' | 'PAUSE' | 'FINISH' | 'FAILED';

/** print_error and HMS of a simulated failure: AMS slot 1 ran out of filament. */
export const SIM_FAILURE_PRINT_ERROR = 0x07008011;
export const SIM_FAILURE_HMS = { attr: 0x07002000, code: 0x00020001 };

/** Simulated seconds a job spends in PREPARE (download, heating, levelling). */
export const PREPARE_SECONDS = 45;

const AMBIENT = 24;

interface Job {
  file: SimFile;
  subtaskName: string;
  gcodeFile: string;
  durationS: number;
  layers: number;
  elapsedS: number;
  prepareElapsedS: number;
  nozzleTarget: number;
  bedTarget: number;
  startEpoch: number;
  taskId: string;
}

interface Tray {
  id: string;
  remain0: number;
  fields: Json;
}

export type CommandResult = { ok: true } | { ok: false; reason: string };

export class SimPrinter {
  gcodeState: GcodeState = 'IDLE';
  private job: Job | null = null;
  private nozzle = AMBIENT + 1.25;
  private bed = AMBIENT - 0.16;
  private chamber = AMBIENT;
  private nozzleTarget = 0;
  private bedTarget = 0;
  private printError = 0;
  /** Reports left before a user-cancel print_error clears (real printers show it for a few seconds). */
  private printErrorReportsLeft = 0;
  private hms: Array<{ attr: number; code: number }> = [];
  private speedLevel = 2;
  private readonly trays: Tray[];
  private readonly x1: boolean;
  private taskCounter = 0;
  private wifiTick = 0;

  constructor(
    private readonly model: string,
    private readonly options: { ams: boolean; fun: string; now?: () => number },
  ) {
    this.x1 = /^X1/i.test(model);
    this.trays = options.ams
      ? [
          { id: '0', remain0: 85, fields: { tray_type: 'PLA', tray_sub_brands: 'PLA Basic', tray_color: '00AE42FF', tray_info_idx: 'GFA00', nozzle_temp_min: '190', nozzle_temp_max: '230', tray_weight: '1000', tray_diameter: '1.75' } },
          { id: '1', remain0: 40, fields: { tray_type: 'PETG', tray_sub_brands: 'PETG HF', tray_color: '000000FF', tray_info_idx: 'GFG02', nozzle_temp_min: '230', nozzle_temp_max: '260', tray_weight: '1000', tray_diameter: '1.75' } },
          { id: '2', remain0: 100, fields: { tray_type: 'PLA', tray_sub_brands: 'PLA Matte', tray_color: 'FFFFFFFF', tray_info_idx: 'GFA01', nozzle_temp_min: '190', nozzle_temp_max: '230', tray_weight: '1000', tray_diameter: '1.75' } },
          { id: '3', remain0: -1, fields: {} },
        ]
      : [];
  }

  private now(): number {
    return this.options.now ? this.options.now() : Date.now();
  }

  get currentFile(): string | null {
    return this.job?.file.path ?? null;
  }

  get progress(): number {
    if (!this.job) return 0;
    if (this.gcodeState === 'FINISH') return 100;
    return Math.min(100, Math.floor((this.job.elapsedS / this.job.durationS) * 100));
  }

  /** Advances simulated time; returns true when gcode_state changed. */
  advance(dtS: number): boolean {
    const before = this.gcodeState;
    this.heat(dtS);
    const job = this.job;
    if (job && this.gcodeState === 'PREPARE') {
      job.prepareElapsedS = Math.min(PREPARE_SECONDS, job.prepareElapsedS + dtS);
      if (job.prepareElapsedS >= PREPARE_SECONDS) this.gcodeState = 'RUNNING';
    } else if (job && this.gcodeState === 'RUNNING') {
      job.elapsedS = Math.min(job.durationS, job.elapsedS + dtS);
      if (job.elapsedS >= job.durationS) this.finish();
    }
    return before !== this.gcodeState;
  }

  /** Called once per published report: time-limited flags count down here. */
  reported(): void {
    if (this.printErrorReportsLeft > 0 && --this.printErrorReportsLeft === 0) this.printError = 0;
    this.wifiTick++;
  }

  private heat(dtS: number): void {
    const approach = (value: number, target: number, tau: number) => {
      const goal = target > 0 ? target : AMBIENT;
      return value + (goal - value) * (1 - Math.exp(-dtS / tau));
    };
    this.nozzle = approach(this.nozzle, this.nozzleTarget, 12);
    this.bed = approach(this.bed, this.bedTarget, 40);
    const chamberGoal = AMBIENT + Math.max(0, this.bed - AMBIENT) * 0.2;
    this.chamber += (chamberGoal - this.chamber) * (1 - Math.exp(-dtS / 120));
  }

  start(file: SimFile, subtaskName?: string): CommandResult {
    if (['PREPARE', 'RUNNING', 'PAUSE'].includes(this.gcodeState)) return { ok: false, reason: 'printer is busy with another job' };
    const plan = printPlan(file);
    const name = basename(file.path);
    this.job = {
      file,
      subtaskName: subtaskName || name.replace(/(\.gcode)?\.3mf$/i, '').replace(/\.gcode$/i, ''),
      // P1/A1 report the file name; X1 the plate G-code on its ramdisk.
      gcodeFile: this.x1 && name.endsWith('.3mf') ? '/data/Metadata/plate_1.gcode' : name,
      durationS: plan.durationS,
      layers: plan.layers,
      elapsedS: 0,
      prepareElapsedS: 0,
      nozzleTarget: plan.nozzleTarget,
      bedTarget: plan.bedTarget,
      startEpoch: Math.floor(this.now() / 1000),
      taskId: String(++this.taskCounter + 100000),
    };
    this.gcodeState = 'PREPARE';
    this.nozzleTarget = plan.nozzleTarget;
    this.bedTarget = plan.bedTarget;
    this.printError = 0;
    this.printErrorReportsLeft = 0;
    this.hms = [];
    return { ok: true };
  }

  pause(): CommandResult {
    if (this.gcodeState !== 'RUNNING' && this.gcodeState !== 'PREPARE') return { ok: false, reason: `cannot pause: printer is ${this.gcodeState}` };
    this.gcodeState = 'PAUSE';
    return { ok: true };
  }

  resume(): CommandResult {
    if (this.gcodeState !== 'PAUSE') return { ok: false, reason: `cannot resume: printer is ${this.gcodeState}` };
    this.gcodeState = this.job && this.job.prepareElapsedS < PREPARE_SECONDS ? 'PREPARE' : 'RUNNING';
    return { ok: true };
  }

  /** Stop = user cancel: FAILED with print_error 50348044 for a few reports. */
  stop(): CommandResult {
    if (!['PREPARE', 'RUNNING', 'PAUSE'].includes(this.gcodeState)) return { ok: false, reason: `cannot stop: printer is ${this.gcodeState}` };
    this.gcodeState = 'FAILED';
    this.printError = USER_CANCELLED_PRINT_ERROR;
    this.printErrorReportsLeft = 3;
    this.cool();
    return { ok: true };
  }

  finish(): CommandResult {
    if (!this.job || !['PREPARE', 'RUNNING', 'PAUSE'].includes(this.gcodeState)) return { ok: false, reason: `no job to finish: printer is ${this.gcodeState}` };
    this.job.prepareElapsedS = PREPARE_SECONDS;
    this.job.elapsedS = this.job.durationS;
    this.gcodeState = 'FINISH';
    this.cool();
    return { ok: true };
  }

  fail(): CommandResult {
    if (!this.job || !['PREPARE', 'RUNNING', 'PAUSE'].includes(this.gcodeState)) return { ok: false, reason: `no job to fail: printer is ${this.gcodeState}` };
    this.gcodeState = 'FAILED';
    this.printError = SIM_FAILURE_PRINT_ERROR;
    this.printErrorReportsLeft = 0;
    this.hms = [{ ...SIM_FAILURE_HMS }];
    this.cool();
    return { ok: true };
  }

  setSpeedLevel(level: number): void {
    if (level >= 1 && level <= 4) this.speedLevel = level;
  }

  private cool(): void {
    this.nozzleTarget = 0;
    this.bedTarget = 0;
  }

  private stage(): { printStage: string; stgCur: number } {
    const idle = this.x1 ? -1 : 255;
    switch (this.gcodeState) {
      case 'PREPARE':
        return { printStage: '2', stgCur: this.job && this.job.prepareElapsedS < PREPARE_SECONDS / 2 ? 2 : 1 };
      case 'RUNNING':
        return { printStage: '2', stgCur: 0 };
      case 'PAUSE':
        return { printStage: '2', stgCur: 16 };
      default:
        return { printStage: '1', stgCur: idle };
    }
  }

  private amsReport(): Json {
    const active = this.gcodeState === 'RUNNING' || this.gcodeState === 'PAUSE' || this.gcodeState === 'PREPARE';
    const used = active || this.gcodeState === 'FINISH' ? Math.floor(this.progress / 20) : 0;
    return {
      ams: this.trays.length
        ? [
            {
              id: '0',
              humidity: '4',
              temp: '24.5',
              tray: this.trays.map((t) => (t.remain0 < 0 ? { id: t.id } : { id: t.id, ...t.fields, remain: t.id === '0' ? t.remain0 - used : t.remain0 })),
            },
          ]
        : [],
      ams_exist_bits: this.trays.length ? '1' : '0',
      tray_exist_bits: this.trays.length ? '7' : '0',
      tray_is_bbl_bits: this.trays.length ? '7' : '0',
      tray_now: active ? '0' : '255',
      tray_pre: '255',
      tray_tar: active ? '0' : '255',
      version: 4,
      insert_flag: true,
      power_on_flag: false,
    };
  }

  /** The full `print` object (without command/msg/sequence_id). */
  snapshot(): Json {
    const job = this.job;
    const { printStage, stgCur } = this.stage();
    const round = (n: number) => Math.round(n * 32) / 32;
    const running = job && this.gcodeState !== 'IDLE';
    const remainingS = job ? Math.max(0, job.durationS - job.elapsedS) : 0;
    const layer = job ? (this.gcodeState === 'PREPARE' ? 0 : Math.max(1, Math.min(job.layers, Math.ceil((job.elapsedS / job.durationS) * job.layers)))) : 0;
    return {
      gcode_state: this.gcodeState,
      print_type: running ? 'local' : 'idle',
      mc_print_stage: printStage,
      stg_cur: stgCur,
      mc_percent: this.progress,
      mc_remaining_time: job && this.gcodeState !== 'FINISH' ? Math.ceil(remainingS / 60) : 0,
      mc_print_sub_stage: 0,
      layer_num: layer,
      total_layer_num: job ? job.layers : 0,
      gcode_file: job ? job.gcodeFile : '',
      gcode_file_prepare_percent: job ? String(Math.min(100, Math.floor((job.prepareElapsedS / (PREPARE_SECONDS / 3)) * 100))) : '0',
      gcode_start_time: job ? String(job.startEpoch) : '0',
      subtask_name: job ? job.subtaskName : '',
      subtask_id: job ? job.taskId : '0',
      task_id: job ? job.taskId : '0',
      project_id: '0',
      profile_id: '0',
      print_error: this.printError,
      hms: this.hms.map((h) => ({ ...h })),
      nozzle_temper: round(this.nozzle),
      nozzle_target_temper: this.nozzleTarget,
      bed_temper: round(this.bed),
      bed_target_temper: this.bedTarget,
      chamber_temper: round(this.chamber),
      nozzle_diameter: '0.4',
      nozzle_type: 'stainless_steel',
      cooling_fan_speed: this.gcodeState === 'RUNNING' ? '15' : '0',
      big_fan1_speed: '0',
      big_fan2_speed: '0',
      heatbreak_fan_speed: this.nozzle > 50 ? '15' : '0',
      spd_lvl: this.speedLevel,
      spd_mag: [50, 100, 124, 166][this.speedLevel - 1],
      wifi_signal: `-${44 + (this.wifiTick % 4)}dBm`,
      sdcard: true,
      home_flag: 6291800,
      fun: this.options.fun,
      queue_number: 0,
      lights_report: [{ node: 'chamber_light', mode: 'on' }],
      ipcam: { ipcam_dev: '1', ipcam_record: 'enable', timelapse: 'disable', resolution: '1080p', tutk_server: 'disable', mode_bits: 3 },
      upgrade_state: { sequence_id: 0, progress: '', status: '', consistency_request: false, dis_state: 0, err_code: 0, force_upgrade: false, message: '', module: '', new_version_state: 2, new_ver_list: [] },
      online: { ahb: false, rfid: false, version: 7 },
      ams: this.amsReport(),
      vt_tray: { id: '254', tray_type: '', tray_color: '00000000', tray_info_idx: '', remain: 0, k: 0.02, n: 1 },
      model_id: '',
      mess_production_state: 'active',
    };
  }
}
