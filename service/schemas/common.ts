/** Building blocks shared by the resource schemas. */
import { z } from 'zod';

export const timestamp = z.string().meta({ format: 'date-time', description: 'ISO 8601 timestamp' });
export const nullableTimestamp = timestamp.nullable();

/** A query flag: `true`/`false` (or `1`/`0`). */
export const queryBoolean = z
  .enum(['true', 'false', '1', '0'])
  .transform((v) => v === 'true' || v === '1')
  .meta({ description: 'true or false' });

/** Whether the YYYY-MM-DD at the start of `v` is a day of the calendar (Date.parse rolls 2026-02-30 over to March 2). */
function isCalendarDay(v: string): boolean {
  const [y, m, d] = v.slice(0, 10).split('-').map(Number);
  const day = new Date(Date.UTC(y, m - 1, d));
  return day.getUTCFullYear() === y && day.getUTCMonth() === m - 1 && day.getUTCDate() === d;
}

/** A calendar date (YYYY-MM-DD) or a full ISO 8601 timestamp. */
export const queryDate = z
  .string()
  .refine((v) => /^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(v) && !Number.isNaN(Date.parse(v)) && isCalendarDay(v), {
    message: 'must be an ISO date (YYYY-MM-DD) or timestamp',
  })
  .meta({ description: 'ISO 8601 date (YYYY-MM-DD) or timestamp' });

/**
 * A number in a path or a query: decimal digits (a sign, a fraction), nothing else. z.coerce.number() would read
 * "0x10" as 16, "1e1" as 10 and " 1" as 1, so one job had many URLs (DELETE /jobs/0x1 deleted job 1). Any other
 * text reaches `schema` as a string and is refused there; the OpenAPI document shows `schema` as before.
 */
export const decimalParam = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (typeof v === 'string' && /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v), schema);

export const pageQuery = {
  page: decimalParam(z.number().int().min(1).max(1_000_000).default(1)).meta({ description: 'Page number, from 1' }),
  limit: decimalParam(z.number().int().min(1).max(100).default(50)).meta({ description: 'Items per page (at most 100)' }),
};

export const Pagination = z.object({
  page: z.number().int(),
  limit: z.number().int(),
  total_items: z.number().int(),
  total_pages: z.number().int(),
  has_next: z.boolean(),
  has_previous: z.boolean(),
});

export const ErrorBody = z
  .object({
    error: z.object({
      code: z.string().meta({ description: 'Machine-readable code, e.g. VALIDATION_ERROR, PRINTER_OFFLINE' }),
      message: z.string(),
      details: z.record(z.string(), z.unknown()).meta({ description: 'Context, e.g. the offending fields' }),
      timestamp,
      request_id: z.string().meta({ description: 'Also sent as the X-Request-Id header and logged' }),
    }),
  })
  .meta({ description: 'Every error response has this body' });

export const MessageResponse = z.object({ message: z.string() });

/** Free-form JSON object with a size cap, so that one request cannot bloat a row. */
export function boundedObject(maxBytes: number) {
  return z
    .record(z.string(), z.unknown())
    .refine(
      (v) => {
        // Nesting deep enough to overflow JSON.stringify's stack is refused like an oversized value (not a 500).
        try {
          return JSON.stringify(v).length <= maxBytes;
        } catch {
          return false;
        }
      },
      { message: `must be at most ${maxBytes} bytes as JSON` },
    );
}

/** A finite, non-negative number (money, grams...). */
export const amount = z.number().finite().min(0).max(1e12);
