/**
 * A line of text for the simulated camera's picture that changes while the
 * encoder runs (the printer's state and progress): ffmpeg's drawtext reads
 * it from a file before every frame (`textfile`, `reload=1`), so the file is
 * rewritten once a second, atomically (write beside it, then rename: a
 * half-written file would be drawn half, or fail the filter). The file lives
 * in the system's temp directory only while the encoder runs.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const MAX_CHARS = 80;
const REFRESH_MS = 1000;

export class CaptionFile {
  readonly path = path.join(os.tmpdir(), `printfarm-sim-camera-${process.pid}-${randomBytes(6).toString('hex')}.txt`);
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly read: () => string) {}

  /** Writes the file now and then every second. */
  start(): void {
    this.write();
    this.timer ??= setInterval(() => this.write(), REFRESH_MS);
  }

  /** Stops rewriting and removes the file. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    for (const file of [this.path, `${this.path}.next`]) fs.rmSync(file, { force: true });
  }

  private write(): void {
    let text: string;
    try {
      // One line, printable characters only, bounded.
      text = this.read().replace(/[\u0000-\u001f\u007f]/g, ' ').slice(0, MAX_CHARS) || ' ';
    } catch {
      text = ' ';
    }
    try {
      fs.writeFileSync(`${this.path}.next`, text);
      fs.renameSync(`${this.path}.next`, this.path);
    } catch {
      // A full or read-only temp directory costs the caption, not the stream.
    }
  }
}
