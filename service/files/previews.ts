/**
 * Thumbnails, metadata and G-code previews of files with a local copy, made
 * by the preview library and kept under DATA_DIR/thumbnails (temp + rename).
 */
import fs from 'node:fs';
import path from 'node:path';
import { DomainError } from '../errors';
import type { Store } from '../db';
import { extractThumbnail, previewFileType, readMetadata, renderGcodeToolpath, type ThumbnailResult } from '../preview';
import { PreviewError } from '../preview/errors';
import type { SettingsService } from '../settings';
import { nowIso } from '../util/time';
import type { FileCatalog } from './catalog';

export type PreviewAction = 'extract' | 'generate' | 'analyze' | 'preview';

/** Which actions fit which file types (extract: embedded pictures; generate: meshes; analyze: G-code toolpaths). */
const FITS: Record<PreviewAction, readonly string[]> = {
  extract: ['3mf', 'bgcode', 'gcode'],
  generate: ['stl', 'obj'],
  analyze: ['gcode', 'bgcode'],
  preview: ['3mf', 'bgcode', 'gcode', 'stl', 'obj'],
};

type PreviewOutcome = Awaited<ReturnType<PreviewService['make']>>;

export class PreviewService {
  private readonly running = new Map<string, { result: Promise<PreviewOutcome>; abort: AbortController; waiting: number }>();

  constructor(
    private readonly store: Store,
    private readonly catalog: FileCatalog,
    private readonly settings: SettingsService,
  ) {}

  thumbnailPath(fileId: string): string {
    return this.catalog.thumbnailPath(fileId);
  }

  /**
   * Makes the preview of a file once however many ask at the same time: later requests join the running
   * work. The work stops when every request that waits for it has gone (`signal` of each).
   */
  run(fileId: string, action: PreviewAction, signal?: AbortSignal): Promise<PreviewOutcome> {
    const key = `${fileId}\u0000${action}`;
    let entry = this.running.get(key);
    if (!entry) {
      const abort = new AbortController();
      const result = this.make(fileId, action, abort.signal).finally(() => this.running.delete(key));
      entry = { result, abort, waiting: 0 };
      this.running.set(key, entry);
    }
    const shared = entry;
    if (signal?.aborted) return shared.result;
    shared.waiting++;
    const leave = () => {
      if (--shared.waiting === 0) shared.abort.abort();
    };
    signal?.addEventListener('abort', leave, { once: true });
    return shared.result.finally(() => signal?.removeEventListener('abort', leave));
  }

  private async make(fileId: string, action: PreviewAction, signal: AbortSignal) {
    const file = await this.catalog.localCopy(fileId);
    const type = previewFileType(file.filename);
    if (!type || !FITS[action].includes(type)) {
      throw new DomainError(400, 'UNSUPPORTED_FILE_TYPE', `Cannot ${action} a ${file.file_type} file`, { file_id: fileId, file_type: file.file_type, fits: FITS[action] });
    }
    const optimisation = {
      optimize_print_only: this.settings.get('gcode_optimize_print_only'),
      optimization_max_lines: this.settings.get('gcode_optimization_max_lines'),
      render_max_lines: this.settings.get('gcode_render_max_lines'),
    };
    const result: ThumbnailResult =
      action === 'analyze' && type === 'gcode'
        ? await renderGcodeToolpath(file.local_path, { ...optimisation, width: 512, height: 512 }).then(
            (r) => ({ data: r.png, mime: 'image/png', width: r.width, height: r.height, method: 'analyzed', source: 'toolpath', analysis: r.analysis }) as ThumbnailResult,
            (err: Error) => extractThumbnail(Buffer.alloc(0), 'gcode', { fallback: true }).then((p) => ({ ...p, error: { code: 'ERROR', message: err.message } }) as ThumbnailResult),
          )
        : await extractThumbnail(file.local_path, type, { renderToolpath: action !== 'extract', ...optimisation, signal });
    const metadata = await readMetadata(file.local_path, type, { signal }).catch((err) => {
      if (signal.aborted) throw err;
      return null;
    });
    if (signal.aborted) throw new PreviewError('ABORTED', 'preview stopped: nobody waits for it any more');
    const target = this.thumbnailPath(fileId);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    const temp = `${target}.part-${process.pid}`;
    fs.writeFileSync(temp, result.data);
    fs.renameSync(temp, target);
    const success = result.method !== 'placeholder';
    await this.store.files.update(fileId, {
      metadata: { ...(file.metadata ?? {}), ...(metadata ?? {}), has_thumbnail: success, thumbnail_source: result.source },
      updated_at: nowIso(),
    });
    return {
      success,
      method: success ? result.method : action === 'generate' ? 'generated' : action === 'extract' ? 'extracted' : 'analyzed',
      thumbnail_url: `/api/v1/files/${fileId}/thumbnail`,
      metadata: { ...(metadata ?? {}), ...(result.analysis ? { analysis: result.analysis } : {}), width: result.width, height: result.height },
      message: success ? `Thumbnail from ${result.source}` : `No picture could be made (${result.error?.message ?? 'unknown'}); a placeholder is served`,
    } as const;
  }
}
