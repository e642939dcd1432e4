import type { Request, Response } from 'express';
import Busboy from 'busboy';
import fs from 'node:fs';
import type { Readable } from 'node:stream';
import type { ServiceContext } from '../context';
import type { PreviewAction } from '../files/previews';
import { MAX_UPLOAD_BYTES } from '../files/catalog';
import {
  CleanupBody,
  CleanupCandidates,
  CleanupQuery,
  CleanupResult,
  CurrentJobDownloadBody,
  CurrentJobDownloadResult,
  DownloadStarted,
  DownloadStatus,
  FileDeleted,
  FileDetail,
  FileIdParams,
  FileList,
  FileListQuery,
  RefreshBody,
  RefreshResult,
  ThumbnailResult,
  UploadResult,
} from '../schemas/files';
import { EmptyBody } from '../schemas/usage';
import { ApiError, notFound } from '../http/errors';
import { defineRoute, Reply, type AnyRoute } from '../http/route';

/**
 * Reads the one file of a multipart upload and hands its stream to `store` (never buffering it whole).
 * A form that breaks is refused only once its file is settled: a partial copy removed, a complete one `discard`ed.
 */
function readUpload(
  req: Request,
  res: Response,
  store: (name: string, stream: NodeJS.ReadableStream) => Promise<string>,
  discard: (id: string) => Promise<unknown>,
): Promise<string> {
  if (!req.is('multipart/form-data')) {
    return Promise.reject(
      new ApiError(422, 'VALIDATION_ERROR', 'Invalid body: send multipart/form-data with a "file" field', {
        location: 'body',
        fields: [{ field: 'file', message: 'required (multipart/form-data)', code: 'invalid_type' }],
      }),
    );
  }
  let busboy: ReturnType<typeof Busboy>;
  try {
    // Browsers and curl send UTF-8 file names (RFC 7578): read them as such, not as Latin-1 ("résumé", not "rÃ©sumÃ©").
    busboy = Busboy({ headers: req.headers, defParamCharset: 'utf8', limits: { files: 1, fileSize: MAX_UPLOAD_BYTES, fields: 10 } });
  } catch (err) {
    // A multipart content type without a usable boundary ("Multipart: Boundary not found").
    return Promise.reject(new ApiError(422, 'VALIDATION_ERROR', `Invalid body: ${(err as Error).message}`, { location: 'body' }));
  }
  return new Promise((resolve, reject) => {
    let seen = false;
    let result: Promise<string> | null = null;
    let fileStream: Readable | null = null;
    let aborted = false;
    // A client that resets mid-body: busboy never sees the end, so the file stream (and the write stream and
    // .part file behind it) would wait forever. Fail the file stream: storeUpload then closes and removes its part.
    const gone = new ApiError(400, 'VALIDATION_ERROR', 'Invalid body: the upload was aborted by the client', { location: 'body' });
    if (req.destroyed && !req.complete) return reject(gone);
    req.once('close', () => {
      if (req.complete) return;
      aborted = true;
      req.unpipe(busboy);
      fileStream?.destroy(gone);
      busboy.destroy();
      if (!result) return reject(gone);
      // The file may have ended before the client left (its row is stored by then): undo it.
      result
        .then(discard)
        .catch(() => undefined)
        .finally(() => reject(gone));
    });
    busboy.on('file', (field, stream, info) => {
      if (field !== 'file' || seen || aborted) {
        stream.resume();
        return;
      }
      seen = true;
      fileStream = stream;
      result = store(info.filename || 'upload', stream);
      result.catch((err) => {
        // A broken form is answered once busboy says why (its 'error' below), as before.
        if (!(err instanceof ApiError && err.status === 507)) return void stream.resume();
        // The disk is full: answer now. The rest of the body is never read (busboy would wait forever on
        // the file stream the failed write destroyed), so the connection closes after the answer.
        req.unpipe(busboy);
        res.setHeader('Connection', 'close');
        reject(err);
      });
    });
    let broken = false;
    busboy.on('error', (err: Error) => {
      if (aborted) return;
      broken = true;
      const refused = new ApiError(422, 'VALIDATION_ERROR', `Invalid body: ${err.message}`, { location: 'body' });
      if (!result) return reject(refused);
      // The file part may have ended before the form broke (its row is stored by then): undo it.
      result
        .then(discard)
        .catch(() => undefined)
        .finally(() => reject(refused));
    });
    busboy.on('close', () => {
      if (broken || aborted) return;
      if (!result) {
        reject(
          new ApiError(422, 'VALIDATION_ERROR', 'Invalid body: file: required', { location: 'body', fields: [{ field: 'file', message: 'required', code: 'invalid_type' }] }),
        );
      } else result.then(resolve, reject);
    });
    req.pipe(busboy);
  });
}

