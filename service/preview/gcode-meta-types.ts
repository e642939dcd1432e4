/** The shapes of the G-code metadata reader: its options, its result and what it measured. */
import type { PrintMetadata } from './metadata';
import type { ImageFormat } from './png';

export type GcodeFlavor = 'prusaslicer' | 'orcaslicer' | 'bambustudio' | 'cura' | 'unknown';

export interface GcodeThumbnail {
  /** Format of the decoded bytes (from their magic, not only the block keyword). */
  format: ImageFormat;
  /** The block keyword: "thumbnail", "thumbnail_JPG", "thumbnail_QOI". */
  keyword: string;
  width: number;
  height: number;
  /** LEN from the begin line: the length of the base64 text. */
  declaredLength: number;
  /** Length of the base64 text actually found. */
  base64Length: number;
  /** The decoded image bytes (PNG, JPEG or QOI). */
  data: Buffer;
}

export interface GcodeMetaOptions {
  /** Bytes of the file parsed line by line from the start (default 1 MiB). */
  headBytes?: number;
  /** Bytes parsed line by line at the end (default 256 KiB). */
  tailBytes?: number;
  /** Largest base64 text of one thumbnail (default 16 MiB); larger blocks are dropped. */
  maxThumbnailBase64?: number;
  /** Thumbnails kept at most (default 16). */
  maxThumbnails?: number;
  /** Count layer-change markers through the middle when no header states the layer count (default true). */
  countLayers?: boolean;
  /** Longest line kept (default 1 MiB); longer lines are skipped. */
  maxLineBytes?: number;
  /** Read size for files (default 1 MiB). */
  chunkBytes?: number;
}

export interface GcodeMetaStats {
  bytesTotal: number;
  /** Bytes actually read (less than bytesTotal when the middle of a file was skipped). */
  bytesRead: number;
  headBytesParsed: number;
  tailBytesParsed: number;
  middleBytesScanned: number;
  layerMarkersCounted: number | null;
  /** Largest partial line held between chunks. */
  maxCarryBytes: number;
  /** Largest amount of tail data held while streaming. */
  maxTailBufferBytes: number;
  /** Largest base64 text held for one thumbnail. */
  maxThumbnailBase64: number;
  thumbnailsSkipped: number;
}

export interface GcodeMetaResult {
  metadata: PrintMetadata;
  flavor: GcodeFlavor;
  thumbnails: GcodeThumbnail[];
  /** Raw `key = value` / header keys as found (lower-cased keys, capped). */
  raw: Record<string, string>;
  stats: GcodeMetaStats;
}
