/**
 * A simulated Bambu Lab printer on 127.0.0.1 that speaks the real LAN
 * protocols over real sockets (PROTOCOLS.md §1-2):
 *
 * - MQTT over TLS (aedes behind node:tls, self-signed certificate with
 *   CN = serial), user `bblp` + access code. Reports on
 *   `device/{serial}/report` about once a second (faster with `speed`):
 *   `push_status` `msg:0` full snapshots after pushall, `msg:1` otherwise.
 *   Requests on `device/{serial}/request`: pushall, get_version, pause,
 *   resume, stop, project_file, gcode_file (answered with `result`); the
 *   quirks of project_file are in bambu/print-start.ts. A start while a job
 *   holds the printer cancels that job (0500_4004), as on an A1 mini.
 * - Implicit FTPS with vsftpd's manners, including 522 for a data connection
 *   that does not resume the control connection's TLS session; uploads (STOR)
 *   anywhere on the card, two at once corrupt each other (bambu/ftps.ts).
 * - AMS trays and the external spool (bambu/materials.ts), white PLA in
 *   tray 0 by default; the model as real printers tell it (bambu/version.ts).
 * - The model's camera showing name, state and progress (bambu/printer-camera.ts):
 *   "JPEG over TLS" for A1/P1 (bambu/camera.ts), RTSPS for the X1/H2/P2
 *   families where ffmpeg is installed (bambu/rtsps-camera.ts).
 * - A control API (JSON over HTTP, `controlUrl`; routes in bambu/control.ts)
 *   to drive it like a person at the printer and to inject faults.
 *
 * Time runs `speed` times faster than the wall clock: a 10-minute print at
 * speed 60 takes 10 s. Options for benchmarks with hundreds of printers
 * (shared TLS pair, no FTPS/control/camera, report offsets): bambu/options.ts.
 */
import { BambuControlServer, parseFaults, type BambuControlTarget } from './bambu/control';
import { SimStorage, type SimFile } from './bambu/files';
import { SimFtps } from './bambu/ftps';
import type { LinkMode } from './bambu/gate';
import { MAX_AMS_UNITS, parseMaterials, SimMaterials } from './bambu/materials';
import { SimMqtt } from './bambu/mqtt';
import {
  randomDigits,
  selfSignedTls,
  serialFor,
  type BambuFaults,
  type BambuPrinterConfig,
  type BambuSimulatorOptions,
  type SimTlsCredentials,
} from './bambu/options';
import { decideProjectFile, plainStartRecord, type StartRecord } from './bambu/print-start';
import { SimPrinter, type CommandResult, type Json, type StartOptions } from './bambu/printer';
import { cameraPort, openPrinterCamera, type PrinterCamera } from './bambu/printer-camera';
import { ReportStream } from './bambu/reports';
import { handleRequest, type RequestTarget } from './bambu/requests';
import { stateView, statusWord, type SimStatus } from './bambu/state-view';
import { versionInfo } from './bambu/version';
import { startReportClock, type ReportClock } from './report-clock';

export { BENCH_NOZZLE_BASE, BENCH_NOZZLE_STEPS, type BambuFaults, type BambuPrinterConfig, type BambuSimulatorOptions, type SimReportInfo, type SimTlsCredentials } from './bambu/options';

export class BambuSimulator implements BambuControlTarget, RequestTarget {
  readonly serial: string;
  readonly accessCode: string;
  readonly model: string;
  readonly name: string;
  readonly id: string;
  readonly speed: number;
  readonly firmware: string;
  readonly faults: BambuFaults = { partial_reports: false, reject_commands: false, transfer_bytes_per_sec: 0, camera_stalled: false, pushall_delay_ms: 0 };
  readonly storage: SimStorage;
  readonly stats = { pushall_requests: 0, get_version_requests: 0, commands: 0 };
  readonly printer: SimPrinter;
  readonly materials: SimMaterials;
  readonly nozzleDiameter: number;
  readonly developerMode: boolean;
  /** Starts the printer accepted (MQTT and the screen) since the simulator started. */
  printsStarted = 0;
  /** Starts that arrived while a job held the printer (each cancelled that job). */
  startsWhileBusy = 0;
  lastStart: StartRecord | null = null;

