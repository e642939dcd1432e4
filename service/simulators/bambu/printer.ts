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
import type { SimMaterials } from './materials';

export type Json = Record<string, unknown>;

/** print_error 0x0300400C: the user stopped the print. */
export const USER_CANCELLED_PRINT_ERROR = 50348044;

export type GcodeState = 'IDLE' | 'PREPARE' | 'RUNNING' | 'PAUSE' | 'FINISH' | 'FAILED';

/** print_error and HMS of a simulated failure: AMS slot 1 ran out of filament. */
export const SIM_FAILURE_PRINT_ERROR = 0x07008011;
export const SIM_FAILURE_HMS = { attr: 0x07002000, code: 0x00020001 };

/** print_error 0x05004004: a start arrived while printing and cancelled the running print (A1 mini). */
export const START_WHILE_BUSY_PRINT_ERROR = 0x05004004;

/** Simulated seconds a job spends in PREPARE (download, heating, levelling). */
export const PREPARE_SECONDS = 45;

const AMBIENT = 24;

/** How a start was asked for (project_file fields, or defaults for a start on the screen). */
export interface StartOptions {
  subtaskName?: string;
  /** 3MF plate number (default 1). */
  plate?: number;
  /** task_id / subtask_id / project_id to report (default: fresh ids the printer makes up). */
  taskId?: string;
  subtaskId?: string;
  projectId?: string;
  /** Global tray number the print feeds from (null: none known). */
  feed?: number | null;
  /** Stay in PREPARE for ever, e.g. "preparing AMS" on a bad ams_mapping. */
  stall?: string | null;
  /** Fail during PREPARE with this print_error (e.g. 0x07008012 for a 254 mapping on an H2D). */
  failCode?: number | null;
  /**
   * Simulated seconds the printer stays as it was (IDLE, FINISH...) before PREPARE shows: an H2D
   * takes 80-210 s. A start arriving meanwhile replaces the waiting one (the printer is not busy yet).
   */
  delayS?: number;
}

interface Job {
  file: SimFile;
  subtaskName: string;
  plate: number;
  subtaskId: string;
  projectId: string;
  feed: number | null;
  stall: string | null;
  failCode: number | null;
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
  private readonly x1: boolean;
  private taskCounter = 0;
  /** An accepted start that has not reached PREPARE yet (see StartOptions.delayS). */
  private pending: { file: SimFile; options: StartOptions; leftS: number } | null = null;
  private wifiTick = 0;

  constructor(
    private readonly model: string,
    private readonly options: { materials: SimMaterials; fun: string; nozzleDiameter?: number; now?: () => number },
  ) {
    this.x1 = /^X1/i.test(model);
  }

  private now(): number {
    return this.options.now ? this.options.now() : Date.now();
  }

  get currentFile(): string | null {
    return this.job?.file.path ?? null;
  }

  /** Why the current job hangs in PREPARE (null when it does not). */
  get stalledBy(): string | null {
    return this.gcodeState === 'PREPARE' ? (this.job?.stall ?? null) : null;
  }

  /** A start was accepted and has not shown yet. */
  get startPending(): boolean {
    return this.pending !== null;
  }

