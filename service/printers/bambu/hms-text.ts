/**
 * Bambu Lab's own words for HMS and print_error codes, from hms-codes.json (its header names the source and
 * licence; scripts/build-hms-codes.js regenerates it). The table is read on the first lookup, not at start-up,
 * and a code it does not hold keeps the module + severity wording the service always had.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { AttentionCause, AttentionSeverity, AttentionText } from '../attention';
import { splitVendorText } from '../attention';

interface Wording {
  en: string;
  de?: string;
  wiki?: string;
  models?: Record<string, { en: string; de?: string }>;
}

interface CodeTable {
  hms: Record<string, Wording>;
  print_error: Record<string, Wording>;
}

let table: CodeTable | null = null;

function codes(): CodeTable {
  if (table) return table;
  try {
    const parsed = JSON.parse(fs.readFileSync(path.join(__dirname, 'hms-codes.json'), 'utf8')) as Partial<CodeTable>;
    table = { hms: parsed.hms ?? {}, print_error: parsed.print_error ?? {} };
  } catch {
    // A package without the table still names the module and severity.
    table = { hms: {}, print_error: {} };
  }
  return table;
}

const hex4 = (n: number) => (n & 0xffff).toString(16).toUpperCase().padStart(4, '0');

/** HMS entry {attr, code} -> "0700_2000_0002_0001" as the Bambu wiki and apps print it. */
export function hmsCode(attr: number, code: number): string {
  return `${hex4(attr >>> 16)}_${hex4(attr)}_${hex4(code >>> 16)}_${hex4(code)}`;
}

/** print_error -> "0300_400C". */
export function printErrorCode(error: number): string {
  return `${hex4(error >>> 16)}_${hex4(error)}`;
}

const SEVERITIES: Record<number, AttentionSeverity> = { 1: 'fatal', 2: 'serious', 3: 'common', 4: 'info' };
const HMS_MODULE: Record<number, string> = { 0x03: 'motion controller', 0x05: 'mainboard', 0x07: 'AMS', 0x08: 'toolhead', 0x0c: 'camera / AI monitoring', 0x12: 'AMS lite' };

export function hmsSeverityNumber(code: number): number {
  return (code >>> 16) & 0xffff;
}

export function hmsSeverity(code: number): AttentionSeverity {
  return SEVERITIES[hmsSeverityNumber(code)] ?? 'common';
}

/** Our model names -> the table's ("A1 mini" -> "A1MINI", "H2D Pro" -> "H2DPRO"). */
function tableModel(model: string | null): string | null {
  return model ? model.toUpperCase().replace(/[^A-Z0-9]/g, '') : null;
}

const WIKI = 'https://wiki.bambulab.com/en';
const SEE_SCREEN = { en: "See the printer's screen or the Bambu Handy app.", de: 'Siehe Bildschirm des Druckers oder die Bambu Handy App.' };

function worded(w: Wording, model: string | null, fallback: { en: string; de: string }): { en: AttentionText; de?: AttentionText } {
  const variant = (model && w.models?.[model]) || null;
  const en = variant?.en ?? w.en;
  const de = variant ? variant.de : w.de;
  return { en: splitVendorText(en, fallback.en), ...(de ? { de: splitVendorText(de, fallback.de) } : {}) };
}

/** One HMS entry as a cause: the vendor's sentence for this printer model, or module + severity when unknown. */
export function describeHms(attr: number, code: number, model: string | null): AttentionCause {
  const id = hmsCode(attr, code);
  const severity = hmsSeverity(code);
  const known = codes().hms[id.replace(/_/g, '')];
  if (known) {
    const help = known.wiki ? { en: `See ${WIKI}/${known.wiki}/troubleshooting/hmscode/${id}`, de: `Siehe ${WIKI}/${known.wiki}/troubleshooting/hmscode/${id}` } : SEE_SCREEN;
    return { code: id, severity, source: 'hms', text: worded(known, tableModel(model), help) };
  }
  const module = HMS_MODULE[(attr >>> 24) & 0xff] ?? 'printer';
  return {
    code: id,
    severity,
    source: 'hms',
    text: {
      en: { message: `${module} reports HMS ${id} (${severity})`, action: SEE_SCREEN.en },
      de: { message: `${module === 'printer' ? 'Drucker' : module} meldet HMS ${id} (${severity})`, action: SEE_SCREEN.de },
    },
  };
}

/** A print_error as a cause (it stops or pauses the print: serious). */
export function describePrintError(error: number, model: string | null): AttentionCause {
  const id = printErrorCode(error);
  const known = codes().print_error[id.replace(/_/g, '')];
  if (known) return { code: id, severity: 'serious', source: 'print_error', text: worded(known, tableModel(model), SEE_SCREEN) };
  return {
    code: id,
    severity: 'serious',
    source: 'print_error',
    text: { en: { message: `Print error ${id}`, action: SEE_SCREEN.en }, de: { message: `Druckfehler ${id}`, action: SEE_SCREEN.de } },
  };
}
