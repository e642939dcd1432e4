/**
 * The comment lines of a G-code file's head and tail, interpreted: thumbnail blocks
 * (`; thumbnail[_JPG|_QOI] begin WxH LEN` ... `; thumbnail[_X] end`), the slicers' metadata
 * comments (PrusaSlicer `; key = value`, Bambu/Orca header and config blocks, Cura `;KEY:value`
 * and `;SETTING_3`) and the producer line. The byte-level scanner decides which lines get here;
 * this class only reads them, keeping every size it holds capped.
 */
import type { GcodeFlavor, GcodeMetaOptions, GcodeMetaResult, GcodeMetaStats, GcodeThumbnail } from './gcode-meta-types';
import type { LayerMarkerCounter } from './gcode-layers';
import { cleanSlicerName, mergeMetadata, metadataFromCura, metadataFromSlicerKeys, type PrintMetadata } from './metadata';
import { imageInfo } from './png';

const MAX_RAW_KEYS = 10_000;
const MAX_RAW_VALUE = 8192;
const MAX_CURA_SETTINGS = 256 << 10;

const THUMB_BEGIN = /^;\s*(thumbnail(?:_(\w+))?)\s+begin\s+(\d+)\s*x\s*(\d+)\s+(\d+)/i;
const THUMB_END = /^;\s*thumbnail(?:_\w+)?\s+end\b/i;
const CURA_KEYS = new Set(['time', 'filament used', 'layer height', 'layer_count', 'flavor', 'target_machine.name', 'print.time']);

export interface OpenThumb {
  keyword: string;
  kind: string;
  width: number;
  height: number;
  declared: number;
  parts: string[];
  chars: number;
  discard: boolean;
}

export class GcodeCommentLines {
  /** The thumbnail block being read, if any. */
  thumb: OpenThumb | null = null;
  private readonly thumbs: GcodeThumbnail[] = [];
  private inHeaderBlock = false;
  /** Between Bambu/Orca's HEADER_BLOCK_START and CONFIG_BLOCK_END / EXECUTABLE_BLOCK_START. */
  headerSectionOpen = false;
  linesSinceThumbnail = Infinity;
  inConfig = false;
  configBytes = 0;
  private readonly raw: Record<string, string> = {};
  private rawCount = 0;
  private readonly cura: Record<string, string> = {};
  private curaSettings = '';
  private slicerText: string | null = null;
  private flavor: GcodeFlavor = 'unknown';

  constructor(
    private readonly options: Required<GcodeMetaOptions>,
    private readonly stats: GcodeMetaStats,
    private readonly layers: LayerMarkerCounter,
  ) {}

  /** True when a header already states the layer count (no need to count markers). */
  get layerCountStated(): boolean {
    return ['total layer number', 'layer_count', 'total_layer_number'].some((k) => k in this.raw) || 'layer_count' in this.cura;
  }

  /** A thumbnail block still open at the end of the head or file is dropped. */
  dropOpenThumbnail(): void {
    if (this.thumb) {
      this.stats.thumbnailsSkipped++;
      this.thumb = null;
    }
  }

  /** The head is over: blocks still open there stay unread. */
  endHead(): void {
    this.dropOpenThumbnail();
    this.inConfig = false;
    this.inHeaderBlock = false;
    this.headerSectionOpen = false;
  }

  /** A line of the tail (CR already stripped). */
  tailLine(line: string): void {
    this.handleLine(line, false);
  }

  /** What the lines said, with the layer count found by markers where no header stated it. */
  result(counted: number | null): Pick<GcodeMetaResult, 'metadata' | 'flavor' | 'thumbnails' | 'raw'> {
    const flavor = this.resolveFlavor();
    const slicer = cleanSlicerName(this.slicerText);
    let metadata: PrintMetadata;
    if (flavor === 'cura') {
      metadata = mergeMetadata(metadataFromCura(this.cura, this.curaSettings), { slicer });
    } else {
      metadata = metadataFromSlicerKeys(this.raw, { slicer });
      if (metadata.estimated_print_time === null && Object.keys(this.cura).length > 0) {
        metadata = mergeMetadata(metadata, metadataFromCura(this.cura, this.curaSettings));
      }
    }
    if (metadata.layer_count === null && counted !== null) metadata.layer_count = counted;
    if (metadata.slicer === null && slicer) metadata.slicer = slicer;
    return { metadata, flavor, thumbnails: this.thumbs.slice(), raw: { ...this.raw } };
  }

  /** A comment line of the head, or any line inside a thumbnail block. */
  headLine(lineText: string): void {
    const line = lineText.endsWith('\r') ? lineText.slice(0, -1) : lineText;
    if (this.thumb) {
      if (THUMB_END.test(line)) {
        this.closeThumbnail();
        return;
      }
      if (line.startsWith(';')) {
        if (!this.thumb.discard) {
          const part = line.slice(1).trim();
          if (part.length) {
            this.thumb.chars += part.length;
            if (this.thumb.chars > this.options.maxThumbnailBase64) {
              this.thumb.discard = true;
              this.thumb.parts = [];
            } else {
              this.thumb.parts.push(part);
              if (this.thumb.chars > this.stats.maxThumbnailBase64) this.stats.maxThumbnailBase64 = this.thumb.chars;
            }
          }
        }
        return;
      }
      // A G-code line inside a thumbnail block: the block is broken.
      this.stats.thumbnailsSkipped++;
      this.thumb = null;
    }
    const begin = THUMB_BEGIN.exec(line);
    if (begin) {
      const kind = (begin[2] ?? 'PNG').toUpperCase();
      const supported = kind === 'PNG' || kind === 'JPG' || kind === 'JPEG' || kind === 'QOI';
      this.thumb = {
        keyword: begin[1],
        kind,
        width: Number(begin[3]),
        height: Number(begin[4]),
        declared: Number(begin[5]),
        parts: [],
        chars: 0,
        discard: !supported || this.thumbs.length >= this.options.maxThumbnails,
      };
      return;
    }
    this.handleLine(line, true);
  }

