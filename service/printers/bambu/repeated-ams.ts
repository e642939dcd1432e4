/**
 * An X1 repeats its whole AMS in every full report (sixteen trays of some twenty-five fields: 9 KB of a 12 KB
 * report), byte for byte until a tray changes. When a report's `"ams":{...}` bytes are the ones this printer
 * sent in its last full report, they are neither parsed nor walked again: the report is parsed with a marker in
 * their place, and what was kept of those bytes then stands for them (limits.ts takeUsedKeys). Only the exact
 * bytes count; anything else is parsed as usual. What stands in was sent by the same printer, measured and cut
 * to the bounds then, so a printer can at worst be shown what it said before.
 */
import type { KeptKey } from './limits';
import { isObject } from './values';

const KEY = Buffer.from('"ams":{');
/** What the remembered bytes are replaced by before parsing (a JSON string no real report holds). */
const MARKER = '\u0000repeated ams';
const MARKER_JSON = JSON.stringify(MARKER);
/** Largest AMS remembered (a real one of four units is about 10 KB): the memory one printer may hold here. */
const MAX_REMEMBERED_BYTES = 64 * 1024;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const PRINT_KEY = '"print":';

export class RepeatedAms implements KeptKey {
  readonly key = 'ams';
  /** Set by textOf: this payload's AMS is the remembered one (value and values stand for it). */
  known = false;
  value: unknown = undefined;
  values = 0;
  private bytes: Buffer | null = null;

  /** The text to parse: the payload's, with the AMS bytes replaced by the marker when they are the remembered ones. */
  textOf(payload: Buffer): string {
    this.known = false;
    const bytes = this.bytes;
    // A payload shorter than the remembered AMS (a P1's delta) is not searched.
    const at = bytes !== null && payload.length > bytes.length ? keyAt(payload) : -1;
    if (bytes === null || at < 0) return payload.toString('utf8');
    const start = at + KEY.length - 1;
    const end = start + bytes.length;
    if (end > payload.length || payload.compare(bytes, 0, bytes.length, start, end) !== 0) return payload.toString('utf8');
    this.known = true;
    return payload.toString('utf8', 0, start) + MARKER_JSON + payload.toString('utf8', end);
  }

  /**
   * Whether `message`, parsed from textOf's text, may be used: nothing was replaced, or the marker stands where
   * a status report's AMS belongs. Otherwise the payload is to be parsed whole, and the bytes are forgotten.
   */
  accepts(message: unknown): boolean {
    if (!this.known) return true;
    if (isObject(message) && isObject(message.print) && message.print.command === 'push_status' && message.print.ams === MARKER) return true;
    this.forget();
    return false;
  }

  /**
   * After a full report was taken, its AMS parsed (takeUsedKeys recorded value and values): remembers the bytes
   * they were made of, found again in the payload.
   */
  remember(payload: Buffer): void {
    this.bytes = null;
    const at = keyAt(payload);
    const end = at < 0 ? -1 : printAmsEnd(payload, at);
    if (end >= 0) this.bytes = Buffer.from(payload.subarray(at + KEY.length - 1, end));
  }

  /** A refused or unreadable report: what was recorded may not stand for anything. */
  forget(): void {
    this.bytes = null;
    this.known = false;
    this.value = undefined;
    this.values = 0;
  }
}

/**
 * Where `"ams":{` starts as a key, or -1. Only at a key's start (after `{` or `,`): a quote there is never
 * inside a string, so the key is exactly `ams` and the `{` opens its value. Which object holds it is read by
 * printAmsEnd (remember) and checked after parsing (accepts).
 */
function keyAt(payload: Buffer): number {
  const at = payload.indexOf(KEY);
  if (at <= 0) return -1;
  const before = payload[at - 1];
  return before === OPEN_BRACE || before === COMMA ? at : -1;
}

/**
 * The end (exclusive) of the value of the key starting at `at` when that key is the print object's own
 * (`{"print":{...,"ams":{`), else -1; also -1 when the value runs over MAX_REMEMBERED_BYTES. The payload is
 * read from its start, depth and strings followed byte by byte, the last key met at the top level remembered.
 */
function printAmsEnd(payload: Buffer, at: number): number {
  const stop = Math.min(payload.length, at + KEY.length - 1 + MAX_REMEMBERED_BYTES);
  let depth = 0;
  let inString = false;
  let keyStart = -1;
  let topKey = -1;
  for (let i = 0; i < stop; i++) {
    if (i === at && !(depth === 2 && topKey >= 0 && payload.toString('latin1', topKey, topKey + PRINT_KEY.length) === PRINT_KEY)) return -1;
    const c = payload[i];
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
      // A string at the top level right after `{` or `,` is a key (any other, a value or a spaced key, is not read).
      if (depth === 1) keyStart = payload[i - 1] === OPEN_BRACE || payload[i - 1] === COMMA ? i : -1;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth === 2) topKey = keyStart;
    } else if ((c === CLOSE_BRACE || c === CLOSE_BRACKET) && --depth === 2 && i > at) return i + 1;
  }
  return -1;
}