  private mqtt: SimMqtt | null = null;
  private ftps: SimFtps | null = null;
  private control: BambuControlServer | null = null;
  /** The model's camera: port-6000 "JPEG over TLS" (A1 / P1) or RTSPS (X1 / H2 / P2); null with `camera: false`. */
  camera: PrinterCamera | null = null;
  private clock: ReportClock | null = null;
  private lastTick = Date.now();
  private readonly reports: ReportStream;
  private linkMode: LinkMode = 'online';
  private endedBy: 'cancel' | null = null;
  private readonly reportIntervalMs: number;
  private readonly hasAms: boolean;
  private readonly options: BambuSimulatorOptions;
  private closed = false;
  /** pushall answers held by the pushall_delay_ms fault (cleared on close). */
  private readonly lateAnswers = new Set<NodeJS.Timeout>();

  private constructor(options: BambuSimulatorOptions) {
    this.options = options;
    this.model = options.model ?? 'P1S';
    this.speed = options.speed && options.speed > 0 ? options.speed : 1;
    this.serial = options.serial ?? serialFor(this.model);
    this.accessCode = options.accessCode ?? randomDigits(8);
    this.name = options.name ?? `Simulated ${this.model}`;
    this.id = options.id ?? `sim-${this.serial.toLowerCase()}`;
    this.firmware = options.firmware ?? '01.08.02.00';
    this.developerMode = options.developerMode ?? true;
    this.hasAms = options.ams ?? true;
    const units = Math.max(0, Math.min(MAX_AMS_UNITS, Math.floor(options.amsUnits ?? (this.hasAms ? 1 : 0))));
    this.hasAms = units > 0;
    this.materials = new SimMaterials(units, this.serial);
    this.nozzleDiameter = options.nozzleDiameter ?? 0.4;
    // Its seed 3MF is sliced for this very model.
    this.storage = SimStorage.seeded(new Date(), this.model);
    this.reportIntervalMs = options.reportIntervalMs ?? Math.min(1000, Math.max(100, Math.round(1000 / this.speed)));
    this.reports = new ReportStream(options);
    this.printer = new SimPrinter(this.model, {
      materials: this.materials,
      nozzleDiameter: this.nozzleDiameter,
      // Bit 0x20000000 of `fun` = "MQTT signature required"; Developer Mode clears it.
      fun: this.developerMode ? '3EC18FFF9CFF' : '3EC1AFFF9CFF',
    });
  }

  static async start(options: BambuSimulatorOptions = {}): Promise<BambuSimulator> {
    const sim = new BambuSimulator(options);
    try {
      await sim.open();
    } catch (err) {
      await sim.close();
      throw err;
    }
    return sim;
  }

  /** A self-signed EC P-256 key and certificate (CN = commonName), e.g. to share across many simulators. */
  static tlsCredentials(commonName = 'printfarm-simulator'): Promise<SimTlsCredentials> {
    return selfSignedTls(commonName);
  }

  private async open(): Promise<void> {
    const { key, cert } = this.options.tls ?? (await BambuSimulator.tlsCredentials(this.serial));
    this.mqtt = await SimMqtt.start({
      key,
      cert,
      serial: this.serial,
      accessCode: this.accessCode,
      onRequest: (m) => {
        if (!this.closed && this.linkMode === 'online') handleRequest(this, m);
      },
    });
    if (this.options.ftps ?? true) {
      this.ftps = new SimFtps({ key, cert, user: 'bblp', password: this.accessCode, storage: this.storage, throttle: () => this.faults.transfer_bytes_per_sec });
      await this.ftps.listen();
    }
    if (this.options.camera ?? true) {
      const { cameraPort: port, cameraSize: size, cameraIntervalMs: intervalMs, cameraStamp: stamp } = this.options;
      this.camera = await openPrinterCamera(this, { key, cert, faults: this.faults, port, size, intervalMs, stamp });
    }
    if (this.options.control ?? true) {
      this.control = new BambuControlServer(this);
      await this.control.listen();
    }
    this.lastTick = Date.now();
    this.clock = startReportClock(this.reportIntervalMs, this.options.reportPhaseMs, () => this.tick());
  }

