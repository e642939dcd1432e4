/**
 * What a printer needs from a person, in one shape for every printer family: the causes a driver reads from
 * the printer's own reports (Bambu HMS and print_error, PrusaLink ATTENTION/ERROR, a Klipper shutdown or print error), worded for people in
 * English and, where the vendor publishes it, German. The farm-wide book (service/attention/) adds `since`.
 */
export type AttentionSeverity = 'fatal' | 'serious' | 'common' | 'info';
export type AttentionSource = 'hms' | 'print_error' | 'prusalink' | 'klipper';
export type AttentionLanguage = 'en' | 'de';

export const ATTENTION_SEVERITIES: readonly AttentionSeverity[] = ['fatal', 'serious', 'common', 'info'];
export const ATTENTION_SOURCES: readonly AttentionSource[] = ['hms', 'print_error', 'prusalink', 'klipper'];

export interface AttentionText {
  /** What is wrong, as a sentence. */
  message: string;
  /** What the operator should do. */
  action: string;
}

export interface AttentionCause {
  /** The printer's own code: "0700_2000_0002_0001" (HMS), "0700_8011" (print_error), "ATTENTION"/"ERROR" (PrusaLink), "KLIPPY_SHUTDOWN"/"KLIPPY_ERROR"/"PRINT_ERROR"/"FILAMENT_RUNOUT" (Klipper). */
  code: string;
  severity: AttentionSeverity;
  source: AttentionSource;
  /** English always; German where the vendor publishes it. */
  text: { en: AttentionText; de?: AttentionText };
}

/** fatal 0 ... info 3. */
export function severityRank(severity: AttentionSeverity): number {
  const rank = ATTENTION_SEVERITIES.indexOf(severity);
  return rank < 0 ? ATTENTION_SEVERITIES.length : rank;
}

/** The text in `language`, English where the vendor has no translation. */
export function textIn(cause: AttentionCause, language: string): AttentionText {
  return (language === 'de' ? cause.text.de : undefined) ?? cause.text.en;
}

/** "Please", "Bitte" and similar sentences are what to do; the ones before them say what is wrong. */
const ACTION_START = /(?:^|(?<=[.!?;])\s+)(?=(?:please|bitte|check|prüfen|überprüfen|make sure|stellen sie sicher|you can|sie können|try|versuchen)\b)/i;

/** Splits a vendor sentence into what is wrong and what to do; `fallback` when it says nothing to do. */
export function splitVendorText(sentence: string, fallback: string): AttentionText {
  const text = sentence.replace(/\s+/g, ' ').trim();
  const at = text.search(ACTION_START);
  if (at <= 0) return { message: text, action: fallback };
  const message = text.slice(0, at).trim();
  const action = text.slice(at).trim();
  return { message, action: action || fallback };
}

/** Same causes in the same order (drivers keep the last list when nothing changed, so this is rarely asked). */
export function sameCauses(a: readonly AttentionCause[], b: readonly AttentionCause[]): boolean {
  return a.length === b.length && a.every((c, i) => c.code === b[i].code && c.source === b[i].source && c.severity === b[i].severity && c.text.en.message === b[i].text.en.message);
}

/** Worst first; ties keep their order. */
export function worstFirst<T extends { severity: AttentionSeverity }>(list: readonly T[]): T[] {
  return list
    .map((item, index) => ({ item, index }))
    .sort((a, b) => severityRank(a.item.severity) - severityRank(b.item.severity) || a.index - b.index)
    .map((e) => e.item);
}
