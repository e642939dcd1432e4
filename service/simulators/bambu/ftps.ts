/**
 * The simulated printer's file server: implicit FTPS (TLS from the first
 * byte, port 990 on a real printer), user `bblp` + access code, passive
 * mode only, vsftpd's replies and Unix `ls -l` listings.
 *
 * Like a real printer's vsftpd (`require_ssl_reuse=YES`) it refuses with 522
 * a data connection that does not resume the control connection's TLS
 * session. The control and every data server share one set of session-ticket
 * keys, so `isSessionReused()` on the data socket tells (STACK.md, "Enforcing
 * FTPS session reuse in a simulator").
 *
 * Faults: a bytes-per-second throttle on downloads and uploads; `stalled`
 * freezes command handling and transfers; `offline` drops everything
 * mid-transfer.
 *
 * Two uploads (STOR) to one printer at once spoil each other, as on real
 * printers (QUEUE.md: "two STORs corrupt the file"): the one that started
 * second fails with 426 and leaves nothing, the first completes with 226 but
 * its file is damaged (its last KiB zeroed: a 3MF's zip directory is gone, so
 * the printer's check fails when it is printed). `upload_collisions` counts them.
 */
import { randomBytes } from 'node:crypto';
import type tls from 'node:tls';
import { GatedTlsListener, type LinkMode } from './gate';
import { basename, dirname, resolvePath, type SimStorage } from './files';
import { openPassiveServer, receiveData, sendData, type Passive, type TransferPace } from './ftp-data';
import { listingOf, mdtm } from './ftp-listing';

export { listDate } from './ftp-listing';

export interface SimFtpsOptions {
  key: string;
  cert: string;
  user: string;
  password: string;
  storage: SimStorage;
  /** Transfer throttle (downloads and uploads) in bytes per second; 0 = as fast as the socket takes it. */
  throttle: () => number;
}

export class SimFtps {
  readonly stats = { logins: 0, login_failures: 0, refused_data_connections: 0, sessions: 0, max_concurrent_sessions: 0, transfers: 0, uploads: 0, upload_collisions: 0 };
  /** Uploads receiving right now; a second one spoils both (see the file comment). */
  readonly activeUploads = new Set<{ spoiled: boolean; second: boolean }>();
  readonly sessions = new Set<FtpSession>();
  readonly dataSockets = new Set<tls.TLSSocket>();
  mode: LinkMode = 'online';
  /** One set of session-ticket keys for the control and every data server: resumption works across them. */
  readonly ticketKeys: Buffer;
  private readonly listener: GatedTlsListener;
  private closed = false;

  constructor(readonly options: SimFtpsOptions) {
    this.ticketKeys = randomBytes(48);
    this.listener = new GatedTlsListener({ key: options.key, cert: options.cert, ticketKeys: this.ticketKeys }, (socket) => {
      if (this.closed) {
        socket.destroy();
        return;
      }
      const session = new FtpSession(this, socket);
      this.sessions.add(session);
      this.stats.sessions++;
      this.stats.max_concurrent_sessions = Math.max(this.stats.max_concurrent_sessions, this.sessions.size);
    });
  }

  async listen(): Promise<number> {
    return this.listener.listen(0);
  }

  get port(): number {
    return this.listener.port;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  tlsOptions(): tls.TlsOptions {
    return { key: this.options.key, cert: this.options.cert, ticketKeys: this.ticketKeys };
  }

  async setMode(mode: LinkMode): Promise<void> {
    this.mode = mode;
    if (mode === 'offline') for (const s of [...this.sessions]) s.destroy();
    await this.listener.setMode(mode);
    if (mode === 'online') for (const s of [...this.sessions]) s.kick();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const s of [...this.sessions]) s.destroy();
    for (const d of this.dataSockets) d.destroy();
    await this.listener.close();
  }
}

class FtpSession {
  private buffer = '';
  private readonly queue: string[] = [];
  private busy = false;
  private closed = false;
  private user: string | null = null;
  private authed = false;
  private cwd = '/';
  private prot: 'C' | 'P' = 'C';
  private passive: Passive | null = null;
  private readonly sleepers = new Set<() => void>();

  constructor(
    private readonly server: SimFtps,
    private readonly socket: tls.TLSSocket,
  ) {
    socket.on('error', () => undefined);
    socket.on('close', () => this.destroy());
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    this.reply(220, '(vsFTPd 3.0.5)');
  }

  private onData(chunk: Buffer): void {
    this.buffer += chunk.toString('utf8');
    if (this.buffer.length > 16 * 1024) {
      this.destroy();
      return;
    }
    let at: number;
    while ((at = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, at).replace(/\r$/, '');
      this.buffer = this.buffer.slice(at + 1);
      this.queue.push(line);
    }
    this.pump();
  }