  get mqttPort(): number {
    return this.mqtt?.port ?? 0;
  }

  get ftpsPort(): number {
    return this.ftps?.port ?? 0;
  }

  get controlUrl(): string {
    return this.control?.url ?? '';
  }

  get link(): LinkMode {
    return this.linkMode;
  }

  /** Body for POST /api/v1/printers (ports as per-printer overrides). */
  printerConfig(): BambuPrinterConfig {
    const camera = cameraPort(this.camera);
    return {
      id: this.id,
      name: this.name,
      type: 'bambu_lab',
      model: this.model,
      ip_address: '127.0.0.1',
      serial_number: this.serial,
      access_code: this.accessCode,
      mqtt_port: this.mqttPort,
      ...(this.ftps ? { ftps_port: this.ftpsPort } : {}),
      ...(camera ? { camera_port: camera } : {}),
    };
  }

  // --- The clock and the reports

  private tick(): void {
    const now = Date.now();
    const dtS = ((now - this.lastTick) / 1000) * this.speed;
    this.lastTick = now;
    this.printer.advance(dtS);
    this.report(false);
  }

  private get reportTopic(): string {
    return `device/${this.serial}/report`;
  }

  /** Publishes a push_status: full (`msg:0`) or periodic (`msg:1`). Silent unless online. */
  report(full: boolean): void {
    void this.sendReport(full);
  }

  private async sendReport(full: boolean): Promise<void> {
    if (this.closed || this.linkMode !== 'online' || !this.mqtt) return;
    const out = this.reports.next(this.printer.snapshot(), full, this.faults.partial_reports);
    this.printer.reported();
    // Told once the report is made, as it is written: its making (and a collection it sets off) is not its trip.
    this.options.onReport?.({ id: this.id, serial: this.serial, sequence: out.sequence, full: out.full, nozzle: out.nozzle });
    await this.mqtt.publishRaw(this.reportTopic, out.payload);
  }

  answerPushall(): void {
    const delay = this.faults.pushall_delay_ms;
    if (delay <= 0) return this.report(true);
    // The full report is made when it goes (what the printer shows then), after the deltas sent meanwhile.
    const timer = setTimeout(() => {
      this.lateAnswers.delete(timer);
      this.report(true);
    }, delay);
    this.lateAnswers.add(timer);
  }

  versionInfo(sequenceId: unknown): Json {
    return versionInfo({ model: this.model, firmware: this.firmware, serial: this.serial, hasAms: this.hasAms }, sequenceId);
  }

  // --- MQTT requests (bambu/requests.ts answers them; print commands land here)

  publish(message: Json): void {
    void this.mqtt?.publish(this.reportTopic, message);
  }

  gcodeState(): string {
    return this.printer.gcodeState;
  }

  runPrintCommand(request: Json, command: string): CommandResult {
    switch (command) {
      case 'pause':
        return this.printer.pause();
      case 'resume':
        return this.printer.resume();
      case 'stop':
        return this.cancel();
      case 'project_file': {
        const decision = decideProjectFile(request, { storage: this.storage, materials: this.materials, model: this.model });
        if (decision.kind === 'reject') return { ok: false, reason: decision.reason };
        if (this.printer.busy) return this.startWhileBusy();
        // Acknowledged, yet nothing happens: what a P1S does with ids it cannot read.
        if (decision.kind === 'stuck') return { ok: true };
        const result = this.begin(decision.file, { ...decision.options, delayS: this.options.startDelayS ?? (/^H2/i.test(this.model) ? 90 : 0) });
        if (result.ok) this.lastStart = { source: 'mqtt', ...decision.record, at: new Date().toISOString() };
        return result;
      }
      case 'gcode_file': {
        const name = String(request.param ?? '');
        const file = this.storage.find(name);
        if (!file) return { ok: false, reason: `file not found: ${name}` };
        if (!/\.gcode$/i.test(file.path)) return { ok: false, reason: `${command} cannot print ${file.path}` };
        if (this.printer.busy) return this.startWhileBusy();
        return this.begin(file, {}, 'mqtt');
      }
      case 'print_speed':
        this.printer.setSpeedLevel(Number(request.param));
        return { ok: true };
      case 'gcode_line':
        return { ok: true };
      default:
        return { ok: false, reason: `unsupported command ${command}` };
    }
  }

