/**
 * A camera that gives single pictures (PrusaLink's snap, a webcam's snapshot
 * URL): fetched one after the other, at most one every `pollMs`, until the
 * source is closed or a fetch fails. PNG pictures are turned into JPEG (the
 * hub serves JPEG only); the size of a picture is bounded by its fetcher.
 */
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import { CameraError } from './source';
import { asCameraError, looksLikeJpeg, SourceBase } from './source-base';

/** Pictures larger than this many pixels are refused (a 4K frame is 8.3 MP). */
const MAX_PIXELS = 16_000_000;

export abstract class PollingSource extends SourceBase {
  private running = false;
  private readonly abort = new AbortController();
  private sleeper: { timer: NodeJS.Timeout; wake: () => void } | null = null;

  constructor(private readonly pollMs: number) {
    super();
  }

  /** One picture, or null when the camera has none right now (PrusaLink's 204). */
  protected abstract fetchOnce(signal: AbortSignal): Promise<Buffer | null>;

  start(): void {
    if (this.running || this.finished) return;
    this.running = true;
    void this.loop();
  }

  private async loop(): Promise<void> {
    while (!this.finished) {
      const started = Date.now();
      try {
        const picture = await this.fetchOnce(this.abort.signal);
        if (this.finished) return;
        if (picture) this.emitFrame(toJpeg(picture));
      } catch (err) {
        this.fail(asCameraError(err));
        return;
      }
      await this.sleep(Math.max(50, this.pollMs - (Date.now() - started)));
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        this.sleeper = null;
        resolve();
      };
      this.sleeper = { timer: setTimeout(wake, ms), wake };
    });
  }

  protected stop(): void {
    this.abort.abort(new CameraError('OFFLINE', 'camera closed'));
    if (this.sleeper) {
      clearTimeout(this.sleeper.timer);
      this.sleeper.wake();
    }
  }
}

const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** A JPEG as it is, a PNG re-encoded as JPEG (quality 85); anything else is a PROTOCOL error. */
export function toJpeg(picture: Buffer): Buffer {
  if (looksLikeJpeg(picture)) return picture;
  if (picture.subarray(0, 8).equals(PNG_MAGIC)) {
    // IHDR comes first: width and height are checked before anything is decoded.
    const width = picture.length >= 24 ? picture.readUInt32BE(16) : 0;
    const height = picture.length >= 24 ? picture.readUInt32BE(20) : 0;
    if (!width || !height || width * height > MAX_PIXELS) throw new CameraError('PROTOCOL', `the camera sent a PNG of ${width}x${height} pixels`);
    // pngjs bounds the inflated pixel data by the header's size only for non-interlaced PNGs; an interlaced
    // one is inflated without a bound (4 MiB of zlib bomb is 4 GiB), so it is refused: cameras do not send Adam7.
    if (picture.length >= 29 && picture[28] !== 0) throw new CameraError('PROTOCOL', 'the camera sent an interlaced PNG, which is not read');
    try {
      const png = PNG.sync.read(picture);
      return jpeg.encode({ data: png.data, width: png.width, height: png.height }, 85).data;
    } catch (err) {
      throw new CameraError('PROTOCOL', `the camera sent a PNG that cannot be read: ${(err as Error).message}`);
    }
  }
  throw new CameraError('PROTOCOL', 'the camera sent a picture that is neither JPEG nor PNG');
}