  /** Called when the simulator comes back from a stall. */
  kick(): void {
    for (const wake of [...this.sleepers]) wake();
    this.pump();
  }

  private pump(): void {
    if (this.busy || this.closed || this.server.mode !== 'online') return;
    const line = this.queue.shift();
    if (line === undefined) return;
    this.busy = true;
    this.handle(line)
      .catch(() => this.destroy())
      .finally(() => {
        this.busy = false;
        this.pump();
      });
  }

  destroy(): void {
    if (this.closed) return;
    this.closed = true;
    this.server.sessions.delete(this);
    this.closePassive();
    for (const wake of [...this.sleepers]) wake();
    this.socket.destroy();
  }

  private reply(code: number, text: string): void {
    if (!this.closed && !this.socket.destroyed) this.socket.write(`${code} ${text}\r\n`);
  }

  /** Resolves after `ms`, or early when the session ends or a stall ends. */
  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.sleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.sleepers.add(wake);
    });
  }

  private async whileStalled(): Promise<void> {
    while (!this.closed && this.server.mode === 'stalled') await this.sleep(1000);
  }

  /** How transfers of this session are paced (throttle fault, stalls, the session's end). */
  private readonly pace: TransferPace = {
    rate: () => this.server.options.throttle(),
    sleep: (ms) => this.sleep(ms),
    whileStalled: () => this.whileStalled(),
    stalled: () => this.server.mode === 'stalled',
    closed: () => this.closed,
  };

  private resolve(arg: string): string | null {
    return resolvePath(this.cwd, arg || '.');
  }

  private async handle(line: string): Promise<void> {
    const space = line.indexOf(' ');
    const cmd = (space < 0 ? line : line.slice(0, space)).toUpperCase();
    const arg = space < 0 ? '' : line.slice(space + 1);
    const storage = this.server.options.storage;
    if (!this.authed && !['USER', 'PASS', 'QUIT', 'FEAT', 'SYST', 'NOOP', 'PBSZ', 'PROT', 'OPTS'].includes(cmd)) {
      this.reply(530, 'Please login with USER and PASS.');
      return;
    }
    switch (cmd) {
      case 'USER':
        this.user = arg;
        this.authed = false;
        this.reply(331, 'Please specify the password.');
        return;
      case 'PASS':
        if (this.user === null) return this.reply(503, 'Login with USER first.');
        if (this.user === this.server.options.user && arg === this.server.options.password) {
          this.authed = true;
          this.server.stats.logins++;
          return this.reply(230, 'Login successful.');
        }
        this.server.stats.login_failures++;
        return this.reply(530, 'Login incorrect.');
      case 'PBSZ':
        return this.reply(200, 'PBSZ set to 0.');
      case 'PROT': {
        const level = arg.trim().toUpperCase();
        if (level === 'P' || level === 'C') {
          this.prot = level;
          return this.reply(200, level === 'P' ? 'PROT now Private.' : 'PROT now Clear.');
        }
        return this.reply(536, 'PROT must be C or P.');
      }
      case 'TYPE':
        return this.reply(200, arg.toUpperCase().startsWith('A') ? 'Switching to ASCII mode.' : 'Switching to Binary mode.');
      case 'STRU':
        return arg.toUpperCase() === 'F' ? this.reply(200, 'Structure set to F.') : this.reply(504, 'Bad STRU command.');
      case 'MODE':
        return arg.toUpperCase() === 'S' ? this.reply(200, 'Mode set to S.') : this.reply(504, 'Bad MODE command.');
      case 'PWD':
      case 'XPWD':
        return this.reply(257, `"${this.cwd}" is the current directory`);
      case 'CWD':
      case 'CDUP':
      case 'XCUP': {
        const target = cmd === 'CWD' ? this.resolve(arg) : resolvePath(this.cwd, '..') ?? '/';
        if (target && storage.isDir(target)) {
          this.cwd = target;
          return this.reply(250, 'Directory successfully changed.');
        }
        return this.reply(550, 'Failed to change directory.');
      }
      case 'EPSV': {
        const port = await this.openPassive();
        return this.reply(229, `Entering Extended Passive Mode (|||${port}|)`);
      }
      case 'PASV': {
        const port = await this.openPassive();
        return this.reply(227, `Entering Passive Mode (127,0,0,1,${port >> 8},${port & 255}).`);
      }
      case 'LIST':
      case 'NLST':
      case 'RETR':
      case 'STOR':
        return this.transfer(cmd, arg);
      case 'SIZE': {
        const file = storage.get(this.resolve(arg) ?? '');
        return file ? this.reply(213, String(file.data.length)) : this.reply(550, 'Could not get file size.');
      }
      case 'MDTM': {
        const file = storage.get(this.resolve(arg) ?? '');
        return file ? this.reply(213, mdtm(file.mtime)) : this.reply(550, 'Could not get file modification time.');
      }
      case 'DELE': {
        const path = this.resolve(arg);
        return path && storage.delete(path) ? this.reply(250, 'Delete operation successful.') : this.reply(550, 'Delete operation failed.');
      }
      case 'QUIT':
        this.reply(221, 'Goodbye.');
        this.socket.end();
        return;
      case 'FEAT':
        if (!this.closed) this.socket.write('211-Features:\r\n EPSV\r\n MDTM\r\n PASV\r\n PBSZ\r\n PROT\r\n SIZE\r\n TVFS\r\n UTF8\r\n211 End\r\n');
        return;
      case 'OPTS':
        return arg.toUpperCase().startsWith('UTF8') ? this.reply(200, 'Always in UTF8 mode.') : this.reply(501, 'Option not understood.');
      case 'SYST':
        return this.reply(215, 'UNIX Type: L8');
      case 'NOOP':
        return this.reply(200, 'NOOP ok.');
      case 'ABOR':
        return this.reply(225, 'No transfer to ABOR.');
      default:
        return this.reply(500, 'Unknown command.');
    }
  }

  private closePassive(): void {
    const p = this.passive;
    if (!p) return;
    this.passive = null;
    clearTimeout(p.timer);
    p.server.close();
    p.accepted?.destroy();
  }

  private async openPassive(): Promise<number> {
    this.closePassive();
    const passive = await openPassiveServer(this.server.tlsOptions(), (s) => {
      if (this.closed || this.server.isClosed) return false;
      this.server.dataSockets.add(s);
      s.once('close', () => this.server.dataSockets.delete(s));
      return true;
    });
    this.passive = passive;
    if (this.closed) this.closePassive();
    return passive.port;
  }

  private async transfer(cmd: 'LIST' | 'NLST' | 'RETR' | 'STOR', arg: string): Promise<void> {
    const passive = this.passive;
    if (!passive) return this.reply(425, 'Use PORT or PASV first.');
    try {
      if (this.prot !== 'P') return this.reply(522, 'Data connections must be encrypted.');
      const storage = this.server.options.storage;
      let payload: Buffer | null = null;
      let opening = '';
      let target: string | null = null;
      let done = 'Transfer complete.';
      if (cmd === 'RETR') {
        const file = storage.get(this.resolve(arg) ?? '');
        if (!file) return this.reply(550, 'Failed to open file.');
        payload = file.data;
        opening = `Opening BINARY mode data connection for ${basename(file.path)} (${file.data.length} bytes).`;
      } else if (cmd === 'STOR') {
        target = this.resolve(arg);
        if (!target || !storage.isDir(dirname(target)) || storage.isDir(target)) return this.reply(553, 'Could not create file.');
        opening = 'Ok to send data.';
      } else {
        // `LIST -a /cache`: options first, then the path.
        const path = this.resolve(
          arg
            .split(' ')
            .filter((p) => !p.startsWith('-'))
            .join(' '),
        );
        opening = 'Here comes the directory listing.';
        const listing = listingOf(storage, path, cmd);
        payload = listing.payload;
        // vsftpd: a missing folder is an empty listing, not an error.
        done = listing.found ? 'Directory send OK.' : 'Transfer done (but failed to open directory).';
      }

      let data: tls.TLSSocket;
      try {
        data = await passive.socket;
      } catch {
        return this.reply(425, 'Failed to establish connection.');
      }
      if (!data.isSessionReused()) {
        this.server.stats.refused_data_connections++;
        this.reply(522, 'SSL connection failed: session reuse required');
        data.end();
        return;
      }
      this.reply(150, opening);
      const upload = cmd === 'STOR' ? { spoiled: false, second: false } : null;
      try {
        if (upload) {
          const uploads = this.server.activeUploads;
          if (uploads.size > 0) {
            this.server.stats.upload_collisions++;
            for (const other of uploads) other.spoiled = true;
            upload.spoiled = upload.second = true;
          }
          uploads.add(upload);
          let body: Buffer;
          try {
            body = await receiveData(data, this.pace);
          } finally {
            uploads.delete(upload);
          }
          if (upload.second) throw new Error('collided with another upload');
          if (upload.spoiled) body.fill(0, Math.max(0, body.length - 1024));
          storage.put(target!, body);
          this.server.stats.uploads++;
        } else {
          await sendData(data, payload!, this.pace);
        }
      } catch {
        data.destroy();
        return this.reply(426, 'Failure writing network stream.');
      }
      this.server.stats.transfers++;
      this.reply(226, done);
    } finally {
      if (this.passive === passive) this.passive = null;
      clearTimeout(passive.timer);
      passive.server.close();
    }
  }
}
