/**
 * PrusaLink files: listing every storage (breadth first, bounded in depth,
 * count and requests) and downloading one file by the `refs.download` path
 * the listing taught us.
 */
import { DriverError, type PrinterFile } from '../driver';
import type { PrusaHttpClient } from './http';
import { encodePath, type PrusaFileEntry } from './state';

interface StorageEntry {
  name?: string;
  type?: string;
  path?: string;
  available?: boolean;
}

const MAX_FOLDER_REQUESTS = 200;

export interface ListLimits {
  /** Folder depth to descend to below each storage root. */
  maxFolderDepth: number;
  /** Most files returned. */
  maxFiles: number;
}

/** Lists the files of every available storage; records each file's `refs.download` in `downloadRefs` (path -> ref). */
export async function listPrusaFiles(http: PrusaHttpClient, downloadRefs: Map<string, string>, limits: ListLimits): Promise<PrinterFile[]> {
  let storages: StorageEntry[];
  try {
    const answer = await http.json<{ storage_list?: StorageEntry[] }>('/api/v1/storage');
    storages = (answer?.storage_list ?? []).filter((s) => s.available !== false);
  } catch (err) {
    if (!(err instanceof DriverError && err.code === 'NOT_FOUND')) throw err;
    storages = [{ path: '/usb', name: 'usb' }]; // firmware without /api/v1/storage: Buddy's one storage
  }
  const files: PrinterFile[] = [];
  let requests = 0;
  for (const storage of storages) {
    const root = (storage.path ?? storage.name ?? '').replace(/^\/+|\/+$/g, '');
    if (!root) continue;
    const queue: Array<{ rel: string; depth: number }> = [{ rel: '', depth: 0 }];
    while (queue.length && files.length < limits.maxFiles && requests < MAX_FOLDER_REQUESTS) {
      const { rel, depth } = queue.shift()!;
      requests++;
      let folder: PrusaFileEntry | null;
      try {
        folder = await http.json<PrusaFileEntry>(`/api/v1/files${encodePath(`${root}/${rel}`)}${rel ? '' : '/'}`);
      } catch (err) {
        if (err instanceof DriverError && err.code === 'NOT_FOUND') continue; // storage gone (USB pulled) or folder removed
        throw err;
      }
      for (const child of folder?.children ?? []) {
        if (!child || typeof child.name !== 'string') continue;
        const childRel = rel ? `${rel}/${child.name}` : child.name;
        if (child.type === 'FOLDER') {
          if (depth < limits.maxFolderDepth) queue.push({ rel: childRel, depth: depth + 1 });
          continue;
        }
        const path = `/${root}/${childRel}`;
        if (child.refs?.download) downloadRefs.set(path, child.refs.download);
        files.push({
          path,
          name: child.display_name ?? child.name,
          size: typeof child.size === 'number' ? child.size : 0,
          modified: typeof child.m_timestamp === 'number' ? new Date(child.m_timestamp * 1000).toISOString() : null,
          storage: root,
        });
        if (files.length >= limits.maxFiles) break;
      }
    }
  }
  return files;
}

/** Downloads `path` to `destination`, through the listing's `refs.download` when known, else the file's metadata. */
export async function downloadPrusaFile(
  http: PrusaHttpClient,
  downloadRefs: ReadonlyMap<string, string>,
  path: string,
  destination: string,
  onProgress?: (bytes: number, total: number) => void,
  signal?: AbortSignal,
): Promise<void> {
  const key = encodePath(path).split('/').map(safeDecode).join('/');
  let url = downloadRefs.get(key);
  if (!url) {
    const meta = await http.json<PrusaFileEntry>(`/api/v1/files${encodePath(key)}`, { signal });
    if (meta?.type === 'FOLDER') throw new DriverError('NOT_FOUND', `${path} is a folder`);
    url = meta?.refs?.download ?? key;
  }
  // refs.download is a path on the printer (Buddy: /usb/SHAPE-~1.BGC), maybe already percent-encoded.
  await http.download(encodePath(url.split('/').map(safeDecode).join('/')), destination, onProgress, signal);
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
