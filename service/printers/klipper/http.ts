/**
 * Moonraker's HTTP side: JSON requests (answers wrapped in `{"result": ...}`),
 * file downloads streamed to disk, and the multipart upload that starts a
 * print. Every request carries the API key (X-Api-Key) when one is set, has a
 * deadline (for transfers: the longest silence) and a bounded answer.
 */
import http from 'node:http';
import { createReadStream, createWriteStream } from 'node:fs';
import { stat, unlink } from 'node:fs/promises';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { randomBytes } from 'node:crypto';
import { deadline } from '../../util/deadline';
import { DriverError, storageFullCode } from '../driver';

const MAX_JSON_BYTES = 4 * 1024 * 1024;

export interface MoonrakerHttpOptions {
  host: string;
  port: number;
  apiKey: string | null;
  timeoutMs: number;
}

export interface UploadForm {
  /** Plain form fields sent before the file (root, checksum, print). */
  fields: Record<string, string>;
  fileName: string;
  localPath: string;
}

export class MoonrakerHttp {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  private readonly closed = new AbortController();

  constructor(private readonly o: MoonrakerHttpOptions) {}

  /** The printer's host as configured (a webcam URL Moonraker gives as a path is on it). */
  get host(): string {
    return this.o.host;
  }

  /** Base of the printer's URLs (for the WebSocket too). */
  get hostPort(): string {
    const host = this.o.host.includes(':') ? `[${this.o.host}]` : this.o.host;
    return `${host}:${this.o.port}`;
  }

  get headers(): Record<string, string> {
    return this.o.apiKey ? { 'x-api-key': this.o.apiKey } : {};
  }

  /** GET/POST `path` and the `result` of its JSON answer. */
  async json<T>(method: string, path: string, signal?: AbortSignal): Promise<T> {
    // The whole exchange has the deadline, not only each silence: a peer that drips its answer a byte at a time
    // otherwise held the request (and the driver's connection attempt, waiting on /server/info) for ever.
    const timeout = () => new DriverError('TIMEOUT', `Moonraker did not answer ${method} ${path.split('?')[0]} within ${this.o.timeoutMs} ms`);
    const due = deadline(this.o.timeoutMs, timeout, signal);
    let body: Buffer;
    try {
      const res = await this.send(method, path, {}, undefined, this.o.timeoutMs, due.signal);
      body = await readAll(res, MAX_JSON_BYTES, path);
    } catch (err) {
      if (due.expired() && !signal?.aborted && !this.closed.signal.aborted) throw timeout();
      throw err;
    } finally {
      due.clear();
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      throw new DriverError('PROTOCOL', `Moonraker's answer to ${path} is not JSON`);
    }
    if (!parsed || typeof parsed !== 'object' || !('result' in parsed)) throw new DriverError('PROTOCOL', `Moonraker's answer to ${path} has no result`);
    return (parsed as { result: T }).result;
  }

