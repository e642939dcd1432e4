/**
 * The checks a Prusa file makes of its printer before it prints: `M862.3 P
 * "MK4S"` (printer model) and `M862.1 P0.4` (nozzle diameter). The firmware
 * refuses a file whose model check fails, so these lines are the surest
 * statement of the printer a file is for; a file whose slicer profile was
 * detached carries them even when its `printer_model` is empty.
 *
 * Only the start of the G-code is read (the checks are in the start G-code):
 * at most HEAD_BYTES of a .gcode and HEAD_BYTES of decoded BGCode G-code, and
 * the scan stops at the first layer.
 */
import fs from 'node:fs/promises';
import { readBgcode } from '../preview/bgcode';

export interface FirmwareChecks {
  /** The model of `M862.3 P`, as written ("MK4S", "COREONE"). */
  model: string | null;
  /** The diameter of `M862.1 P`, millimetres. */
  nozzle: number | null;
}

const HEAD_BYTES = 4 * 1024 * 1024;
const MODEL_CHECK = /^\s*M862\.3\s+P\s*"?\s*([A-Za-z0-9.+_ -]{1,40}?)\s*"?\s*(?:;.*)?$/i;
const NOZZLE_CHECK = /^\s*M862\.1\b[^;]*?\bP\s*([0-9]*\.?[0-9]+)/i;
/** The print itself has begun: no check comes after this. */
const FIRST_LAYER = /^;\s*(LAYER_CHANGE|LAYER:\s*0|CHANGE_LAYER)\b/i;

/** Collects checks line by line; `line` returns false once the scan is over. */
class CheckScanner {
  readonly found: FirmwareChecks = { model: null, nozzle: null };
  private carry = '';
  private over = false;

  push(text: string): boolean {
    if (this.over) return false;
    const lines = (this.carry + text).split('\n');
    this.carry = (lines.pop() ?? '').slice(-4096);
    for (const line of lines) if (!this.line(line)) return false;
    return true;
  }

  end(): FirmwareChecks {
    if (!this.over && this.carry) this.line(this.carry);
    return this.found;
  }

  private line(line: string): boolean {
    if (FIRST_LAYER.test(line)) return this.stop();
    if (line.length > 200 || line.startsWith(';')) return true;
    const model = this.found.model === null ? MODEL_CHECK.exec(line) : null;
    if (model) this.found.model = model[1].trim() || null;
    const nozzle = this.found.nozzle === null ? NOZZLE_CHECK.exec(line) : null;
    if (nozzle) {
      const d = Number(nozzle[1]);
      if (d > 0 && d < 5) this.found.nozzle = d;
    }
    return this.found.model !== null && this.found.nozzle !== null ? this.stop() : true;
  }

  private stop(): false {
    this.over = true;
    return false;
  }
}

/** The checks in the head of a .gcode file. */
export async function gcodeFirmwareChecks(file: string): Promise<FirmwareChecks> {
  const handle = await fs.open(file, 'r');
  try {
    const scanner = new CheckScanner();
    const buf = Buffer.allocUnsafe(256 * 1024);
    for (let pos = 0; pos < HEAD_BYTES; ) {
      const { bytesRead } = await handle.read(buf, 0, buf.length, pos);
      if (bytesRead === 0) break;
      pos += bytesRead;
      if (!scanner.push(buf.toString('latin1', 0, bytesRead))) break;
    }
    return scanner.end();
  } finally {
    await handle.close();
  }
}

/** The checks in the first G-code blocks of a .bgcode file (decoded: heatshrink, MeatPack). */
export async function bgcodeFirmwareChecks(file: string): Promise<FirmwareChecks> {
  const scanner = new CheckScanner();
  await readBgcode(file, { gcode: 'decode', maxGcodeText: 0, maxDecodedBytes: HEAD_BYTES, onGcode: (text) => scanner.push(text) });
  return scanner.end();
}
