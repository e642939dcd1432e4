/**
 * A camera_url over http(s): an MJPEG stream (multipart/x-mixed-replace, read
 * part by part) or a snapshot URL (one picture per request, asked again every
 * `pollMs`). Whatever the URL looks like, the answer's Content-Type decides.
 * User name and password in the URL go out as Basic authentication. Like the
 * printers on the LAN, an https camera's self-signed certificate is accepted.
 */
import http from 'node:http';
import https from 'node:https';
import { DEFAULT_MAX_FRAME_BYTES } from './bambu-protocol';
import { boundaryOf, MjpegParser } from './mjpeg-parser';
import { toJpeg } from './polling';
import { CameraError, type CameraSource } from './source';
import { asCameraError, networkError, SourceBase } from './source-base';

export interface HttpCameraOptions {
  url: string;
  kind: 'mjpeg' | 'snapshot';
  /** Deadline for an answer, and the longest silence inside a stream (ms). */
  timeoutMs: number;
  /** Pause between snapshot requests (ms). */
  pollMs: number;
  maxFrameBytes?: number;
}

export class HttpCameraSource extends SourceBase implements CameraSource {
  readonly kind: 'mjpeg' | 'snapshot';
  private request: http.ClientRequest | null = null;
  private pollTimer: NodeJS.Timeout | null = null;
  private started = false;
  private readonly target: URL;
  private readonly where: string;

  constructor(private readonly options: HttpCameraOptions) {
    super();
    this.kind = options.kind;
    this.target = new URL(options.url);
    this.where = this.target.host;
  }

  start(): void {
    if (this.started || this.finished) return;
    this.started = true;
    this.fetch();
  }

  private get maxBytes(): number {
    return this.options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
  }

  private fetch(): void {
    this.pollTimer = null;
    if (this.finished) return;
    const url = this.target;
    const headers: Record<string, string> = { accept: 'multipart/x-mixed-replace, image/jpeg, image/png;q=0.8' };
    if (url.username || url.password) {
      headers.authorization = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`;
    }
    const path = `${url.pathname}${url.search}`;
    // No pooled sockets: nothing stays open after close(), and a late event of an old request is not this one's.
    const options = { host: url.hostname.replace(/^\[|\]$/g, ''), port: url.port || undefined, path, headers, timeout: this.options.timeoutMs, agent: false };
    const req = url.protocol === 'https:' ? https.get({ ...options, rejectUnauthorized: false }) : http.get(options);
    this.request = req;
    req.on('timeout', () => req === this.request && this.fail(new CameraError('TIMEOUT', `the camera at ${this.where} did not answer within ${Math.round(this.options.timeoutMs / 1000)} s`)));
    req.on('error', (err: Error & { code?: unknown }) => req === this.request && this.fail(networkError(err, this.where)));
    req.on('response', (res) => {
      try {
        this.onResponse(res);
      } catch (err) {
        this.fail(asCameraError(err));
      }
    });
  }

  private onResponse(res: http.IncomingMessage): void {
    // A connection reset mid-answer ends `res` with 'close' but no 'end' (and its 'error' only reaches listeners):
    // without this, the source would go silent and report nothing, the socket and its timeout gone with it.
    res.once('close', () => {
      if (!res.complete) this.fail(new CameraError('OFFLINE', `the camera at ${this.where} closed the connection mid-answer`));
    });
    const status = res.statusCode ?? 0;
    if (status === 401 || status === 403) throw new CameraError('AUTH', `the camera at ${this.where} refused the credentials (HTTP ${status})`);
    if (status < 200 || status >= 300) throw new CameraError('PROTOCOL', `the camera at ${this.where} answered HTTP ${status}`);
    const type = String(res.headers['content-type'] ?? '');
    if (/^multipart\//i.test(type)) {
      const boundary = boundaryOf(type);
      if (!boundary) throw new CameraError('PROTOCOL', `the camera at ${this.where} sent a multipart stream without a boundary`);
      const parser = new MjpegParser(boundary, this.maxBytes, (jpeg) => this.emitFrame(jpeg));
      res.on('data', (chunk: Buffer) => {
        try {
          parser.push(chunk);
        } catch (err) {
          this.fail(asCameraError(err));
        }
      });
      res.once('end', () => this.fail(new CameraError('OFFLINE', `the camera at ${this.where} ended its stream`)));
      return;
    }
    if (!/^image\//i.test(type)) throw new CameraError('PROTOCOL', `the camera at ${this.where} answered with ${type || 'no content type'}, not a picture or MJPEG stream`);
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > this.maxBytes) this.fail(new CameraError('PROTOCOL', `the camera at ${this.where} sent a picture over ${this.maxBytes} bytes`));
      else chunks.push(chunk);
    });
    res.once('end', () => {
      if (this.finished) return;
      try {
        this.emitFrame(toJpeg(Buffer.concat(chunks)));
      } catch (err) {
        return this.fail(asCameraError(err));
      }
      this.request = null;
      this.pollTimer = setTimeout(() => this.fetch(), this.options.pollMs);
    });
  }

  protected stop(): void {
    if (this.pollTimer) clearTimeout(this.pollTimer);
    this.pollTimer = null;
    this.request?.destroy();
    this.request = null;
  }
}
