/**
 * The one error shape of the API: `{error:{code,message,details,timestamp,request_id}}`.
 * Domain code throws a DomainError (`service/errors.ts`; ApiError here is the same class) or lets
 * a database error escape; the error middleware turns anything into that body with the right
 * status, and never leaks a stack trace.
 */
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ErrorRequestHandler, Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { isDatabaseError, isUnstorableText } from '../db/connection';
import { DomainError as ApiError, notFound } from '../errors';

/** The API's error is the domain's error: one class, so `instanceof` holds on both floors. */
export { DomainError as ApiError, notFound, conflict, validationError, type Location } from '../errors';

export function errorBody(res: Response, code: string, message: string, details: Record<string, unknown>) {
  return errorPayload(code, message, details, String(res.locals.requestId ?? ''));
}

export function errorPayload(code: string, message: string, details: Record<string, unknown>, requestId: string) {
  return { error: { code, message, details, timestamp: new Date().toISOString(), request_id: requestId } };
}

export function sendError(res: Response, err: ApiError): void {
  if (res.headersSent) return;
  res.status(err.status).json(errorBody(res, err.code, err.message, err.details));
}

export const unknownRoute: RequestHandler = (req, _res, next) => {
  next(notFound('NOT_FOUND', `No route ${req.method} ${req.path}`, { method: req.method, path: req.path }));
};

/** Turns whatever was thrown into the spec's error body. */
export function errorHandler(log: Logger): ErrorRequestHandler {
  return (err, req: Request, res: Response, _next) => {
    sendError(res, toApiError(err, req, log));
  };
}

function toApiError(err: unknown, req: Request, log: Logger): ApiError {
  if (err instanceof ApiError) return err;
  const e = err as { type?: string; status?: number; message?: string; limit?: number; body?: unknown };
  // body-parser's errors carry a `type`.
  if (e.type === 'entity.parse.failed') {
    return new ApiError(422, 'VALIDATION_ERROR', 'Request body is not valid JSON', { location: 'body', reason: e.message });
  }
  if (e.type === 'entity.too.large') {
    return new ApiError(413, 'PAYLOAD_TOO_LARGE', `Request body exceeds ${e.limit} bytes`, { location: 'body', limit_bytes: e.limit });
  }
  if (e.type === 'encoding.unsupported' || e.type === 'charset.unsupported') {
    return new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', e.message ?? 'Unsupported body encoding', { location: 'body' });
  }
  if (isUnstorableText(err)) {
    // A NUL in a path id or a query filter is a bad parameter (400, like any other), not a bad body.
    // (req.params is gone by the time the error reaches this app-level handler: the raw path still says it.)
    const location = /%00/.test(req.path) ? 'path' : hasNul(req.query) ? 'query' : 'body';
    return new ApiError(location === 'body' ? 422 : 400, 'VALIDATION_ERROR', 'Text must not contain the NUL character (U+0000): the PostgreSQL database cannot store it', {
      location,
      reason: 'nul_character',
    });
  }
  if (isDatabaseError(err)) {
    log.error({ err, req_id: req.res?.locals.requestId }, 'database error');
    const code = (err as { code?: string }).code;
    // SQLite's code (SQLITE_...), or PostgreSQL's SQLSTATE (five characters).
    return new ApiError(500, 'DATABASE_ERROR', 'A database operation failed', code?.startsWith('SQLITE_') ? { sqlite_code: code } : { sqlstate: code ?? null });
  }
  // The router's percent-decoding of a path parameter (e.g. /printers/%E0%A4%A) fails like any other bad path parameter.
  if ((err as Error | undefined)?.name === 'URIError' && e.status === 400) {
    return new ApiError(400, 'VALIDATION_ERROR', e.message ?? 'Invalid path parameter', { location: 'path' });
  }
  if (typeof e.status === 'number' && e.status >= 400 && e.status < 500) {
    return new ApiError(e.status, 'BAD_REQUEST', e.message ?? 'Bad request', {});
  }
  log.error({ err, req_id: req.res?.locals.requestId }, 'unhandled error');
  return new ApiError(500, 'INTERNAL_ERROR', 'Internal server error', {});
}

/** Whether a parsed query object holds a NUL character in any of its values (bounded: express caps both). */
function hasNul(values: unknown): boolean {
  if (typeof values === 'string') return values.includes('\u0000');
  if (Array.isArray(values)) return values.some(hasNul);
  if (values && typeof values === 'object') return Object.values(values).some(hasNul);
  return false;
}

/**
 * Requests that Node's HTTP parser refuses (headers over its limit, a path of 20 kB, broken HTTP) never
 * reach express. Node would answer them with an empty 400/431; this gives them the error body too.
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  // As Node does: never write into a response that has already started on this connection.
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const code = status === 431 ? 'HEADERS_TOO_LARGE' : status === 408 ? 'REQUEST_TIMEOUT' : 'BAD_REQUEST';
  const requestId = randomUUID();
  const body = JSON.stringify({
    error: { code, message: `Malformed HTTP request (${STATUS_CODES[status]})`, details: { reason: err.code ?? 'unknown' }, timestamp: new Date().toISOString(), request_id: requestId },
  });
  const answer =
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
    `X-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`;
  // The client already ended its side (a request cut short: HPE_INVALID_EOF_STATE), so nothing is left to read
  // and closing now loses nothing. end() would wait for a shutdown that, over TLS (the aggregator) to a client
  // that also reset, never completes: the socket and its descriptor stayed open until requestTimeout (5 min).
  if (socket.readableEnded) {
    socket.write(answer);
    socket.destroy();
    return;
  }
  socket.end(answer);
}
