/**
 * The one error type of the preview library. `code` says what kind of input
 * was refused, so a caller (the files API) can map it to a message or fall
 * back to a placeholder without parsing text.
 */
export type PreviewErrorCode =
  /** The bytes are not the format they claim to be, or a structure is inconsistent. */
  | 'MALFORMED'
  /** The input ends before a structure it announces is complete. */
  | 'TRUNCATED'
  /** A stored checksum (BGCode CRC32, ZIP entry CRC32) does not match the data. */
  | 'CHECKSUM'
  /** The input exceeds a safety limit (size, entry count, compression ratio, triangle count). */
  | 'TOO_LARGE'
  /** The file is valid but carries no usable picture. */
  | 'NO_THUMBNAIL'
  /** The file type, a version or a feature (encryption, compression method) is not handled. */
  | 'UNSUPPORTED'
  /** The work was stopped: whoever asked for it has gone. */
  | 'ABORTED';

export class PreviewError extends Error {
  readonly code: PreviewErrorCode;

  constructor(code: PreviewErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PreviewError';
    this.code = code;
  }
}

export function isPreviewError(err: unknown): err is PreviewError {
  return err instanceof PreviewError;
}