  /**
   * Starts a job. `source` records a start that has no project_file record of
   * its own (gcode_file, the screen); every accepted start is counted.
   */
  private begin(file: SimFile, options: StartOptions, source?: 'mqtt' | 'screen'): CommandResult {
    const result = this.printer.start(file, options);
    if (!result.ok) return result;
    this.endedBy = null;
    this.printsStarted++;
    if (source) this.lastStart = plainStartRecord(source, file, this.printer.snapshot());
    return result;
  }

  /** A start sent to a busy printer: the running print is cancelled (0500_4004), the new one does not start. */
  private startWhileBusy(): CommandResult {
    this.startsWhileBusy++;
    this.printer.cancelledByStart();
    this.endedBy = null;
    return { ok: false, reason: 'the printer was busy: the running print was cancelled (0500_4004)' };
  }

  private cancel(): CommandResult {
    const result = this.printer.stop();
    if (result.ok) this.endedBy = 'cancel';
    return result;
  }

  // --- Programmatic control (the HTTP API calls these)

  /** Starts a stored file as if chosen on the printer's screen. */
  startPrint(name: string): CommandResult {
    const file = this.storage.find(name);
    if (!file) return { ok: false, reason: `file not found: ${name}` };
    return this.afterChange(this.begin(file, {}, 'screen'));
  }

  pause(): CommandResult {
    return this.afterChange(this.printer.pause());
  }

  resume(): CommandResult {
    return this.afterChange(this.printer.resume());
  }

  finish(): CommandResult {
    return this.afterChange(this.printer.finish());
  }

  fail(): CommandResult {
    return this.afterChange(this.printer.fail());
  }

  cancelPrint(): CommandResult {
    return this.afterChange(this.cancel());
  }

  private afterChange(result: CommandResult): CommandResult {
    if (result.ok) this.report(false);
    return result;
  }

  /** online / offline (refuse and drop everything) / stalled (silence). */
  async setLink(mode: LinkMode): Promise<void> {
    if (this.closed) return;
    const previous = this.linkMode;
    this.linkMode = mode;
    if (previous !== 'online' && mode === 'online') this.lastTick = Date.now();
    await Promise.all([this.mqtt?.setMode(mode), this.ftps?.setMode(mode), this.camera?.setLink(mode)]);
  }

  setFaults(patch: Partial<BambuFaults>): BambuFaults {
    Object.assign(this.faults, patch);
    return { ...this.faults };
  }

  /** A POST /faults body, checked before anything changes. */
  applyFaults(body: Json): { ok: true; faults: Json } | { ok: false; error: string } {
    const parsed = parseFaults(body);
    return parsed.ok ? { ok: true, faults: { ...this.setFaults(parsed.patch) } } : parsed;
  }

  /** A POST /materials body: replaces what the trays and the external spool hold; reported at once. */
  applyMaterials(body: Json): { ok: true; materials: unknown } | { ok: false; error: string } {
    const parsed = parseMaterials(body, this.materials.amsUnits, this.serial);
    if (!parsed.ok) return parsed;
    this.materials.replace(parsed.materials);
    this.report(false);
    return { ok: true, materials: this.materials.list() };
  }

  get status(): SimStatus {
    return statusWord(this.printer.gcodeState, this.endedBy);
  }

  /** What GET /state returns. */
  stateView(): Json {
    return stateView({ sim: this, mqtt: this.mqtt, ftps: this.ftps, link: this.linkMode });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.clock?.stop();
    this.clock = null;
    for (const timer of this.lateAnswers) clearTimeout(timer);
    this.lateAnswers.clear();
    await Promise.all([this.control?.close(), this.mqtt?.close(), this.ftps?.close(), this.camera?.close()]);
  }
}
