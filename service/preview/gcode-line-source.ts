/**
 * Streams a G-code file, Buffer or Readable as lines (latin1, CR stripped, runaway lines
 * dropped) into a consumer that can stop the reading early: the render range is usually a
 * small part of the file.
 */
import { open } from 'node:fs/promises';
import type { Readable } from 'node:stream';

export type Source = string | Buffer | Readable;

/** Splits latin1 text chunks into lines and feeds them; returns false once the consumer stops. */
class LineFeeder {
  private carry = '';
  stopped = false;
  constructor(
    private readonly onLine: (line: string) => boolean,
    private readonly maxLine = 1 << 20,
  ) {}
  feed(text: string): boolean {
    if (this.stopped) return false;
    let pos = 0;
    const n = text.length;
    while (pos < n) {
      const nl = text.indexOf('\n', pos);
      if (nl === -1) {
        if (this.carry.length + (n - pos) <= this.maxLine) this.carry += text.slice(pos);
        else this.carry = this.carry.slice(0, 0); // a runaway line: keep nothing of it
        return true;
      }
      let line = this.carry ? this.carry + text.slice(pos, nl) : text.slice(pos, nl);
      this.carry = '';
      if (line.charCodeAt(line.length - 1) === 13) line = line.slice(0, -1);
      pos = nl + 1;
      if (!this.onLine(line)) {
        this.stopped = true;
        return false;
      }
    }
    return true;
  }
  end(): void {
    if (!this.stopped && this.carry.length) {
      let line = this.carry;
      if (line.charCodeAt(line.length - 1) === 13) line = line.slice(0, -1);
      this.onLine(line);
    }
    this.carry = '';
  }
}

export async function scanSource(source: Source, scanner: { line(line: string): boolean }): Promise<void> {
  const feeder = new LineFeeder((l) => scanner.line(l));
  if (Buffer.isBuffer(source)) {
    const step = 1 << 20;
    for (let p = 0; p < source.length; p += step) {
      if (!feeder.feed(source.toString('latin1', p, Math.min(source.length, p + step)))) return;
    }
    feeder.end();
    return;
  }
  if (typeof source === 'string') {
    const handle = await open(source, 'r');
    try {
      const buf = Buffer.allocUnsafe(256 << 10);
      let pos = 0;
      for (;;) {
        const { bytesRead } = await handle.read(buf, 0, buf.length, pos);
        if (bytesRead === 0) break;
        pos += bytesRead;
        if (!feeder.feed(buf.toString('latin1', 0, bytesRead))) return;
      }
      feeder.end();
    } finally {
      await handle.close();
    }
    return;
  }
  try {
    for await (const chunk of source) {
      const text = typeof chunk === 'string' ? chunk : Buffer.isBuffer(chunk) ? chunk.toString('latin1') : Buffer.from(chunk as Uint8Array).toString('latin1');
      if (!feeder.feed(text)) {
        source.destroy();
        return;
      }
    }
    feeder.end();
  } catch (err) {
    if (feeder.stopped) return;
    throw err;
  }
}
