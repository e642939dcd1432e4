/**
 * file-download: the spec's client-side automatic download component. When
 * a printer starts printing (seen on /ws, or by polling every 30 s while /ws
 * is down) the file of its print is queued as High; an input queues a
 * download as Normal (or msg.priority). After each download a thumbnail task
 * by file type. Sends one message per finished task (topic `download` or
 * `thumbnail`, payload = the task); a download that fails for good goes to
 * Catch nodes.
 *
 * Input: msg.payload = {printer_id, file_path?} or {file_id}, or a file id;
 * msg.priority = urgent | high | normal | low. msg.payload = "tasks" sends
 * the task log instead.
 */
import type { NodeAPI, NodeDef, NodeMessage, NodeMessageInFlow } from '@node-red/registry';
import {
  autoDownload,
  DOWNLOAD_QUEUE_DEFAULTS,
  DownloadQueue,
  PRIORITIES,
  restWorkers,
  type ConnectionState,
  type DownloadQueueOptions,
  type DownloadRequest,
  type Priority,
  type QueueTask,
  type QueueWorkers,
} from '../service/client';
import { asError, clientOf, connectionStatus, flagUnknownPrinter, useServerWhenReady, type ServerNode, type ServerUser } from './shared';

interface FileDownloadDef extends NodeDef {
  server: string;
  /** Printer id for automatic downloads; empty: every printer. */
  printer: string;
  autoDetectionEnabled: boolean;
  thumbnails: boolean;
  maxConcurrentDownloads: string | number;
  maxConcurrentThumbnails: string | number;
  retryAttempts: string | number;
  /** Milliseconds. */
  retryDelay: string | number;
  logRetentionDays: string | number;
}

type Send = (m: NodeMessage | (NodeMessage | NodeMessage[] | null)[]) => void;
type Done = (err?: Error) => void;

const TYPE = 'printfarm-file-download';

/** The editor's values, with the spec's defaults for blanks. */
function queueOptions(def: Partial<FileDownloadDef>): Partial<DownloadQueueOptions> {
  const num = (v: string | number | undefined, fallback: number) => (v === '' || v === undefined || v === null || Number.isNaN(Number(v)) ? fallback : Number(v));
  const d = DOWNLOAD_QUEUE_DEFAULTS;
  return {
    maxConcurrentDownloads: num(def.maxConcurrentDownloads, d.maxConcurrentDownloads),
    maxConcurrentThumbnails: num(def.maxConcurrentThumbnails, d.maxConcurrentThumbnails),
    retryAttempts: num(def.retryAttempts, d.retryAttempts),
    retryDelay: num(def.retryDelay, d.retryDelay),
    logRetentionDays: num(def.logRetentionDays, d.logRetentionDays),
    autoDetectionEnabled: def.autoDetectionEnabled !== false,
    thumbnails: def.thumbnails !== false,
  };
}

/** What an input asks for. */
function requestOf(msg: NodeMessageInFlow): DownloadRequest {
  const p = msg.payload as unknown;
  const priority = (msg as { priority?: unknown }).priority;
  if (priority !== undefined && !PRIORITIES.includes(priority as Priority)) throw new Error(`priority must be one of ${PRIORITIES.join(', ')}`);
  const base = { source: 'manual' as const, ...(priority ? { priority: priority as Priority } : {}) };
  if (typeof p === 'string' && p.trim()) return { ...base, file_id: p.trim() };
  if (p && typeof p === 'object') {
    const o = p as Record<string, unknown>;
    const str = (v: unknown) => (typeof v === 'string' && v.trim() ? v.trim() : undefined);
    const req = { ...base, printer_id: str(o.printer_id), file_path: str(o.file_path), file_id: str(o.file_id) };
    if (req.printer_id || req.file_id) return req;
  }
  throw new Error('give msg.payload = {printer_id, file_path?} or {file_id} (or a file id)');
}

