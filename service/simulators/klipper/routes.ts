/**
 * The simulated Moonraker's HTTP API: every answer wrapped in `{"result"}`,
 * errors as `{"error":{"code","message"}}`. Routes: /server/info,
 * /access/oneshot_token, /printer/info, /server/files/list,
 * /server/files/metadata, GET/DELETE /server/files/gcodes/{path}, and the
 * multipart POST /server/files/upload (root, path, checksum, print), and a
 * webcam's snapshot (/webcam/?action=snapshot) when the simulator serves one.
 */
import type http from 'node:http';
import Busboy from 'busboy';
import { renderPicture } from '../camera-picture';
import { SimGcodes } from './files';
import type { KlipperSimulator } from './simulator';

export class HttpFail extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const MAX_UPLOAD = 256 * 1024 * 1024;

export function reply(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(text)), ...headers });
  res.end(text);
}

function safePath(raw: string): string {
  let path: string;
  try {
    path = decodeURIComponent(raw);
  } catch {
    throw new HttpError400('Bad path encoding');
  }
  const segments = path.split('/').filter(Boolean);
  if (!segments.length || segments.some((s) => s === '.' || s === '..')) throw new HttpError400('Bad path');
  return segments.join('/');
}

class HttpError400 extends HttpFail {
  constructor(message: string) {
    super(400, message);
  }
}

export async function route(sim: KlipperSimulator, req: http.IncomingMessage, res: http.ServerResponse, url: URL): Promise<void> {
  const method = req.method ?? 'GET';
  const path = url.pathname;
  if (method === 'GET' && path === '/server/info') return reply(res, 200, { result: sim.serverInfo() });
  if (method === 'GET' && path === '/access/oneshot_token') {
    if (sim.options.noOneshotToken) throw new HttpFail(404, 'Not Found');
    return reply(res, 200, { result: sim.issueToken() });
  }
  if (method === 'GET' && path === '/printer/info') {
    const m = sim.machine;
    return reply(res, 200, { result: { state: m.klippy, state_message: m.klippyMessage, software_version: sim.klipperVersion } });
  }
  if (method === 'GET' && path === '/server/files/list') {
    return reply(res, 200, { result: sim.files.list().map((f) => ({ path: f.path, modified: f.modified, size: f.data.length, permissions: 'rw' })) });
  }
  if (method === 'GET' && path === '/server/files/metadata') {
    const meta = sim.files.metadata(safePath(url.searchParams.get('filename') ?? ''));
    if (!meta) throw new HttpFail(404, 'Metadata not available');
    return reply(res, 200, { result: meta });
  }
  if (method === 'POST' && path === '/server/files/upload') return upload(sim, req, res);
  if (method === 'GET' && path === '/webcam/' && sim.options.cameraServed && url.searchParams.get('action') === 'snapshot') {
    // The webcam's picture (crowsnest's snapshot): what the printer is doing, drawn.
    sim.stats.webcam_snapshots++;
    const m = sim.machine;
    const picture = renderPicture({ name: sim.name, state: m.klippy === 'ready' ? m.state : m.klippy, progress: m.fraction * 100 });
    res.writeHead(200, { 'Content-Type': 'image/jpeg', 'Content-Length': String(picture.length) });
    return void res.end(picture);
  }
  const file = /^\/server\/files\/gcodes\/(.+)$/.exec(path);
  if (file && (method === 'GET' || method === 'HEAD')) {
    const rel = safePath(file[1]);
    const data = sim.files.get(rel)?.data ?? sim.files.thumbnail(rel);
    if (!data) throw new HttpFail(404, `File ${rel} does not exist`);
    return sim.sendFile(res, data, method === 'HEAD');
  }
  if (file && method === 'DELETE') {
    const rel = safePath(file[1]);
    if (sim.machine.busy && sim.machine.filename === rel) throw new HttpFail(403, 'File currently in use');
    if (!sim.files.remove(rel)) throw new HttpFail(404, `File ${rel} does not exist`);
    return reply(res, 200, { result: { item: { path: rel, root: 'gcodes', size: 0, modified: 0, permissions: '' }, action: 'delete_file' } });
  }
  req.resume();
  throw new HttpFail(404, 'Not Found');
}

/** Reads the multipart form (fields before or after the file), checks the checksum, stores, maybe prints. */
function upload(sim: KlipperSimulator, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  return new Promise((resolve, reject) => {
    let bb: ReturnType<typeof Busboy>;
    try {
      bb = Busboy({ headers: req.headers, limits: { fileSize: MAX_UPLOAD, files: 1, fields: 20 } });
    } catch {
      req.resume();
      return reject(new HttpFail(400, 'Expected multipart/form-data'));
    }
    const fields: Record<string, string> = {};
    let name: string | null = null;
    const chunks: Buffer[] = [];
    let tooLarge = false;
    bb.on('field', (k, v) => (fields[k] = v));
    bb.on('file', (_field, stream, info) => {
      name = info.filename ?? null;
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('limit', () => (tooLarge = true));
    });
    bb.on('error', () => reject(new HttpFail(400, 'Malformed upload')));
    bb.on('close', () => {
      try {
        if (tooLarge) throw new HttpFail(413, 'File too large');
        if (!name) throw new HttpFail(400, 'No file in the upload');
        if ((fields.root ?? 'gcodes') !== 'gcodes') throw new HttpFail(400, 'Only the gcodes root takes uploads here');
        const rel = safePath([fields.path ?? '', name].filter(Boolean).join('/'));
        const data = Buffer.concat(chunks);
        if (fields.checksum && fields.checksum.toLowerCase() !== SimGcodes.sha256(data)) throw new HttpFail(422, 'File checksum mismatch');
        if (sim.machine.busy && sim.machine.filename === rel) throw new HttpFail(403, 'File currently in use');
        if (!sim.files.write(rel, data)) throw new HttpFail(507, 'No space left on the gcodes root');
        sim.stats.uploads++;
        const wantsPrint = (fields.print ?? 'false').toLowerCase() === 'true';
        const started = wantsPrint ? sim.startPrint(rel, 'upload') : false;
        const item = { path: rel, root: 'gcodes', modified: Date.now() / 1000, size: data.length, permissions: 'rw' };
        reply(res, 201, { result: { item, print_started: started, print_queued: false, action: 'create_file' } }, { Location: `/server/files/gcodes/${encodeURI(rel)}` });
        resolve();
      } catch (err) {
        reject(err);
      }
    });
    req.pipe(bb);
  });
}
