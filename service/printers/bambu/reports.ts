/**
 * What one Bambu printer has said so far: the merged push_status report, the
 * get_version facts and the PrinterState made of them. Takes raw MQTT
 * payloads, bounded by limits.ts (an oversized report is refused and counted,
 * never merged), and says what each one changed. No sockets, no timers.
 */
import type { PrinterState } from '../driver';
import { samePrinterState } from '../state-equality';
import { checkReport, ReportRefused, type KeptKey, type ReportCount } from './limits';
import { RepeatedAms } from './repeated-ams';
import { AttentionMemo, ingestReport, onlyTemperaturesChanged, parseVersionInfo, takeScalarDelta, temperaturesOf, toPrinterState, withTemperatures, type BambuTracked, type VersionInfo } from './state';
import { isObject, num, type Json } from './values';

export type ReportOutcome =
  /** Not JSON or not an object: ignored, as the printers' own clients do. */
  | { kind: 'ignored' }
  /** Beyond the limits: dropped (and counted). */
  | { kind: 'refused'; reason: string }
  /** A well-formed message: the command answer it carries, and the new state when what the printer shows changed. */
  | { kind: 'taken'; reply: Json | null; state: PrinterState | null };

export class BambuReports {
  private tracked: BambuTracked | null = null;
  /** The merged report the current state was made of (its untouched parts are reused by the next mapping). */
  private mappedPrint: BambuTracked['print'] | null = null;
  private mappedVersion: VersionInfo | null = null;
  private mappedCancelled = false;
  private readonly attention = new AttentionMemo();
  private readonly repeatedAms = new RepeatedAms();
  version: VersionInfo | null = null;
  current: PrinterState | null = null;
  dropped = 0;
  /**
   * A new link's reports are merged but not shown until its first full report (the pushall answer): a busy
   * printer answers pushall late, and its deltas before it lack the print (subtask_name, gcode_file) and the
   * trays, so a new driver showed "printing" without the job and without its AMS, and a reconnected one the
   * last link's print with the new link's progress. The driver ends the wait after a bounded time (release()).
   */
  private awaitingFull = false;

  /**
   * `cancelledRun`: whether a print is the run the service last saw cancelled on this printer (DriverConfig
   * `cancelled_run`), asked once, by the first state mapped. The printer shows a cancel (print_error 50348044)
   * only for a few seconds, then the run FAILED with print_error 0 until its next print: a new driver (a service
   * restart, a connection test) knew only that and showed the cancelled print as failed. Marked cancelled here,
   * the run stays stopped as long as the printer shows it (merge.ts wasCancelled).
   */
  constructor(private cancelledRun: ((print: PrinterState['job']) => boolean) | null = null) {}

  take(payload: Buffer, serial: string | null): ReportOutcome {
    const message = this.parse(payload);
    if (!isObject(message)) return { kind: 'ignored' };
    const status = isObject(message.print) && message.print.command === 'push_status' ? message.print : null;
    // Most reports are a P1's or A1's delta of scalars, temperatures moved and nothing else.
    const delta = status && this.tracked ? takeScalarDelta(this.tracked, message, status) : null;
    if (delta) {
      this.tracked = delta;
      return { kind: 'taken', reply: null, state: this.newState(serial) };
    }
    // The status report's kept keys are measured as ingestReport takes them: one walk over a full report.
    const count = { values: 1 };
    // A full report's AMS is recorded as it is kept, to stand for the same bytes next time (repeated-ams.ts).
    const ams = this.repeatedAms;
    const full = status !== null && status.msg === 0 && !ams.known;
    const refused = checkReport(message, status, count) ?? (status ? this.ingest(status, count, ams.known || full ? ams : null) : null);
    if (refused) {
      this.dropped++;
      ams.forget();
      return { kind: 'refused', reason: refused };
    }
    if (full) ams.remember(payload);
    if (status !== null && status.msg === 0) this.awaitingFull = false;
    let reply: Json | null = null;
    let changed = status !== null;
    if (!status && isObject(message.print)) reply = message.print;
    if (isObject(message.info) && message.info.command === 'get_version') {
      this.version = parseVersionInfo(message.info);
      changed = true;
    }
    return { kind: 'taken', reply, state: changed ? this.newState(serial) : null };
  }

