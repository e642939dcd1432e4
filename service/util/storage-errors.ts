/** Recognising a full disk, whoever was writing (a download, an upload). */

/** Errors of our own disk (full, over quota, over the file-size limit): never the printer's fault, never worth a retry. */
const STORAGE_FULL_CODES = new Set(['ENOSPC', 'EDQUOT', 'EFBIG']);

/** The storage error code of `err` (or its cause), e.g. "ENOSPC", else null. Drivers let such errors through unchanged. */
export function storageFullCode(err: unknown): string | null {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && STORAGE_FULL_CODES.has(code)) return code;
  }
  return null;
}