  private closeThumbnail(): void {
    const t = this.thumb!;
    this.thumb = null;
    this.linesSinceThumbnail = 0;
    if (t.discard) {
      this.stats.thumbnailsSkipped++;
      return;
    }
    const b64 = t.parts.join('');
    const data = Buffer.from(b64, 'base64');
    const info = imageInfo(data);
    if (!info) {
      this.stats.thumbnailsSkipped++;
      return;
    }
    this.thumbs.push({
      format: info.format,
      keyword: t.keyword,
      width: info.width || t.width,
      height: info.height || t.height,
      declaredLength: t.declared,
      base64Length: b64.length,
      data,
    });
  }

  /** Metadata lines of the head and the tail. */
  private handleLine(line: string, inHead: boolean): void {
    if (line.length < 2 || line.charCodeAt(0) !== 59 /* ; */) return;
    if (inHead) this.layers.headLine(line);
    if (line.startsWith(';SETTING_3 ')) {
      if (this.curaSettings.length < MAX_CURA_SETTINGS) this.curaSettings += line.slice(11);
      return;
    }
    const body = line.slice(1).trim();
    if (body === 'HEADER_BLOCK_START') {
      this.inHeaderBlock = true;
      if (inHead) this.headerSectionOpen = true;
      return;
    }
    if (body === 'EXECUTABLE_BLOCK_START') {
      this.headerSectionOpen = false;
      return;
    }
    if (body === 'HEADER_BLOCK_END') {
      this.inHeaderBlock = false;
      return;
    }
    if (body === 'CONFIG_BLOCK_START' || /^prusaslicer_config\s*=\s*begin$/.test(body)) {
      this.inConfig = true;
      this.configBytes = 0;
      return;
    }
    if (body === 'CONFIG_BLOCK_END' || /^prusaslicer_config\s*=\s*end$/.test(body)) {
      this.inConfig = false;
      this.headerSectionOpen = false;
      return;
    }
    const generated = /^generated by\s+(.+)$/i.exec(body);
    if (generated) {
      this.setSlicer(generated[1]);
      return;
    }
    const cura = /^Generated with\s+(.+)$/i.exec(body);
    if (cura && line[1] !== ' ') {
      this.setSlicer(cura[1]);
      this.cura['generated with'] ??= cura[1].trim();
      return;
    }
    if (this.inHeaderBlock) {
      const producer = /^(BambuStudio|OrcaSlicer|[A-Za-z]+ ?Orca\w*)\s+v?(\d[\w.]*)\s*$/i.exec(body);
      if (producer) {
        this.setSlicer(`${producer[1]} ${producer[2]}`);
        return;
      }
      // "; model printing time: 4m 54s; total estimated time: 10m 22s"
      for (const part of body.split(';')) {
        const c = part.indexOf(':');
        if (c > 0) this.setRaw(part.slice(0, c), part.slice(c + 1));
      }
      return;
    }
    // `; key = value` (PrusaSlicer header/footer/config, Orca/Bambu config block)
    const eq = body.indexOf('=');
    if (eq > 0 && line[1] === ' ') {
      this.setRaw(body.slice(0, eq), body.slice(eq + 1));
      return;
    }
    // Cura: `;KEY:value` without a space after the semicolon.
    if (line[1] !== ' ') {
      const c = body.indexOf(':');
      if (c > 0) {
        const key = body.slice(0, c).trim().toLowerCase();
        if (CURA_KEYS.has(key) && !(key in this.cura)) this.cura[key] = body.slice(c + 1).trim();
      }
    }
  }

  private setRaw(keyText: string, valueText: string): void {
    const key = keyText.trim().toLowerCase();
    if (!key || key.length > 200) return;
    if (!(key in this.raw)) {
      if (this.rawCount >= MAX_RAW_KEYS) return;
      this.rawCount++;
    }
    const value = valueText.trim();
    this.raw[key] = value.length > MAX_RAW_VALUE ? value.slice(0, MAX_RAW_VALUE) : value;
  }

  private setSlicer(text: string): void {
    if (this.slicerText) return;
    this.slicerText = text.trim();
    const t = this.slicerText.toLowerCase();
    if (t.startsWith('prusaslicer') || t.startsWith('superslicer') || t.startsWith('slic3r')) this.flavor = 'prusaslicer';
    else if (t.includes('orca')) this.flavor = 'orcaslicer';
    else if (t.startsWith('bambustudio') || t.startsWith('bambu studio')) this.flavor = 'bambustudio';
    else if (t.startsWith('cura')) this.flavor = 'cura';
  }

  resolveFlavor(): GcodeFlavor {
    if (this.flavor !== 'unknown') return this.flavor;
    if ('time' in this.cura || 'layer_count' in this.cura || 'flavor' in this.cura) return 'cura';
    return 'unknown';
  }
}
