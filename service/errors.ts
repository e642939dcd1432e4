/**
 * Domain errors: the ground floor every capability (jobs, files, printers, ideas, statistics,
 * usage, the aggregator) throws from. An error carries the spec's error code, an HTTP status
 * hint and details; it knows nothing of HTTP itself. `http/errors.ts` turns it into the spec's
 * body `{error:{code,message,details,timestamp,request_id}}`, so domain code never imports the
 * HTTP layer above it.
 */
import type { z } from 'zod';

export class DomainError extends Error {
  constructor(
    /** The HTTP status the API answers with (404 not found, 409 conflict, 422 invalid, ...). */
    readonly status: number,
    /** The spec's error code, e.g. `PRINTER_NOT_FOUND`. */
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export const notFound = (code: string, message: string, details: Record<string, unknown> = {}) => new DomainError(404, code, message, details);
export const conflict = (code: string, message: string, details: Record<string, unknown> = {}) => new DomainError(409, code, message, details);

export type Location = 'path' | 'query' | 'body';

/** Query and path problems are 400, body problems 422; both carry the offending fields. */
/**
 * A body that fits none of a union's shapes is told the problems of the shape it meant: one without
 * unknown fields if there is one (the last such: unions list their main shape last), else the one with
 * the fewest problems.
 */
function meantBranch(issue: z.core.$ZodIssue): z.core.$ZodIssue[] {
  if (issue.code !== 'invalid_union' || !issue.errors?.length) return [issue];
  const branches = issue.errors;
  const clean = branches.filter((b) => !b.some((i) => i.code === 'unrecognized_keys'));
  const chosen = clean.length ? clean[clean.length - 1] : [...branches].sort((a, b) => a.length - b.length)[0];
  return chosen.map((i) => ({ ...i, path: [...issue.path, ...i.path] }) as z.core.$ZodIssue).flatMap(meantBranch);
}

export function validationError(location: Location, error: z.ZodError): DomainError {
  const fields = error.issues.flatMap(meantBranch).flatMap((issue) => {
    const base = issue.path.map(String).join('.');
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({ field: base ? `${base}.${key}` : key, message: 'unknown field', code: 'unknown_field' }));
    }
    return [{ field: base || '(root)', message: issue.message, code: issue.code }];
  });
  const list = fields.map((f) => `${f.field}: ${f.message}`).join('; ');
  return new DomainError(location === 'body' ? 422 : 400, 'VALIDATION_ERROR', `Invalid ${location === 'path' ? 'path parameter' : location}: ${list}`, {
    location,
    fields,
  });
}
