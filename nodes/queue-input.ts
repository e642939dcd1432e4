/**
 * What a msg into the queue node asks for: an action on an item
 * (msg.topic hold, release or cancel with the item's id), or a new item
 * (the POST /queue body, its file given by file_id, its variants by `files`,
 * or as `file`: a path or a Buffer uploaded first through POST /files/upload).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { PrintfarmClient, QueueItemView } from '../service/client';

export const ACTIONS = ['hold', 'release', 'cancel'] as const;
export type QueueAction = (typeof ACTIONS)[number];

/** The service's own upload limit (MAX_UPLOAD_BYTES): a bigger file is refused before it is read into memory. */
export const MAX_FILE_BYTES = 1024 * 1024 * 1024;
const ITEM_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** A message the node refuses before asking the service; `key` is its catalog text under errors. */
export class InputError extends Error {
  constructor(
    readonly key: string,
    readonly subs: Record<string, string | number> = {},
  ) {
    super(key);
  }
}

export interface QueueDefaults {
  /** Printer id the items go to unless the payload names a target; empty: any compatible printer. */
  printer: string;
  copies?: number;
  priority?: number;
}

export function actionOf(topic: unknown): QueueAction | null {
  return typeof topic === 'string' && (ACTIONS as readonly string[]).includes(topic) ? (topic as QueueAction) : null;
}

/** Runs hold, release or cancel on the item msg.payload.id (or msg.payload itself when it is the id). */
export async function runAction(client: PrintfarmClient, action: QueueAction, payload: unknown): Promise<QueueItemView> {
  const id = typeof payload === 'string' ? payload : (payload as { id?: unknown } | null)?.id;
  if (typeof id !== 'string' || !ITEM_ID.test(id)) throw new InputError('no-item-id', { action });
  return client.queue[action](id);
}

/** Uploads `file` (a path or a Buffer) and answers its file id. */
async function uploadFile(client: PrintfarmClient, file: unknown, filename: unknown): Promise<string> {
  let name = typeof filename === 'string' ? path.basename(filename.trim()) : '';
  let data: Buffer;
  if (Buffer.isBuffer(file) || file instanceof Uint8Array) {
    if (!name) throw new InputError('no-filename');
    data = Buffer.from(file);
  } else if (typeof file === 'string' && file.trim()) {
    const stat = await fs.promises.stat(file).catch(() => null);
    if (!stat?.isFile()) throw new InputError('no-file', { path: file.slice(0, 200) });
    if (stat.size > MAX_FILE_BYTES) throw new InputError('too-big', { path: file.slice(0, 200) });
    data = await fs.promises.readFile(file);
    name ||= path.basename(file);
  } else {
    throw new InputError('bad-file');
  }
  if (data.length > MAX_FILE_BYTES) throw new InputError('too-big', { path: name });
  return (await client.files.upload(name, data)).id;
}

/**
 * Adds the item `payload` describes: its fields as POST /queue takes them (the service validates them
 * and answers with its reason), `file` and `filename` replaced by the uploaded file's id, the node's
 * printer, copies and priority filled in where the payload has none.
 */
export async function addItem(client: PrintfarmClient, payload: unknown, defaults: QueueDefaults): Promise<QueueItemView> {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload) || Buffer.isBuffer(payload)) throw new InputError('bad-payload');
  const { file, filename, ...fields } = payload as Record<string, unknown>;
  const body: Record<string, unknown> = { ...fields };
  if (file !== undefined) body.file_id = await uploadFile(client, file, filename);
  else if (typeof body.file_id !== 'string' && !Array.isArray(body.files)) throw new InputError('bad-payload');
  if (body.copies === undefined && defaults.copies !== undefined) body.copies = defaults.copies;
  if (body.priority === undefined && defaults.priority !== undefined) body.priority = defaults.priority;
  if (body.target === undefined && defaults.printer) body.target = { printer_ids: [defaults.printer] };
  // The service checks every field (types, limits, unknown fields) and says which one is wrong.
  return client.queue.add(body as unknown as Parameters<PrintfarmClient['queue']['add']>[0]);
}
