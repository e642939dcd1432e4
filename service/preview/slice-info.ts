/**
 * The XML configs of Bambu Studio / OrcaSlicer 3MF packages, read with the
 * linear {@link scanXml}: slice_info.config (per-plate slicing results) and
 * the producer named in the model's head.
 */
import { scanXml } from './xml-reader';

/** Largest 3MF config entry read (slice_info, project_settings, Slic3r_PE): real ones are kilobytes. */
export const MAX_3MF_CONFIG_BYTES = 16 * 1024 * 1024;
/** More plates than any slicer makes (Bambu Studio allows 36 per project). */
const MAX_PLATES = 1024;
/** Filaments listed per plate (Bambu's AMS units hold at most 16 plus the external spool per nozzle). */
const MAX_FILAMENTS = 256;

export interface SlicePlate {
  index: number;
  meta: Record<string, string>;
  filaments: Record<string, string>[];
}

/**
 * `<plate>` elements of slice_info.config with their `<metadata key value>` and
 * `<filament .../>` items. Only closed plates count; throws TOO_LARGE past the
 * reader's bounds (a hostile file), never backtracks.
 */
export function parseSliceInfo(xml: string): SlicePlate[] {
  const plates: SlicePlate[] = [];
  let current: { meta: Record<string, string>; filaments: Record<string, string>[]; depth: number } | null = null;
  scanXml(xml, {
    open(el) {
      const name = el.name.toLowerCase();
      if (name === 'plate') {
        // A plate inside a plate is not what slicers write: the outer one keeps collecting.
        if (!current) current = { meta: {}, filaments: [], depth: el.depth };
        return;
      }
      if (!current) return;
      const a = el.attributes;
      if (name === 'metadata' && a.key !== undefined && a.value !== undefined && !(a.key in current.meta)) current.meta[a.key] = a.value;
      else if (name === 'filament' && current.filaments.length < MAX_FILAMENTS) current.filaments.push({ ...a });
    },
    close(name, depth) {
      if (!current || depth !== current.depth || name.toLowerCase() !== 'plate') return;
      if (plates.length < MAX_PLATES) {
        const index = Number(current.meta.index);
        plates.push({ index: Number.isInteger(index) && index > 0 ? index : plates.length + 1, meta: current.meta, filaments: current.filaments });
      }
      current = null;
    },
  });
  return plates;
}

/** The text of `<metadata name="Application">` in the (possibly truncated) head of 3D/3dmodel.model. */
export function modelApplication(head: string): string | null {
  let inside = false;
  let found: string | null = null;
  let text = '';
  try {
    scanXml(head, {
      open(el, selfClosing) {
        inside = found === null && !selfClosing && el.name.toLowerCase() === 'metadata' && el.attributes.name?.toLowerCase() === 'application';
        text = '';
      },
      text(t) {
        if (inside && text.length < 1024) text += t;
      },
      close() {
        if (inside) found = text.trim().slice(0, 256) || null;
        inside = false;
      },
    });
  } catch {
    // The head of a huge model can hit the element bound: what was seen before still counts.
  }
  return found;
}
