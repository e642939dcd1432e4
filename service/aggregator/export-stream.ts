/**
 * GET /stats/export written as it is read: a page of rows at a time, waiting for the client to take each
 * before the next is read. Built whole in memory (every submission parsed, then one JSON text of them),
 * it needed several times the database's size in heap: the submissions of a year of many installations,
 * which senders alone decide, would take the service down with the export.
 */
import type { Response } from 'express';
import type { AggregatorReads } from './reads';

const PAGE = 500;

/** Writes a chunk; resolves when the client can take more. False when the client went away. */
function writer(res: Response): (chunk: string) => Promise<boolean> {
  return async (chunk) => {
    if (res.destroyed) return false;
    if (res.write(chunk)) return true;
    await new Promise<void>((resolve) => {
      const done = () => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
    });
    return !res.destroyed;
  };
}

/** The export's JSON ({exported_at, installations, submissions}, as the Export schema describes), streamed to `res`. */
export async function streamExport(reads: AggregatorReads, res: Response, exportedAt: string): Promise<void> {
  try {
    await writeExport(reads, res, exportedAt);
  } catch (err) {
    // Past the first chunk no error body can follow: cut the connection, so the client never takes a cut export for a whole one.
    if (res.headersSent) res.destroy();
    throw err;
  }
}

async function writeExport(reads: AggregatorReads, res: Response, exportedAt: string): Promise<void> {
  const write = writer(res);
  res.status(200).setHeader('Content-Type', 'application/json; charset=utf-8');
  if (!(await write(`{"exported_at":${JSON.stringify(exportedAt)},"installations":[`))) return;
  let comma = '';
  for (let after: { first_seen_ms: number; installation_id: string } | null = null; ; ) {
    const page = await reads.installationsPage(after, PAGE);
    for (const { first_seen_ms: _f, last_seen_ms: _l, ...i } of page) {
      if (!(await write(comma + JSON.stringify(i)))) return;
      comma = ',';
    }
    if (page.length < PAGE) break;
    after = page[page.length - 1];
  }
  if (!(await write('],"submissions":['))) return;
  comma = '';
  for (let afterId = 0; ; ) {
    const page = await reads.submissionsPage(afterId, PAGE);
    for (const { received_ms: _r, error_count: _e, submitted_ms: _s, period_start_ms: _ps, period_end_ms: _pe, ...s } of page) {
      if (!(await write(comma + JSON.stringify(s)))) return;
      comma = ',';
    }
    if (page.length < PAGE) break;
    afterId = page[page.length - 1].id;
  }
  res.end(']}');
}
