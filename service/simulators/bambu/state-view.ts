/**
 * What the simulated Bambu printer's GET /state shows: the printer as a
 * person at it would describe it (status word, job, temperatures), what it
 * holds (files, materials), what happened (prints_started, last_start) and
 * counters of its MQTT, FTPS and camera servers.
 */
import type { BambuSimulator } from '../bambu';
import type { SimFtps } from './ftps';
import type { LinkMode } from './gate';
import type { SimMqtt } from './mqtt';
import { cameraState, cameraStats } from './printer-camera';
import type { GcodeState, Json } from './printer';

export type SimStatus = 'idle' | 'preparing' | 'printing' | 'paused' | 'finished' | 'failed' | 'stopped';

/** The status word for a gcode_state; FAILED after a user stop is "stopped". */
export function statusWord(state: GcodeState, endedBy: 'cancel' | null): SimStatus {
  switch (state) {
    case 'PREPARE':
      return 'preparing';
    case 'RUNNING':
      return 'printing';
    case 'PAUSE':
      return 'paused';
    case 'FINISH':
      return 'finished';
    case 'FAILED':
      return endedBy === 'cancel' ? 'stopped' : 'failed';
    default:
      return 'idle';
  }
}

export interface StateParts {
  sim: BambuSimulator;
  mqtt: SimMqtt | null;
  ftps: SimFtps | null;
  link: LinkMode;
}

export function stateView({ sim, mqtt, ftps, link }: StateParts): Json {
  const snapshot = sim.printer.snapshot();
  return {
    serial: sim.serial,
    model: sim.model,
    firmware: sim.firmware,
    status: sim.status,
    gcode_state: sim.printer.gcodeState,
    progress: sim.printer.progress,
    file: sim.printer.currentFile,
    job_name: snapshot.subtask_name || null,
    layer: snapshot.layer_num,
    total_layers: snapshot.total_layer_num,
    remaining_minutes: snapshot.mc_remaining_time,
    temperatures: {
      nozzle: snapshot.nozzle_temper,
      nozzle_target: snapshot.nozzle_target_temper,
      bed: snapshot.bed_temper,
      bed_target: snapshot.bed_target_temper,
      chamber: snapshot.chamber_temper,
    },
    print_error: snapshot.print_error,
    hms: snapshot.hms,
    subtask_id: snapshot.subtask_id,
    stalled: sim.printer.stalledBy,
    start_pending: sim.printer.startPending,
    prints_started: sim.printsStarted,
    starts_while_busy: sim.startsWhileBusy,
    last_start: sim.lastStart,
    materials: sim.materials.list(),
    nozzle_diameter: sim.nozzleDiameter,
    files: sim.storage.paths(),
    link: link,
    faults: { ...sim.faults },
    speed: sim.speed,
    mqtt_port: sim.mqttPort,
    ftps_port: sim.ftpsPort,
    // camera_port 0 without a camera (or an RTSPS camera without ffmpeg: camera_unavailable says why).
    ...cameraState(sim.camera),
    stats: {
      ...sim.stats,
      mqtt_clients: mqtt?.connectedClients ?? 0,
      mqtt_connections: mqtt?.stats.connections ?? 0,
      mqtt_auth_failures: mqtt?.stats.auth_failures ?? 0,
      ftp_sessions: ftps?.stats.sessions ?? 0,
      ftp_open_sessions: ftps?.sessions.size ?? 0,
      ftp_max_concurrent_sessions: ftps?.stats.max_concurrent_sessions ?? 0,
      ftp_logins: ftps?.stats.logins ?? 0,
      ftp_login_failures: ftps?.stats.login_failures ?? 0,
      ftp_refused_data_connections: ftps?.stats.refused_data_connections ?? 0,
      ftp_transfers: ftps?.stats.transfers ?? 0,
      ftp_uploads: ftps?.stats.uploads ?? 0,
      ftp_upload_collisions: ftps?.stats.upload_collisions ?? 0,
      ftp_active_uploads: ftps?.activeUploads.size ?? 0,
      ...cameraStats(sim.camera),
    },
  };
}
