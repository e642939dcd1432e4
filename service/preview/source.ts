/**
 * Random-access byte sources: a Buffer already in memory, or a file read with
 * positioned reads (so a 3MF's central directory or a BGCode block header can
 * be read without loading the whole file).
 */
import { open, type FileHandle } from 'node:fs/promises';
import { PreviewError } from './errors';

export interface ByteSource {
  readonly size: number;
  /** Exactly `length` bytes at `offset`; throws TRUNCATED when the source is shorter. */
  read(offset: number, length: number): Promise<Buffer>;
  close(): Promise<void>;
}

export function bufferSource(buf: Buffer | Uint8Array): ByteSource {
  const data = Buffer.isBuffer(buf) ? buf : Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  return {
    size: data.length,
    async read(offset, length) {
      if (offset < 0 || length < 0 || offset + length > data.length) {
        throw new PreviewError('TRUNCATED', `read of ${length} bytes at ${offset} past the end (${data.length} bytes)`);
      }
      return data.subarray(offset, offset + length);
    },
    async close() {},
  };
}

export async function fileSource(path: string): Promise<ByteSource> {
  const handle: FileHandle = await open(path, 'r');
  let size: number;
  try {
    size = (await handle.stat()).size;
  } catch (err) {
    await handle.close();
    throw err;
  }
  return {
    size,
    async read(offset, length) {
      if (offset < 0 || length < 0 || offset + length > size) {
        throw new PreviewError('TRUNCATED', `read of ${length} bytes at ${offset} past the end (${size} bytes)`);
      }
      const buf = Buffer.allocUnsafe(length);
      let done = 0;
      while (done < length) {
        const { bytesRead } = await handle.read(buf, done, length - done, offset + done);
        if (bytesRead === 0) throw new PreviewError('TRUNCATED', `file ended at ${offset + done} while reading ${length} bytes at ${offset}`);
        done += bytesRead;
      }
      return buf;
    },
    close: () => handle.close(),
  };
}

/** A source for a path or a buffer; the caller closes it. */
export async function openSource(input: string | Buffer | Uint8Array): Promise<ByteSource> {
  return typeof input === 'string' ? fileSource(input) : bufferSource(input);
}

/** Runs `fn` with a source and always closes it. */
export async function withSource<T>(input: string | Buffer | Uint8Array, fn: (src: ByteSource) => Promise<T>): Promise<T> {
  const src = await openSource(input);
  try {
    return await fn(src);
  } finally {
    await src.close();
  }
}
