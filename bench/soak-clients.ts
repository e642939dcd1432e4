/**
 * The soak run's /ws clients and the ledger they are checked against: what every Bambu
 * simulator sent, and per client the frames received (same frames in the same order as every
 * other client, timestamps and progress never going back, every report delivered once in order).
 */
import { createHash, type Hash } from 'node:crypto';
import { WebSocket } from 'ws';
import { BENCH_NOZZLE_STEPS, type SimReportInfo } from '../service/simulators/bambu';
import { type ClientReport, LagHistogram } from './soak-support';

export interface Sent {
  nozzle: number;
  at: number;
  inWindow: boolean;
}

export class Ledger {
  readonly sent = new Map<string, Sent[]>();
  windowOpen = false;
  windowReports = 0;

  onReport(info: SimReportInfo): void {
    let list = this.sent.get(info.id);
    if (!list) this.sent.set(info.id, (list = []));
    list.push({ nozzle: info.nozzle, at: performance.now(), inWindow: this.windowOpen });
    if (this.windowOpen) this.windowReports++;
  }
}

export interface PrinterTrack {
  lastTs: string;
  lastStatus: string;
  lastProgress: number;
  lastJob: unknown;
  /** Ledger position: index of the next report expected (Bambu). */
  cursor: number;
  lastNozzle: number | null;
}

export interface StatusFrame {
  type: string;
  timestamp: string;
  data: { printer_id?: string; status?: string; progress?: number; job_name?: unknown; temperatures?: { nozzle?: number } };
}

export class CheckingClient {
  socket!: WebSocket;
  frames = 0;
  private readonly hash: Hash = createHash('sha1');
  private readonly tracks = new Map<string, PrinterTrack>();
  readonly types: Record<string, number> = {};
  matched = 0;
  lost = 0;
  unexpected = 0;
  timestampRegressions = 0;
  progressRegressions = 0;
  windowBambuFrames = 0;
  windowPrusaFrames = 0;
  readonly violations: string[] = [];
  /** Frames stamped before this (ISO) may predate the last client's connection and are not compared. */
  armedAfter = '';
  /**
   * Frames stamped after this (ISO) are not compared either: clients read their sockets at their
   * own pace, so at any instant one may be a frame behind another. Every frame stamped up to here
   * has reached a client once it has seen one stamped later (the service stamps as it sends).
   */
  closeAfter = '';
  passedClose = false;
  countWindow = false;

  constructor(
    private readonly ledger: Ledger,
    private readonly bambuIds: Set<string>,
    private readonly lag: LagHistogram,
  ) {}

  async connect(base: string): Promise<void> {
    this.socket = new WebSocket(`${base.replace(/^http/, 'ws')}/ws`);
    this.socket.on('message', (raw: Buffer) => this.onFrame(raw.toString('utf8')));
    await new Promise<void>((resolve, reject) => {
      this.socket.once('open', () => resolve());
      this.socket.once('error', reject);
    });
  }

  private violation(text: string): void {
    if (this.violations.length < 10) this.violations.push(text);
  }

  private onFrame(text: string): void {
    const now = performance.now();
    let frame: StatusFrame;
    try {
      frame = JSON.parse(text);
    } catch {
      this.violation(`not JSON: ${text.slice(0, 80)}`);
      return;
    }
    if (!this.armedAfter || frame.timestamp <= this.armedAfter) return;
    if (this.closeAfter && frame.timestamp > this.closeAfter) this.passedClose = true;
    else {
      this.frames++;
      this.hash.update(text);
      this.hash.update('\n');
      this.types[frame.type] = (this.types[frame.type] ?? 0) + 1;
    }
    const id = frame.data?.printer_id;
    if (typeof id !== 'string') return;
    let track = this.tracks.get(id);
    if (!track) this.tracks.set(id, (track = { lastTs: '', lastStatus: '', lastProgress: -1, lastJob: undefined, cursor: 0, lastNozzle: null }));
    // Per printer, in order: the service stamps frames as it sends them (ISO, ms).
    if (frame.timestamp < track.lastTs) {
      this.timestampRegressions++;
      this.violation(`${id}: ${frame.type} at ${frame.timestamp} after ${track.lastTs}`);
    }
    track.lastTs = frame.timestamp;
    if (frame.type !== 'printer_status') return;
    const bambu = this.bambuIds.has(id);
    if (this.countWindow) {
      if (bambu) this.windowBambuFrames++;
      else this.windowPrusaFrames++;
    }
    const { status = '', progress, job_name: job } = frame.data;
    if (typeof progress === 'number') {
      // A running print only moves forward; a new print (or an end) may start again from 0.
      if (status === 'printing' && track.lastStatus === 'printing' && job === track.lastJob && progress < track.lastProgress) {
        this.progressRegressions++;
        this.violation(`${id}: progress ${track.lastProgress} -> ${progress} while printing ${String(job)}`);
      }
      track.lastProgress = progress;
    }
    track.lastStatus = status;
    track.lastJob = job;
    if (bambu) this.matchReport(id, track, frame.data.temperatures?.nozzle, now);
  }

  /** The frame of the next report(s) this printer sent: reports skipped on the way are lost. */
  private matchReport(id: string, track: PrinterTrack, nozzle: number | undefined, now: number): void {
    const sent = this.ledger.sent.get(id) ?? [];
    if (typeof nozzle !== 'number') return;
    const limit = Math.min(sent.length, track.cursor + BENCH_NOZZLE_STEPS);
    for (let j = track.cursor; j < limit; j++) {
      if (sent[j].nozzle !== nozzle) continue;
      for (let k = track.cursor; k < j; k++) {
        if (sent[k].inWindow) {
          this.lost++;
          this.violation(`${id}: report #${k} (nozzle ${sent[k].nozzle}) never arrived; next frame was #${j}`);
        }
      }
      track.cursor = j + 1;
      track.lastNozzle = nozzle;
      if (sent[j].inWindow) {
        this.matched++;
        this.lag.add(now - sent[j].at);
      }
      return;
    }
    // A frame without a new report: a connection change re-sends the last state; anything else is out of order.
    if (nozzle === track.lastNozzle) return;
    if (sent.slice(0, track.cursor).some((s) => s.inWindow)) {
      this.unexpected++;
      this.violation(`${id}: frame with nozzle ${nozzle} matches no report ahead of #${track.cursor}`);
    }
  }

  /** Window reports this client has not received yet. */
  pending(): number {
    let n = 0;
    for (const [id, sent] of this.ledger.sent) {
      const cursor = this.tracks.get(id)?.cursor ?? 0;
      for (let k = cursor; k < sent.length; k++) if (sent[k].inWindow) n++;
    }
    return n;
  }

  report(): ClientReport {
    const stillPending = this.pending();
    if (stillPending) this.violation(`${stillPending} window reports never arrived`);
    return {
      frames: this.frames,
      hash: this.hash.copy().digest('hex'),
      matched: this.matched,
      lost: this.lost + stillPending,
      unexpected: this.unexpected,
      timestampRegressions: this.timestampRegressions,
      progressRegressions: this.progressRegressions,
      violations: [...this.violations],
    };
  }

  async close(): Promise<void> {
    const socket = this.socket;
    if (!socket || socket.readyState === WebSocket.CLOSED) return;
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    if (socket.readyState === WebSocket.CONNECTING) socket.terminate();
    else socket.close();
    const cut = setTimeout(() => socket.terminate(), 2000);
    await closed;
    clearTimeout(cut);
  }
}
