/**
 * One stream viewer: frames written as multipart/x-mixed-replace parts to an
 * HTTP response. A viewer never makes the service buffer more than one frame:
 * while the last frame has not drained to the socket, new frames are skipped;
 * a viewer that has not taken a frame for `stallMs` is dropped.
 */
import type { ServerResponse } from 'node:http';
import type { CameraFrame } from './source';

export const BOUNDARY = 'printfarm-frame';
export const STREAM_CONTENT_TYPE = `multipart/x-mixed-replace; boundary=${BOUNDARY}`;

/** The client of `res` is gone (its socket closed or the response destroyed). */
export function clientGone(res: ServerResponse): boolean {
  return res.destroyed || !res.socket || res.socket.destroyed;
}

export class MjpegViewer {
  private draining = false;
  private drainingSince = 0;
  private closed = false;
  readonly counts = { sent: 0, skipped: 0 };

  constructor(
    private readonly res: ServerResponse,
    private readonly stallMs: number,
    private readonly onClose: (viewer: MjpegViewer) => void,
  ) {
    res.once('close', () => this.end());
    // A client that left before the stream began: its 'close' has passed, so the viewer ends now.
    if (clientGone(res)) queueMicrotask(() => this.end());
  }

  /** Sends the headers of the stream. */
  open(): void {
    this.res.writeHead(200, {
      'Content-Type': STREAM_CONTENT_TYPE,
      'Cache-Control': 'no-store, no-cache, must-revalidate',
      Pragma: 'no-cache',
      // Reverse proxies (nginx) must pass frames on as they come.
      'X-Accel-Buffering': 'no',
    });
    // The client sees the stream start now, not with the first frame.
    this.res.flushHeaders();
  }

  /** Bytes written to this viewer and not yet taken by its socket. */
  get queuedBytes(): number {
    return this.res.writableLength;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  offer(frame: CameraFrame): void {
    if (this.closed) return;
    if (this.draining) {
      this.counts.skipped++;
      if (Date.now() - this.drainingSince > this.stallMs) this.drop();
      return;
    }
    const head = Buffer.from(`--${BOUNDARY}\r\nContent-Type: image/jpeg\r\nContent-Length: ${frame.jpeg.length}\r\n\r\n`, 'latin1');
    this.res.cork();
    this.res.write(head);
    this.res.write(frame.jpeg);
    const ok = this.res.write('\r\n');
    this.res.uncork();
    this.counts.sent++;
    if (!ok) {
      this.draining = true;
      this.drainingSince = Date.now();
      this.res.once('drain', () => {
        this.draining = false;
      });
    }
  }

  /** The viewer does not read: its connection is cut (nothing more is buffered for it). */
  drop(): void {
    this.res.destroy();
    this.end();
  }

  /** Ends the stream cleanly (the service stops, the camera is reconfigured). */
  finish(): void {
    if (this.closed) return;
    if (this.draining) this.res.destroy();
    else this.res.end();
    this.end();
  }

  private end(): void {
    if (this.closed) return;
    this.closed = true;
    this.onClose(this);
  }
}
