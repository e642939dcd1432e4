/** Small value helpers for Bambu reports: numbers and strings drift between types across firmware versions. */
export type Json = Record<string, unknown>;

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Numbers drift between number and string across firmware versions: coerce. */
export function num(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'string' && value.trim() !== '') {
    const n = Number(value);
    return Number.isFinite(n) ? n : null;
  }
  return null;
}

export function str(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return null;
}

/**
 * Whether two parsed JSON values hold the same data. Recursive: only called on values whose depth
 * pickUsedKeys has already bounded.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const x = a as Json;
  const y = b as Json;
  let keys = 0;
  for (const key in x) {
    keys++;
    if (!Object.prototype.hasOwnProperty.call(y, key) || !sameJson(x[key], y[key])) return false;
  }
  for (const _ in y) keys--;
  return keys === 0;
}
