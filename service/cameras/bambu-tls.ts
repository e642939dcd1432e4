/**
 * The Bambu "JPEG over TLS" camera source (A1 / A1 mini / P1P / P1S, port
 * 6000). Trust rules as the MQTT link (printers/bambu/link.ts): the printer's
 * certificate comes from Bambu's private CA for CN = serial, so it is not
 * verified; the access code is the authentication. TLS 1.2 at most, as some
 * firmware never answers a TLS 1.3 ClientHello.
 *
 * A printer that refuses the access code closes the socket without a frame:
 * a close before the first frame is reported as AUTH.
 */
import net from 'node:net';
import tls from 'node:tls';
import { authPacket, BambuFrameReader, DEFAULT_MAX_FRAME_BYTES } from './bambu-protocol';
import { CameraError, type CameraSource } from './source';
import { asCameraError, networkError, SourceBase } from './source-base';

export interface BambuTlsOptions {
  host: string;
  port: number;
  accessCode: string;
  /** Sent as SNI when it is not an IP address (what the printer's certificate names). */
  serial?: string | null;
  /** How long the TCP connect and TLS handshake may take (ms). */
  connectTimeoutMs: number;
  maxFrameBytes?: number;
}

export class BambuTlsSource extends SourceBase implements CameraSource {
  readonly kind = 'bambu_tls' as const;
  private socket: tls.TLSSocket | null = null;
  private connectTimer: NodeJS.Timeout | null = null;
  private frames = 0;
  private authSent = false;

  constructor(private readonly options: BambuTlsOptions) {
    super();
  }

  private get where(): string {
    return `${this.options.host}:${this.options.port}`;
  }

  start(): void {
    if (this.socket || this.finished) return;
    let packet: Buffer;
    try {
      packet = authPacket(this.options.accessCode);
    } catch (err) {
      this.fail(asCameraError(err));
      return;
    }
    const { host, port, serial } = this.options;
    const socket = tls.connect({
      host,
      port,
      rejectUnauthorized: false,
      maxVersion: 'TLSv1.2',
      ...(serial && net.isIP(serial) === 0 ? { servername: serial } : {}),
    });
    this.socket = socket;
    this.connectTimer = setTimeout(
      () => this.fail(new CameraError('TIMEOUT', `the camera at ${this.where} did not complete the TLS handshake within ${Math.round(this.options.connectTimeoutMs / 1000)} s`)),
      this.options.connectTimeoutMs,
    );
    const reader = new BambuFrameReader(this.options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES, (jpeg) => {
      this.frames++;
      this.emitFrame(jpeg);
    });
    socket.once('secureConnect', () => {
      this.clearConnectTimer();
      this.authSent = true;
      socket.write(packet);
    });
    socket.on('data', (chunk: Buffer) => {
      try {
        reader.push(chunk);
      } catch (err) {
        this.fail(asCameraError(err));
      }
    });
    socket.on('error', (err: Error & { code?: unknown }) => this.fail(networkError(err, this.where)));
    socket.once('close', () => {
      if (this.frames === 0 && this.authSent) {
        this.fail(new CameraError('AUTH', `the camera at ${this.where} closed the connection without a frame: the access code was refused`));
      } else this.fail(new CameraError('OFFLINE', `the camera at ${this.where} closed the connection`));
    });
  }

  protected stop(): void {
    this.clearConnectTimer();
    this.socket?.destroy();
  }

  private clearConnectTimer(): void {
    if (this.connectTimer) clearTimeout(this.connectTimer);
    this.connectTimer = null;
  }
}