  /** PREPARE, RUNNING or PAUSE: a job holds the printer. */
  get busy(): boolean {
    return ['PREPARE', 'RUNNING', 'PAUSE'].includes(this.gcodeState);
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
    if (this.pending && (this.pending.leftS -= dtS) <= 0) {
      const { file, options } = this.pending;
      this.pending = null;
      this.start(file, { ...options, delayS: 0 });
      return true;
    }
    const job = this.job;
    if (job && this.gcodeState === 'PREPARE') {
      // A stalled start ("preparing AMS") heats, then waits for ever half-way through.
      job.prepareElapsedS = Math.min(job.stall ? PREPARE_SECONDS / 2 : PREPARE_SECONDS, job.prepareElapsedS + dtS);
      if (job.failCode !== null && job.prepareElapsedS >= PREPARE_SECONDS / 3) this.failWith(job.failCode);
      else if (job.prepareElapsedS >= PREPARE_SECONDS) this.gcodeState = 'RUNNING';
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

  start(file: SimFile, options: StartOptions = {}): CommandResult {
    if (this.busy) return { ok: false, reason: 'printer is busy with another job' };
    if (options.delayS && options.delayS > 0) {
      this.pending = { file, options, leftS: options.delayS };
      return { ok: true };
    }
    this.pending = null;
    const plate = options.plate ?? 1;
    const plan = printPlan(file, plate);
    const name = basename(file.path);
    const taskId = options.taskId ?? String(++this.taskCounter + 100000);
    this.job = {
      file,
      subtaskName: options.subtaskName || name.replace(/(\.gcode)?\.3mf$/i, '').replace(/\.gcode$/i, ''),
      plate,
      subtaskId: options.subtaskId ?? taskId,
      projectId: options.projectId ?? '0',
      feed: options.feed ?? this.options.materials.defaultFeed(),
      stall: options.stall ?? null,
      failCode: options.failCode ?? null,
      // P1/A1 report the file name; X1 the plate G-code on its ramdisk.
      gcodeFile: this.x1 && name.endsWith('.3mf') ? `/data/Metadata/plate_${plate}.gcode` : name,
      durationS: plan.durationS,
      layers: plan.layers,
      elapsedS: 0,
      prepareElapsedS: 0,
      nozzleTarget: plan.nozzleTarget,
      bedTarget: plan.bedTarget,
      startEpoch: Math.floor(this.now() / 1000),
      taskId,
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
    this.useUp();
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
    this.useUp(100);
    this.gcodeState = 'FINISH';
    this.cool();
    return { ok: true };
  }

  fail(): CommandResult {
    if (!this.job || !['PREPARE', 'RUNNING', 'PAUSE'].includes(this.gcodeState)) return { ok: false, reason: `no job to fail: printer is ${this.gcodeState}` };
    this.failWith(SIM_FAILURE_PRINT_ERROR, [{ ...SIM_FAILURE_HMS }]);
    return { ok: true };
  }

  /**
   * A start arrived while a job held the printer: like an A1 mini, the
   * running print is cancelled (FAILED, print_error 0500_4004) and the new
   * one does not start either. Returns false when nothing was running.
   */
  cancelledByStart(): boolean {
    if (!this.busy) return false;
    this.failWith(START_WHILE_BUSY_PRINT_ERROR);
    return true;
  }

  private failWith(printError: number, hms: Array<{ attr: number; code: number }> = []): void {
    this.useUp();
    this.gcodeState = 'FAILED';
    this.printError = printError;
    this.printErrorReportsLeft = 0;
    this.hms = hms;
    this.cool();
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
        // 24 = filament loading: where a start with a bad ams_mapping hangs ("preparing AMS").
        if (this.job?.stall && this.job.prepareElapsedS >= PREPARE_SECONDS / 2) return { printStage: '2', stgCur: 24 };
        return { printStage: '2', stgCur: this.job && this.job.prepareElapsedS < PREPARE_SECONDS / 2 ? 2 : 1 };
      case 'RUNNING':
        return { printStage: '2', stgCur: 0 };
      case 'PAUSE':
        return { printStage: '2', stgCur: 16 };
      default:
        return { printStage: '1', stgCur: idle };
    }
  }

  /** The tray feeding the print (null when idle) and the percent of it used so far (a print takes 5 % of a spool). */
  private feeding(): { feed: number | null; used: number } {
    const active = this.busy;
    return { feed: active ? (this.job?.feed ?? null) : null, used: active ? Math.floor(this.progress / 20) : 0 };
  }

  /** A print ends: what it took stays off its tray's `remain` (a real AMS counts it down for good). */
  private useUp(progress = this.progress): void {
    if (!this.busy || !this.job || this.job.feed === null) return;
    this.options.materials.consume(this.job.feed, Math.floor(progress / 20));
  }

  /** The full `print` object (without command/msg/sequence_id). */
  snapshot(): Json {
    const job = this.job;
    const { printStage, stgCur } = this.stage();
    const { feed, used } = this.feeding();
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
      subtask_id: job ? job.subtaskId : '0',
      task_id: job ? job.taskId : '0',
      project_id: job ? job.projectId : '0',
      profile_id: '0',
      print_error: this.printError,
      hms: this.hms.map((h) => ({ ...h })),
      nozzle_temper: round(this.nozzle),
      nozzle_target_temper: this.nozzleTarget,
      bed_temper: round(this.bed),
      bed_target_temper: this.bedTarget,
      chamber_temper: round(this.chamber),
      nozzle_diameter: String(this.options.nozzleDiameter ?? 0.4),
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
      ams: this.options.materials.amsReport(feed, used, this.busy),
      vt_tray: this.options.materials.externalReport(feed, used),
      model_id: '',
      mess_production_state: 'active',
    };
  }
}