  /** A new link is up: what it reports is shown from its first full report on, or from release(). */
  awaitFullReport(): void {
    this.awaitingFull = true;
  }

  /** Whether the current link's first full report is still awaited. */
  get awaiting(): boolean {
    return this.awaitingFull;
  }

  /** The full report is overdue: what the link's deltas said goes out (the new state, or null when none or unchanged). */
  release(serial: string | null): PrinterState | null {
    if (!this.awaitingFull) return null;
    this.awaitingFull = false;
    return this.newState(serial);
  }

  /** The parsed message (undefined when it is not JSON), its AMS standing in when its bytes are the remembered ones. */
  private parse(payload: Buffer): unknown {
    const message = parseJson(this.repeatedAms.textOf(payload));
    return this.repeatedAms.accepts(message) ? message : parseJson(payload.toString('utf8'));
  }

  /** Merges a status report; returns why it is refused (nothing merged then), or null. */
  private ingest(status: Json, count: ReportCount, kept: KeptKey | null): string | null {
    try {
      this.tracked = ingestReport(this.tracked, status, count, kept);
      return null;
    } catch (err) {
      if (err instanceof ReportRefused) return err.message;
      throw err;
    }
  }

  /**
   * Most reports move a temperature and nothing else (the deltas of P1 and A1 printers repeat a core set of
   * keys, unchanged): then the state is the last one with new temperatures, not a new mapping of the report.
   */
  private temperaturesOnly(): PrinterState | null {
    const { current, mappedPrint, tracked } = this;
    if (!current || !mappedPrint || !tracked || this.version !== this.mappedVersion || tracked.cancelled !== this.mappedCancelled) return null;
    if (!onlyTemperaturesChanged(mappedPrint, tracked.print)) return null;
    return withTemperatures(current, temperaturesOf(tracked.print));
  }

  private mapped(serial: string | null): PrinterState {
    const previous = this.current && this.mappedPrint ? { print: this.mappedPrint, state: this.current } : null;
    const context = { version: this.version, serial, attention: this.attention };
    const state = toPrinterState(this.tracked!, context, previous);
    const isCancelledRun = this.cancelledRun;
    if (!isCancelledRun) return state;
    const printError = num(this.tracked!.print.print_error);
    // A FAILED run that does not say yet which it is (deltas without its name, no pushall answer): asked again.
    if (state.state === 'failed' && !state.job && !printError) return state;
    // Else only this first state can be that run: once the printer has shown anything else, a FAILED is a later run.
    this.cancelledRun = null;
    if (state.state !== 'failed' || printError || !isCancelledRun(state.job)) return state;
    this.tracked = { ...this.tracked!, cancelled: true };
    return toPrinterState(this.tracked, context, previous);
  }

  /** The state when it differs from the last one shown. */
  private newState(serial: string | null): PrinterState | null {
    if (this.awaitingFull) return null;
    // Until a report has said what the printer is doing (the pushall answer), a merged delta would read as idle
    // and end the job the printer is still printing.
    if (!this.tracked || typeof this.tracked.print.gcode_state !== 'string') return null;
    // The merge hands back the same object when a report changed nothing it keeps but temperatures (written
    // into it in place): nothing to map again, at most new temperatures.
    const same = this.tracked.print === this.mappedPrint && this.version === this.mappedVersion && this.current;
    if (same && !this.tracked.temperaturesMoved) return null;
    const state = same ? withTemperatures(this.current!, temperaturesOf(this.tracked.print)) : (this.temperaturesOnly() ?? this.mapped(serial));
    this.mappedPrint = this.tracked.print;
    this.mappedVersion = this.version;
    this.mappedCancelled = this.tracked.cancelled;
    if (samePrinterState(state, this.current)) return null;
    this.current = state;
    return state;
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
