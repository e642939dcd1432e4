/** What the client throws: the service's error body, or a network failure. */

export interface ErrorBodyShape {
  error: { code: string; message: string; details?: Record<string, unknown>; timestamp?: string; request_id?: string };
}

/** Statuses worth another try: the printer or the service may answer later. */
const RETRYABLE_STATUS = new Set([0, 408, 429, 500, 502, 503, 504]);

export class PrintfarmError extends Error {
  override readonly name = 'PrintfarmError';

  constructor(
    /** HTTP status; 0 when no answer arrived (refused, reset, timed out). */
    readonly status: number,
    /** The spec's error code (PRINTER_OFFLINE, FILE_NOT_FOUND...), or NETWORK_ERROR / TIMEOUT / BAD_RESPONSE. */
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
    readonly requestId?: string,
  ) {
    super(message);
  }

  /** Network errors, timeouts, 429 and 5xx: trying again may work. 4xx answers will not change. */
  get retryable(): boolean {
    return RETRYABLE_STATUS.has(this.status);
  }

  /** A route the running service does not have (an older or newer service version). */
  get missingRoute(): boolean {
    return this.status === 404 && this.code === 'NOT_FOUND';
  }

  toJSON(): Record<string, unknown> {
    return { status: this.status, code: this.code, message: this.message, details: this.details, request_id: this.requestId };
  }

  static fromBody(status: number, body: unknown, fallback: string): PrintfarmError {
    const err = (body as Partial<ErrorBodyShape> | undefined)?.error;
    if (err && typeof err.code === 'string' && typeof err.message === 'string') {
      return new PrintfarmError(status, err.code, err.message, err.details ?? {}, err.request_id);
    }
    return new PrintfarmError(status, status >= 500 ? 'SERVER_ERROR' : 'HTTP_ERROR', fallback);
  }
}