  /** Streams GET `path` into `destination`; a failed or aborted download leaves no file behind. */
  async download(path: string, destination: string, maxBytes: number, onProgress?: (bytes: number, total: number) => void, signal?: AbortSignal): Promise<void> {
    const res = await this.send('GET', path, {}, undefined, this.o.timeoutMs, signal);
    const header = res.headers['content-length'];
    const total = header !== undefined && /^\d+$/.test(header) ? Number(header) : -1;
    if (total > maxBytes) {
      res.destroy();
      throw new DriverError('REJECTED', `the file is ${total} bytes, more than the ${maxBytes} allowed`);
    }
    let bytes = 0;
    const counter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        bytes += chunk.length;
        if (bytes > maxBytes) return done(new DriverError('REJECTED', `the file is larger than the ${maxBytes} bytes allowed`));
        onProgress?.(bytes, total);
        done(null, chunk);
      },
    });
    try {
      await pipeline(res, counter, createWriteStream(destination), { signal: this.signalOf(signal) });
      if (total >= 0 && bytes !== total) throw new DriverError('PROTOCOL', `download of ${path} ended after ${bytes} of ${total} bytes`);
    } catch (err) {
      await unlink(destination).catch(() => undefined);
      // Our own full disk and a cancel stay what they are (the download manager tells them apart).
      if (err instanceof DriverError || storageFullCode(err) || (err as Error)?.name === 'AbortError') throw err;
      throw new DriverError('OFFLINE', `download of ${path} failed: ${(err as Error)?.message ?? err}`);
    }
  }

  /** POST /server/files/upload as multipart/form-data, streaming the file; resolves with the answer's result. */
  async upload<T>(form: UploadForm, timeoutMs: number, onProgress?: (bytes: number, total: number) => void): Promise<T> {
    const size = (await stat(form.localPath)).size;
    const boundary = `----printfarm${randomBytes(12).toString('hex')}`;
    const head = Object.entries(form.fields)
      .map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`)
      .join('');
    const fileHead = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${form.fileName.replace(/["\r\n\\]/g, '_')}"\r\nContent-Type: application/octet-stream\r\n\r\n`;
    const tail = `\r\n--${boundary}--\r\n`;
    const length = Buffer.byteLength(head) + Buffer.byteLength(fileHead) + size + Buffer.byteLength(tail);
    let sent = 0;
    const body = Readable.from(
      (async function* () {
        yield Buffer.from(head + fileHead);
        for await (const chunk of createReadStream(form.localPath)) {
          sent += (chunk as Buffer).length;
          onProgress?.(sent, size);
          yield chunk as Buffer;
        }
        yield Buffer.from(tail);
      })(),
    );
    const res = await this.send('POST', '/server/files/upload', { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(length) }, body, timeoutMs);
    const text = await readAll(res, MAX_JSON_BYTES, '/server/files/upload');
    try {
      const parsed = JSON.parse(text.toString('utf8')) as { result?: T };
      return (parsed.result ?? parsed) as T;
    } catch {
      throw new DriverError('PROTOCOL', "Moonraker's answer to the upload is not JSON");
    }
  }

  close(): void {
    this.closed.abort(new DriverError('OFFLINE', 'driver closed'));
    this.agent.destroy();
  }

  private signalOf(signal?: AbortSignal): AbortSignal {
    return signal ? AbortSignal.any([signal, this.closed.signal]) : this.closed.signal;
  }

  /** Sends one request; resolves with a 2xx answer (body unread), rejects with a DriverError otherwise. */
  private send(method: string, path: string, headers: Record<string, string>, body: Readable | undefined, timeoutMs: number, signal?: AbortSignal): Promise<http.IncomingMessage> {
    return new Promise((resolve, reject) => {
      const req = http.request(
        { host: this.o.host, port: this.o.port, method, path, agent: this.agent, headers: { ...this.headers, accept: 'application/json', ...headers }, signal: this.signalOf(signal) },
        (res) => {
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) return resolve(res);
          readAll(res, 64 * 1024, path)
            .catch(() => Buffer.alloc(0))
            .then((b) => reject(statusError(status, method, path, b.toString('utf8'))));
        },
      );
      // The longest silence: a transfer that keeps moving is never cut off.
      req.setTimeout(timeoutMs, () => req.destroy(new DriverError('TIMEOUT', `Moonraker did not answer ${method} ${path.split('?')[0]} within ${timeoutMs} ms`)));
      req.on('error', (err: Error & { code?: string }) => {
        if (err instanceof DriverError) return reject(err);
        if (err.name === 'AbortError') return reject(new DriverError('OFFLINE', 'request aborted'));
        reject(new DriverError('OFFLINE', `Moonraker unreachable at ${this.hostPort} (${err.code ?? err.message})`));
      });
      if (body) {
        body.on('error', (err) => req.destroy(err));
        // pipe() only unpipes from a request that failed: the body (and the local file it reads) stayed open.
        req.once('close', () => body.destroy());
        body.pipe(req);
      } else req.end();
    });
  }
}

function statusError(status: number, method: string, path: string, body: string): DriverError {
  let message = body.slice(0, 300);
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } };
    if (typeof parsed.error?.message === 'string') message = parsed.error.message.slice(0, 300);
  } catch {
    // plain text
  }
  const where = `${method} ${path.split('?')[0]}`;
  if (status === 401 || status === 403) return new DriverError('AUTH', `Moonraker refused the API key (HTTP ${status} on ${where})`);
  if (status === 404) return new DriverError('NOT_FOUND', `Moonraker: ${message || 'not found'} (${where})`);
  if (status === 507 || /no space|disk full/i.test(message)) return new DriverError('REJECTED', `Moonraker's storage is full: ${message}`, { storage_full: true });
  return new DriverError('REJECTED', `Moonraker answered HTTP ${status} on ${where}${message ? `: ${message}` : ''}`, { http_status: status });
}

function readAll(res: http.IncomingMessage, limit: number, path: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        res.destroy();
        reject(new DriverError('PROTOCOL', `Moonraker's answer to ${path.split('?')[0]} is larger than ${limit} bytes`));
      } else chunks.push(c);
    });
    res.once('end', () => resolve(Buffer.concat(chunks)));
    res.once('error', (err) => reject(new DriverError('OFFLINE', `connection lost while reading ${path.split('?')[0]}: ${err.message}`)));
  });
}
