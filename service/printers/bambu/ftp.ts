/**
 * Files on a Bambu printer over implicit FTPS (port 990, TLS from the first
 * byte, user `bblp` + access code), through basic-ftp. The printer's vsftpd
 * demands that data connections resume the control connection's TLS session
 * (522 otherwise); basic-ftp does that, including TLS 1.3 tickets.
 *
 * At most ONE FTP connection per printer at a time: printers (P1 above all)
 * are slow and limit sessions, so every operation waits its turn in a queue
 * and opens and closes its own connection.
 */
import { createWriteStream } from 'node:fs';
import net from 'node:net';
import { stat } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { Client, FTPError, type FileInfo } from 'basic-ftp';
import { DriverError, storageFullCode, type PrinterFile } from '../driver';
import { printerTlsContext } from './tls-context';

export interface BambuFtpOptions {
  host: string;
  port: number;
  accessCode: string | null;
  /** Control/data inactivity timeout (ms). */
  timeoutMs: number;
}

/** The folders listFiles() looks in (there is no /sdcard on the FTP side). */
export const BAMBU_FOLDERS = ['/', '/cache', '/model', '/timelapse'];

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

/**
 * vsftpd `ls -l` dates (UTC): "Jun 17 2025" or "Jun 18 00:27" (no year: within
 * the last six months, so this year unless that lies in the future).
 */
export function parseListDate(raw: string, now = new Date()): string | null {
  const m = raw.trim().match(/^([A-Za-z]{3})\s+(\d{1,2})\s+(?:(\d{4})|(\d{1,2}):(\d{2}))$/);
  if (!m) return null;
  const month = MONTHS.indexOf(m[1].toLowerCase());
  if (month < 0) return null;
  const day = Number(m[2]);
  if (m[3]) return new Date(Date.UTC(Number(m[3]), month, day)).toISOString();
  let year = now.getUTCFullYear();
  let date = new Date(Date.UTC(year, month, day, Number(m[4]), Number(m[5])));
  if (date.getTime() > now.getTime() + 24 * 3600 * 1000) {
    year -= 1;
    date = new Date(Date.UTC(year, month, day, Number(m[4]), Number(m[5])));
  }
  return date.toISOString();
}

function abortError(): Error {
  const err = new Error('download aborted');
  err.name = 'AbortError';
  return err;
}

/** basic-ftp and socket errors -> DriverError (never carrying the access code). */
export function ftpError(err: unknown, what: string): DriverError {
  if (err instanceof DriverError) return err;
  const errno = (err as { code?: unknown })?.code;
  if (typeof errno === 'string' && ['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET', 'EPIPE', 'ENOTFOUND', 'ERR_STREAM_PREMATURE_CLOSE'].includes(errno))
    return new DriverError('OFFLINE', `${what}: printer unreachable or connection lost (${errno})`);
  if (err instanceof FTPError && typeof err.code === 'number') {
    if (err.code === 530) return new DriverError('AUTH', 'access code rejected by the printer (FTPS login)');
    if (err.code === 550) return new DriverError('NOT_FOUND', `${what}: not found on the printer`);
    if (err.code === 522) return new DriverError('PROTOCOL', `${what}: the printer refused the data connection (TLS session reuse required)`);
    return new DriverError('PROTOCOL', `${what}: FTP ${err.code} ${err.message.replace(/^\d+\s*/, '')}`.trim());
  }
  const message = String((err as Error)?.message ?? err);
  if (/timeout/i.test(message) || errno === 'ETIMEDOUT') return new DriverError('TIMEOUT', `${what}: the printer did not answer in time`);
  if (/closed|FIN packet|socket hang up|disconnected/i.test(message)) return new DriverError('OFFLINE', `${what}: connection to the printer was lost`);
  return new DriverError('PROTOCOL', `${what}: ${message}`);
}

export class BambuFtp {
  private tail: Promise<unknown> = Promise.resolve();
  private readonly active = new Set<Client>();
  private closed = false;
  /** Rejects when close() is called: an operation never outlives its driver. */
  private readonly whenClosed: Promise<never>;
  private rejectWhenClosed: (err: Error) => void = () => undefined;

  constructor(private readonly options: BambuFtpOptions) {
    this.whenClosed = new Promise<never>((_, reject) => (this.rejectWhenClosed = reject));
    this.whenClosed.catch(() => undefined);
  }

  /** Whether the printer's FTPS port takes a connection now (within 1 s): tells a lost printer from a bad answer. */
  private reachable(): Promise<boolean> {
    return new Promise((resolve) => {
      const socket = net.connect({ host: this.options.host, port: this.options.port });
      const done = (ok: boolean) => {
        clearTimeout(timer);
        socket.destroy();
        resolve(ok);
      };
      const timer = setTimeout(() => done(false), 1000);
      socket.once('connect', () => done(true));
      socket.once('error', () => done(false));
    });
  }