export = function (RED: NodeAPI) {
  function FileDownloadNode(this: ServerUser, def: FileDownloadDef) {
    RED.nodes.createNode(this, def);
    const node = this;
    const t = (key: string, subs?: Record<string, string | number>) => RED._(key, subs);
    const wanted = (def.printer ?? '').trim();
    let server: ServerNode | null = null;
    let online = false;
    let stopAuto: (() => void) | null = null;
    let stopFlagging: (() => void) | null = null;
    /** Inputs waiting for their task: answered when it ends. */
    const waiting = new Map<string, { msg: NodeMessageInFlow; send: Send; done: Done }[]>();

    const workers: QueueWorkers = {
      download: async (task, signal) => restWorkers(await clientOf(server!)).download(task, signal),
      thumbnail: async (task, signal) => restWorkers(await clientOf(server!)).thumbnail(task, signal),
    };
    let queue: DownloadQueue;
    try {
      queue = new DownloadQueue(workers, queueOptions(def));
    } catch (err) {
      const reason = asError(err);
      node.status({ fill: 'red', shape: 'ring', text: t('printfarm-file-download.status.bad-config') });
      node.error(reason);
      // Its inputs end with the reason (Catch nodes see it), rather than vanish without a word.
      node.on('input', (_msg: NodeMessageInFlow, _send: Send, done: Done) => done(reason));
      return;
    }

    const showStatus = () => {
      if (!online) return;
      const c = queue.counts();
      if (c.processing || c.queued) node.status({ fill: 'blue', shape: 'dot', text: t('printfarm-file-download.status.busy', { processing: c.processing, queued: c.queued }) });
      else node.status({ fill: 'green', shape: 'dot', text: t('printfarm-file-download.status.idle', { completed: c.completed, failed: c.failed }) });
    };
    node.onServerState = (state: ConnectionState, error?: Error) => {
      online = state === 'connected' || state === 'polling';
      if (online) showStatus();
      else node.status(connectionStatus(t, TYPE, state, error));
    };

    queue.on('task', showStatus);
    queue.on('completed', (task: QueueTask) => {
      const topic = task.kind;
      const pending = waiting.get(task.id);
      waiting.delete(task.id);
      if (!pending) return node.send({ topic, payload: task });
      for (const { msg, send, done } of pending) {
        send({ ...msg, topic, payload: task });
        done();
      }
    });
    queue.on('placeholder', (task: QueueTask) => {
      node.warn(t('printfarm-file-download.errors.placeholder', { file: task.filename ?? task.file_id ?? '?', message: task.error?.message ?? '' }));
      node.send({ topic: 'thumbnail', payload: task });
    });
    queue.on('failed', (task: QueueTask) => {
      const error = new Error(t('printfarm-file-download.errors.failed', { file: task.file_path ?? task.file_id ?? task.printer_id ?? '?', message: task.error?.message ?? '' }));
      const pending = waiting.get(task.id);
      waiting.delete(task.id);
      if (!pending) node.error(error, { topic: 'download', payload: task });
      for (const { msg, done } of pending ?? []) {
        msg.payload = task;
        done(error);
      }
      node.status({ fill: 'red', shape: 'dot', text: t('printfarm-file-download.status.failed') });
    });

    server = useServerWhenReady(RED, node, def.server, TYPE, {
      ready: (farm) => {
        stopFlagging = flagUnknownPrinter(node, farm, wanted, TYPE, t);
        stopAuto = autoDownload(farm.connection.monitor!, queue, (p) => !wanted || p.id === wanted);
      },
      close: async () => {
        stopAuto?.();
        stopFlagging?.();
        await queue.close();
        for (const list of waiting.values()) for (const { done } of list) done();
        waiting.clear();
      },
    });
    if (!server) return;

    node.on('input', (msg: NodeMessageInFlow, send: Send, done: Done) => {
      if (msg.payload === 'tasks') {
        send({ ...msg, topic: 'tasks', payload: queue.tasks() });
        return done();
      }
      try {
        const task = queue.add(requestOf(msg));
        waiting.set(task.id, [...(waiting.get(task.id) ?? []), { msg, send, done }]);
      } catch (err) {
        done(asError(err));
      }
    });
  }

  RED.nodes.registerType(TYPE, FileDownloadNode);
};
