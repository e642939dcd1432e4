/**
 * A fetch Response's body, at most `max` bytes counted as they arrive. Decoded bytes: fetch inflates gzip and
 * brotli as it reads, so neither Content-Length nor the bytes on the wire bound what a peer can make us hold.
 * Past `max` the rest is cancelled and `tooLarge()` is thrown (each caller names its own error); a body cut
 * short or timed out rejects with fetch's own error.
 */
export async function readBodyUpTo(res: Response, max: number, tooLarge: () => Error): Promise<Buffer> {
  if (!res.body) return Buffer.alloc(0);
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return Buffer.concat(chunks, size);
      size += value.byteLength;
      if (size > max) throw tooLarge();
      chunks.push(value);
    }
  } catch (err) {
    reader.cancel().catch(() => undefined);
    throw err;
  }
}