export function fileRoutes({ files, fleet, store, previews }: ServiceContext): AnyRoute[] {
  const preview = (action: PreviewAction, suffix: string, summary: string) =>
    defineRoute({
      method: 'post',
      path: `/files/{file_id}/${suffix}`,
      tag: 'Files',
      summary,
      description: 'Needs a local copy (download the file first: 409 NO_LOCAL_COPY otherwise). On failure the answer has success false and thumbnail_url serves a placeholder.',
      params: FileIdParams,
      response: ThumbnailResult,
      errors: [409],
      handler({ params, res }) {
        // A client that leaves stops the work (unless another request waits for the same preview).
        const gone = new AbortController();
        res.once('close', () => {
          if (!res.writableFinished) gone.abort();
        });
        return previews.run(params.file_id, action, gone.signal).catch((err) => {
          if (gone.signal.aborted) return undefined;
          throw err;
        });
      },
    });
  return [
    preview('extract', 'thumbnail/extract', 'Extract the embedded thumbnail (3MF, BGCode, G-code)'),
    preview('generate', 'thumbnail/generate', 'Render a thumbnail of a mesh (STL, OBJ)'),
    preview('analyze', 'analyze/gcode', 'Analyze G-code and render its toolpath (print-start optimisation)'),
    preview('preview', 'preview', 'Render a preview of any print or model file'),
    defineRoute({
      method: 'get',
      path: '/files/{file_id}/thumbnail',
      tag: 'Files',
      summary: 'The thumbnail PNG made by extract/generate/analyze/preview',
      params: FileIdParams,
      response: ThumbnailResult,
      rawResponse: { contentType: 'image/png', description: 'The picture' },
      async handler({ params, res }) {
        await files.require(params.file_id);
        const file = previews.thumbnailPath(params.file_id);
        if (!fs.existsSync(file)) throw notFound('THUMBNAIL_NOT_FOUND', `No thumbnail of file "${params.file_id}" yet: POST .../thumbnail/extract first`, { file_id: params.file_id });
        // dotfiles 'allow': the data dir is often below a dot directory (Node-RED's ~/.node-red), which
        // send would otherwise answer with 404; the path is ours, never the request's.
        await new Promise<void>((resolve, reject) => res.type('image/png').sendFile(file, { dotfiles: 'allow' }, (err) => (err && !res.headersSent ? reject(err) : resolve())));
      },
    }),
    defineRoute({
      method: 'get',
      path: '/files',
      tag: 'Files',
      summary: 'List files on printers and local files',
      query: FileListQuery,
      response: FileList,
      async handler({ query }) {
        const { files: rows, total, summary } = await store.files.listWithSummary(query);
        return {
          files: rows.map((f) => files.view(f)),
          pagination: { page: query.page, limit: query.limit, total_items: total, total_pages: Math.ceil(total / query.limit) },
          summary,
        };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/files/refresh',
      tag: 'Files',
      summary: 'Refresh the catalog from the printers now',
      description: 'One printer (printer_id) or every connected printer.',
      body: RefreshBody,
      response: RefreshResult,
      errors: [404, 502],
      async handler({ body }) {
        const ids = body.printer_id ? [body.printer_id] : fleet.connectedPrinters();
        if (body.printer_id && !(await store.printers.exists(body.printer_id))) {
          throw notFound('PRINTER_NOT_FOUND', `Printer "${body.printer_id}" not found`, { printer_id: body.printer_id });
        }
        const refreshed: { printer_id: string; added: number; removed: number }[] = [];
        const failed: { printer_id: string; error: string }[] = [];
        for (const id of ids) {
          try {
            refreshed.push({ printer_id: id, ...(await files.refresh(id)) });
          } catch (err) {
            if (body.printer_id) throw err;
            failed.push({ printer_id: id, error: (err as Error).message });
          }
        }
        return { refreshed, failed };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/files/upload',
      tag: 'Files',
      summary: 'Upload a local file (multipart/form-data, field "file")',
      description: `Print and model files (.3mf, .gcode, .bgcode, .stl, .obj) up to ${MAX_UPLOAD_BYTES / 1024 / 1024} MB; stored under DATA_DIR/files/local. 507 STORAGE_FULL when the disk is full (nothing is kept).`,
      rawBody: { contentType: 'multipart/form-data', schema: { type: 'object', properties: { file: { type: 'string', format: 'binary' } }, required: ['file'] } },
      status: 201,
      response: UploadResult,
      errors: [413, 507],
      async handler({ req, res }) {
        const id = await readUpload(
          req,
          res,
          (name, stream) => files.storeUpload(name, stream as never),
          (stored) => files.deleteLocal(stored),
        );
        return new Reply(201, await files.detail(id));
      },
    }),
    defineRoute({
      method: 'post',
      path: '/files/download',
      tag: 'Files',
      summary: "Fetch the file of a printer's current print",
      description:
        'Statuses: success (downloaded now), exists_with_thumbnail / exists_no_thumbnail (a local copy exists), not_printing, no_file (the printer does not hold the file).',
      body: CurrentJobDownloadBody,
      response: CurrentJobDownloadResult,
      errors: [404, 502],
      async handler({ body }) {
        return files.fetchCurrentJobFile(body.printer_id, body.file_path);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/files/cleanup/candidates',
      tag: 'Files',
      summary: 'Local copies worth deleting',
      query: CleanupQuery,
      response: CleanupCandidates,
      handler: ({ query }) => files.cleanupCandidates(query),
    }),
    defineRoute({
      method: 'post',
      path: '/files/cleanup',
      tag: 'Files',
      summary: 'Delete local copies (confirm: true required)',
      body: CleanupBody,
      response: CleanupResult,
      async handler({ body }) {
        if (!body.confirm) {
          throw new ApiError(422, 'VALIDATION_ERROR', 'Invalid body: confirm: must be true to delete files', {
            location: 'body',
            fields: [{ field: 'confirm', message: 'must be true', code: 'invalid_value' }],
          });
        }
        return files.cleanup(body.file_ids);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/files/{file_id}',
      tag: 'Files',
      summary: 'File detail',
      params: FileIdParams,
      response: FileDetail,
      handler: ({ params }) => files.detail(params.file_id),
    }),
    defineRoute({
      method: 'delete',
      path: '/files/{file_id}',
      tag: 'Files',
      summary: 'Delete the local copy (the printer copy is untouched)',
      description: 'A running download of the file is cancelled first (its partial bytes are removed).',
      params: FileIdParams,
      response: FileDeleted,
      errors: [409],
      handler: ({ params }) => files.deleteLocal(params.file_id),
    }),
    defineRoute({
      method: 'get',
      path: '/files/{file_id}/content',
      tag: 'Files',
      summary: 'The bytes of the local copy',
      params: FileIdParams,
      response: FileDetail,
      rawResponse: { contentType: 'application/octet-stream', description: 'The file' },
      errors: [409],
      async handler({ params, res }) {
        const f = await files.localCopy(params.file_id);
        await new Promise<void>((resolve, reject) =>
          res.download(f.local_path, f.filename, { dotfiles: 'allow' }, (err) => (err && !res.headersSent ? reject(err) : resolve())),
        ).catch(async (err) => {
          // Deleted between the check above and the open: answered as if it had been gone before (404 or 409).
          await files.localCopy(params.file_id);
          throw err;
        });
      },
    }),
    defineRoute({
      method: 'post',
      path: '/files/{file_id}/download',
      tag: 'Files',
      summary: 'Download a printer file to local storage (in the background)',
      description:
        'Answers 202 at once; follow GET /files/{file_id}/download/status or file_update frames on /ws. A second request while the file is downloading joins the running task. 502 PRINTER_OFFLINE when the printer is not connected; 413 FILE_TOO_LARGE when the file is larger than MAX_DOWNLOAD_SIZE_MB. Stop it with POST /files/{file_id}/download/cancel.',
      params: FileIdParams,
      status: 202,
      response: DownloadStarted,
      errors: [409, 413, 502],
      async handler({ params }) {
        const f = await files.require(params.file_id);
        if (!f.printer_id || !f.printer_path) {
          throw new ApiError(409, 'NOT_ON_PRINTER', `File "${f.id}" is a local file; there is nothing to download`, { file_id: f.id });
        }
        const { task, joined } = await files.downloads.start(f);
        return new Reply(202, {
          id: f.id,
          status: 'downloading',
          message: joined ? 'Download already running; joined it' : 'Download started',
          download_id: task.download_id,
          estimated_duration: f.file_size ? Math.max(1, Math.round(f.file_size / (2 * 1024 * 1024))) : null,
          started_at: task.started_at,
        });
      },
    }),
    defineRoute({
      method: 'post',
      path: '/files/{file_id}/download/cancel',
      tag: 'Files',
      summary: 'Stop the running download of a file',
      description:
        'The partial bytes are removed; an earlier complete copy stays (the file is `downloaded` again, else `available`). Answers the ended task (status `cancelled`); 409 NO_DOWNLOAD_RUNNING when nothing runs. No body (or `{}`).',
      params: FileIdParams,
      body: EmptyBody,
      response: DownloadStatus,
      errors: [409],
      async handler({ params }) {
        await files.require(params.file_id);
        const task = await files.downloads.cancel(params.file_id);
        if (!task) throw new ApiError(409, 'NO_DOWNLOAD_RUNNING', `No download of file "${params.file_id}" is running`, { file_id: params.file_id });
        return task;
      },
    }),
    defineRoute({
      method: 'get',
      path: '/files/{file_id}/download/status',
      tag: 'Files',
      summary: 'Progress of the running (or last) download of a file',
      params: FileIdParams,
      response: DownloadStatus,
      async handler({ params }) {
        await files.require(params.file_id);
        const task = files.downloads.status(params.file_id);
        if (!task) throw notFound('DOWNLOAD_NOT_FOUND', `No download of file "${params.file_id}" since the service started`, { file_id: params.file_id });
        return task;
      },
    }),
  ];
}