  /** Runs `work` on a fresh connection once every earlier operation is done. */
  private run<T>(what: string, work: (client: Client) => Promise<T>): Promise<T> {
    const turn = this.tail.then(async () => {
      if (this.closed) throw new DriverError('OFFLINE', `${what}: driver closed`);
      const password = this.options.accessCode;
      if (!password) throw new DriverError('AUTH', 'no access code configured');
      const client = new Client(this.options.timeoutMs);
      this.active.add(client);
      try {
        const attempt = (async () => {
          await client.access({
            host: this.options.host,
            port: this.options.port,
            user: 'bblp',
            password,
            secure: 'implicit',
            // The printer's certificate is signed by Bambu's private CA for CN = serial, not the IP: not verifiable here.
            secureOptions: { rejectUnauthorized: false, secureContext: printerTlsContext() },
          });
          return await work(client);
        })();
        // Closing the client normally fails the operation at once, but basic-ftp can leave a task unsettled
        // when its socket goes at the wrong moment (patrickjuchli/basic-ftp#138): close() ends the wait itself.
        attempt.catch(() => undefined);
        return await Promise.race([attempt, this.whenClosed]);
      } catch (err) {
        if ((err as Error)?.name === 'AbortError' || storageFullCode(err)) throw err;
        if (this.closed && !(err instanceof DriverError)) throw new DriverError('OFFLINE', `${what}: driver closed`);
        throw ftpError(err, what);
      } finally {
        this.active.delete(client);
        client.close();
      }
    });
    this.tail = turn.catch(() => undefined);
    return turn;
  }

  listFiles(): Promise<PrinterFile[]> {
    return this.run('list files', async (client) => {
      const out: PrinterFile[] = [];
      for (const folder of BAMBU_FOLDERS) {
        let entries: FileInfo[];
        try {
          entries = await client.list(folder);
        } catch (err) {
          // A folder this model does not have: vsftpd lists nothing or answers 550.
          if (err instanceof FTPError && err.code === 550) continue;
          throw err;
        }
        for (const e of entries) {
          if (!e.isFile || e.name === '.' || e.name === '..') continue;
          out.push({
            path: folder === '/' ? `/${e.name}` : `${folder}/${e.name}`,
            name: e.name,
            size: e.size,
            modified: e.modifiedAt ? e.modifiedAt.toISOString() : parseListDate(e.rawModifiedAt),
            storage: folder === '/' ? '/' : folder.slice(1),
          });
        }
      }
      return out;
    });
  }

  download(path: string, destination: string, onProgress?: (bytes: number, total: number) => void, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortError());
    return this.run(`download ${path}`, async (client) => {
      if (signal?.aborted) throw abortError();
      let aborted = false;
      const onAbort = () => {
        aborted = true;
        client.close();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      try {
        const total = await client.size(path);
        let bytes = 0;
        let lastReport = 0;
        const counter = new Transform({
          transform(chunk: Buffer, _enc, callback) {
            bytes += chunk.length;
            const now = Date.now();
            if (onProgress && (now - lastReport >= 50 || bytes >= total)) {
              lastReport = now;
              onProgress(bytes, total);
            }
            callback(null, chunk);
          },
        });
        const file = createWriteStream(destination);
        // A write error (our disk is full) ends the transfer at once: else the pipe stops draining and the
        // FTP download waits forever on back-pressure.
        let writeError: Error | undefined;
        const written = new Promise<void>((resolve, reject) => {
          file.once('close', () => resolve());
          file.once('error', (err) => {
            writeError = err;
            client.close();
            reject(err);
          });
        });
        counter.pipe(file);
        try {
          await client.downloadTo(counter, path);
        } catch (err) {
          counter.unpipe(file);
          file.destroy();
          await written.catch(() => undefined);
          // Our own clean-up above can make the file stream refuse a last write: that is not a disk error.
          if (writeError && (writeError as NodeJS.ErrnoException).code !== 'ERR_STREAM_DESTROYED') throw writeError;
          // A transfer cut off by a printer that dropped off the network is OFFLINE, whichever of its
          // connections noticed first (the data stream, the control answer or the socket).
          if (!aborted && !(await this.reachable())) throw new DriverError('OFFLINE', `download ${path}: connection to the printer was lost`);
          throw err;
        }
        await written;
        if (bytes !== total) {
          const lost = client.closed || !(await this.reachable());
          throw new DriverError(lost ? 'OFFLINE' : 'PROTOCOL', `download ${path}: got ${bytes} of ${total} bytes${lost ? ' (connection to the printer was lost)' : ''}`);
        }
      } catch (err) {
        if (aborted) throw abortError();
        throw err;
      } finally {
        signal?.removeEventListener('abort', onAbort);
      }
    });
  }

  /**
   * Stores a local file at `remotePath` (the card root for queued prints). Waits its turn like every other
   * operation, so one printer never gets two uploads at once (two STORs corrupt the file). A `426` (transfer
   * aborted) whose file still arrived whole counts as done: the printer's final answer can come late (H2D).
   */
  upload(localPath: string, remotePath: string, onProgress?: (bytes: number, total: number) => void): Promise<void> {
    return this.run(`upload ${remotePath}`, async (client) => {
      const total = (await stat(localPath)).size;
      if (onProgress) client.trackProgress((info) => onProgress(info.bytes, total));
      try {
        await client.uploadFrom(localPath, remotePath);
      } catch (err) {
        if (!(err instanceof FTPError && err.code === 426)) throw err;
        const stored = await client.size(remotePath).catch(() => -1);
        if (stored !== total) throw err;
      } finally {
        client.trackProgress();
      }
    });
  }

  /** Deletes a file (a queued print's upload once it printed: left on the card it can come back as a "ghost print"). */
  remove(remotePath: string): Promise<void> {
    return this.run(`delete ${remotePath}`, async (client) => {
      await client.remove(remotePath);
    });
  }

  /** Ends the connection in use and refuses queued work. */
  close(): void {
    this.closed = true;
    this.rejectWhenClosed(new Error('driver closed'));
    for (const client of this.active) client.close();
  }
}
