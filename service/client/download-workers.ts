/** The queue's connection to the service: REST workers, and the automatic detection of new prints. */
import type { DownloadQueue } from './download-queue';
import { PermanentError, type QueueWorkers } from './download-tasks';
import type { FarmMonitor, PrinterSnapshot } from './monitor';
import type { PrintfarmClient } from './rest';

/** Workers that call the service: POST /files/download, then the thumbnail endpoint of the file's type. */
export function restWorkers(client: PrintfarmClient): QueueWorkers {
  return {
    async download(task, signal) {
      let printerId = task.printer_id;
      let path = task.file_path ?? undefined;
      if (task.file_id) {
        const file = await client.files.get(task.file_id);
        if (!file.printer_id || !file.printer_path) throw new PermanentError('NOT_ON_PRINTER', `File "${file.filename}" is a local file; there is nothing to download`);
        printerId = file.printer_id;
        path = file.printer_path;
      }
      const result = await client.files.downloadForPrinter(printerId!, path, { signal });
      if (result.status === 'not_printing') throw new PermanentError('NOT_PRINTING', result.message);
      if (result.status === 'no_file') throw new PermanentError('NO_FILE', result.message);
      return result;
    },
    async thumbnail(task, signal) {
      const r = await client.files.thumbnail(task.file_id!, task.thumbnail_method!, { signal });
      if (r.success === false) throw new PermanentError('THUMBNAIL_FAILED', r.message ?? 'the service could not make a thumbnail');
      return { method: r.method, thumbnail_url: r.thumbnail_url ?? null, message: r.message ?? '' };
    },
  };
}

/**
 * Automatic detection: when a printer starts printing, its current file is
 * queued as High (source auto). Returns the function that stops it.
 */
export function autoDownload(monitor: FarmMonitor, queue: DownloadQueue, accept: (printer: PrinterSnapshot) => boolean = () => true): () => void {
  const onStart = (printer: PrinterSnapshot) => {
    if (!queue.options.autoDetectionEnabled || !accept(printer)) return;
    queue.add({ printer_id: printer.id, source: 'auto', job_name: printer.current_job?.name });
  };
  monitor.on('job-start', onStart);
  return () => monitor.off('job-start', onStart);
}
