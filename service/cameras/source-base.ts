/**
 * What every CameraSource shares: its listeners, and the rule that a source
 * reports at most one error and nothing after it or after close(). The hub
 * closes a source that failed and opens a new one when it wants frames again.
 */
import { CameraError, type CameraFrame } from './source';

type Listener<T> = (value: T) => void;

export abstract class SourceBase {
  private readonly frameListeners = new Set<Listener<CameraFrame>>();
  private readonly errorListeners = new Set<Listener<CameraError>>();
  /** True after the first error or close(): nothing is reported any more. */
  protected finished = false;

  onFrame(listener: Listener<CameraFrame>): () => void {
    this.frameListeners.add(listener);
    return () => this.frameListeners.delete(listener);
  }

  onError(listener: Listener<CameraError>): () => void {
    this.errorListeners.add(listener);
    return () => this.errorListeners.delete(listener);
  }

  protected emitFrame(jpeg: Buffer): void {
    if (this.finished) return;
    const frame: CameraFrame = { jpeg, at: Date.now() };
    for (const listener of [...this.frameListeners]) listener(frame);
  }

  /** Reports `error` once, then ends the source's connections (stop()). */
  protected fail(error: CameraError): void {
    if (this.finished) return;
    this.finished = true;
    this.stop();
    for (const listener of [...this.errorListeners]) listener(error);
  }

  /** Ends every socket, timer and child of the source; called once by fail() or close(). */
  protected abstract stop(): void;

  async close(): Promise<void> {
    if (!this.finished) {
      this.finished = true;
      this.stop();
    }
    this.frameListeners.clear();
    this.errorListeners.clear();
  }
}

/** Any thrown value as a CameraError (PROTOCOL unless it already is one). */
export function asCameraError(err: unknown): CameraError {
  if (err instanceof CameraError) return err;
  return new CameraError('PROTOCOL', err instanceof Error ? err.message : String(err));
}

/** A JPEG starts with SOI (FF D8) and ends with EOI (FF D9); trailing padding after EOI is tolerated by decoders, not required here. */
export function looksLikeJpeg(data: Buffer): boolean {
  return data.length >= 4 && data[0] === 0xff && data[1] === 0xd8;
}

/** Socket error codes that mean "the camera cannot be reached". */
export function networkError(err: Error & { code?: unknown }, where: string): CameraError {
  const code = typeof err.code === 'string' ? err.code : '';
  if (code === 'ETIMEDOUT') return new CameraError('TIMEOUT', `the camera at ${where} did not answer (ETIMEDOUT)`);
  if (code) return new CameraError('OFFLINE', `the camera at ${where} cannot be reached (${code})`);
  return new CameraError('OFFLINE', `the camera connection to ${where} failed: ${err.message}`);
}
