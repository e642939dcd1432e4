/**
 * `/api/v1/files/{storage}/{path}` of the simulated PrusaLink printer
 * (PROTOCOLS.md §6): metadata (GET/HEAD), uploads (PUT, with `Overwrite` and
 * `Print-After-Upload`), print an existing file (POST), delete (DELETE).
 *
 * Starting a print (PUT with `Print-After-Upload: ?1`, or POST) is refused
 * with 409 unless the printer could start one from its screen: not printing
 * or paused, not BUSY, no ATTENTION or ERROR waiting, and the screen at home,
 * print preview or print finished (the control API's /not-ready leaves it in
 * a menu). A refused PUT stores nothing. Each accepted start is a new job id.
 */
import type http from 'node:http';
import type { FsEntry, SimStorage } from './files';
import { HttpError, isAncestor, readBodyPaced, sendEmpty, sendJson, sfBool } from './http-util';
import type { PrusaSimulator } from './simulator';

const MAX_UPLOAD = 256 * 1024 * 1024;

export function refs(storage: SimStorage, f: FsEntry) {
  const path = storage.pathOf(f);
  return { icon: `/thumb/s${path}`, thumbnail: `/thumb/l${path}`, download: path };
}

export function entryBody(storage: SimStorage, f: FsEntry, withChildren: boolean): Record<string, unknown> {
  if (f.type === 'FOLDER') {
    const body: Record<string, unknown> = { name: f.sfn, display_name: f.lfn, ro: false, type: 'FOLDER', m_timestamp: f.mtime };
    if (withChildren) body.children = (f.children ?? []).map((c) => entryBody(storage, c, false));
    return body;
  }
  return { name: f.sfn, display_name: f.lfn, ro: false, type: f.type, m_timestamp: f.mtime, size: f.data?.length ?? 0, refs: refs(storage, f) };
}

export async function handleFiles(
  sim: PrusaSimulator,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  method: string,
  storageName: string,
  segments: string[],
  trailingSlash: boolean,
): Promise<void> {
  if (storageName !== sim.storage.name) {
    req.resume();
    throw new HttpError(404, 'Not Found', `No storage ${storageName}`);
  }
  const entry = sim.storage.resolve(segments);
  const p = sim.printer;
  const printing = (e: FsEntry) => p.busy && p.job !== null && (p.job.file === e || isAncestor(e, p.job.file));

  if (method === 'PUT') {
    if (segments.length === 0) throw new HttpError(409, 'Conflict', 'Cannot write the storage root');
    if (trailingSlash) {
      req.resume();
      if (entry) throw new HttpError(409, 'Conflict', 'Already exists');
      if (!sim.storage.mkdirs(segments)) throw new HttpError(409, 'Conflict', 'A file is in the way');
      return sendEmpty(res, 201);
    }
    if (entry && !sfBool(req.headers.overwrite)) {
      req.resume();
      throw new HttpError(409, 'Conflict', 'File already exists');
    }
    if (entry && printing(entry)) {
      req.resume();
      throw new HttpError(409, 'Conflict', 'File is being printed');
    }
    const printAfter = sfBool(req.headers['print-after-upload']);
    if (printAfter) {
      // Buddy refuses before taking the body: nothing is stored, the client may send it again later.
      const refusal = sim.startRefusal();
      if (refusal) {
        req.resume();
        sim.startsRefused++;
        throw new HttpError(409, 'Conflict', refusal);
      }
    }
    // Uploads crawl at the transfer_bytes_per_sec fault too (a kill mid-upload can be tested on Prusa).
    const data = await readBodyPaced(req, MAX_UPLOAD, () => sim.faults.transfer_bytes_per_sec, sim.timers);
    const written = sim.storage.write(segments, data);
    if (!written) throw new HttpError(409, 'Conflict', 'A file or folder is in the way');
    if (printAfter && written.type === 'PRINT_FILE') {
      // The printer may have changed its mind while the body arrived.
      const refusal = sim.startRefusal();
      if (refusal) {
        sim.startsRefused++;
        throw new HttpError(409, 'Conflict', refusal);
      }
      sim.startJob(written, 'upload');
    }
    return sendEmpty(res, 201);
  }

  req.resume();
  if (!entry) throw new HttpError(404, 'Not Found', 'File not found');

  switch (method) {
    case 'GET':
      return sendJson(res, 200, entryBody(sim.storage, entry, true));
    case 'HEAD':
      res.writeHead(200, { 'Read-Only': 'false', 'Currently-Printing': printing(entry) ? 'true' : 'false' });
      res.end();
      return;
    case 'POST':
      if (sim.faults.reject_commands) throw new HttpError(409, 'Conflict', 'The printer refuses commands right now');
      if (entry.type !== 'PRINT_FILE') throw new HttpError(409, 'Conflict', 'Not a printable file');
      {
        const refusal = sim.startRefusal();
        if (refusal) {
          sim.startsRefused++;
          throw new HttpError(409, 'Conflict', refusal);
        }
      }
      sim.startJob(entry, 'api');
      return sendEmpty(res, 204);
    case 'DELETE':
      if (entry === sim.storage.root) throw new HttpError(409, 'Conflict', 'Cannot delete the storage root');
      if (printing(entry)) throw new HttpError(409, 'Conflict', 'File is being printed');
      if (entry.type === 'FOLDER' && (entry.children?.length ?? 0) > 0 && !sfBool(req.headers.force))
        throw new HttpError(409, 'Conflict', 'Folder is not empty');
      sim.storage.remove(entry);
      return sendEmpty(res, 204);
    default:
      throw new HttpError(405, 'Method Not Allowed', `${method} is not allowed here`);
  }
}

/** GET/HEAD of refs.download: the file's bytes, throttled by the `transfer_bytes_per_sec` fault. */
export function download(sim: PrusaSimulator, req: http.IncomingMessage, res: http.ServerResponse, segments: string[]): void {
  req.resume();
  const entry = sim.storage.resolve(segments);
  if (!entry || entry.type === 'FOLDER' || !entry.data) throw new HttpError(404, 'Not Found', 'File not found');
  const data = entry.data;
  res.writeHead(200, {
    'Content-Type': 'application/octet-stream',
    'Content-Length': String(data.length),
    'Content-Disposition': `attachment; filename="${entry.sfn}"`,
  });
  if (req.method === 'HEAD') return void res.end();
  const rate = sim.faults.transfer_bytes_per_sec;
  if (!rate) return void res.end(data);

  // Throttled: a slice every 50 ms.
  const slice = Math.max(1, Math.floor(rate / 20));
  let offset = 0;
  let timer: NodeJS.Timeout | null = null;
  const stop = () => {
    if (timer) {
      clearTimeout(timer);
      sim.timers.delete(timer);
    }
    timer = null;
  };
  const step = () => {
    if (timer) sim.timers.delete(timer);
    timer = null;
    if (res.destroyed) return;
    // /stall mid-transfer: the connection stays open and silent (a printer that hangs during a download).
    if (sim.isStalled) {
      timer = setTimeout(step, 50);
      sim.timers.add(timer);
      return;
    }
    const chunk = data.subarray(offset, offset + slice);
    offset += chunk.length;
    if (offset >= data.length) return void res.end(chunk);
    res.write(chunk);
    timer = setTimeout(step, 50);
    sim.timers.add(timer);
  };
  res.once('close', stop);
  step();
}
