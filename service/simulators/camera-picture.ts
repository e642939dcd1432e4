/**
 * The picture a simulated printer's camera shows: a small JPEG with the
 * printer's name, its state and progress (and a progress bar), in a colour
 * per state, so that a screenshot of a camera wall tells the printers apart.
 * Encoding a JPEG in JavaScript costs milliseconds, so a picture is made only
 * when what it shows changes (one cached picture per camera).
 */
import jpeg from 'jpeg-js';
import { drawText, fillRect, textWidth } from './bitmap-font';

export interface PictureFacts {
  name: string;
  /** The state word as the printer shows it (IDLE, RUNNING, PRINTING...). */
  state: string;
  /** 0..100 */
  progress: number;
}

export interface PictureSize {
  width: number;
  height: number;
}

export const DEFAULT_PICTURE_SIZE: PictureSize = { width: 320, height: 180 };

type Rgb = [number, number, number];

function background(state: string): Rgb {
  const s = state.toUpperCase();
  if (/RUNNING|PRINTING|PREPARE/.test(s)) return [22, 92, 52];
  if (/PAUSE/.test(s)) return [140, 100, 10];
  if (/FAIL|ERROR|ATTENTION|STOP/.test(s)) return [140, 28, 28];
  if (/FINISH/.test(s)) return [24, 70, 130];
  return [52, 58, 70];
}

/** Renders one picture (quality 70). */
export function renderPicture(facts: PictureFacts, size: PictureSize = DEFAULT_PICTURE_SIZE): Buffer {
  const { width, height } = size;
  const rgba = Buffer.alloc(width * height * 4);
  fillRect(rgba, width, height, 0, 0, width, height, background(facts.state));
  const white: Rgb = [245, 245, 245];
  const scale = Math.max(1, Math.floor(Math.min(width / 160, height / 90)));
  const line = 10 * scale;
  // The name, shrunk to fit the width.
  let nameScale = scale + 1;
  while (nameScale > 1 && textWidth(facts.name, nameScale) > width - 8) nameScale--;
  drawText(rgba, width, height, facts.name, 6, 6, nameScale, white);
  const progress = Math.max(0, Math.min(100, Math.round(facts.progress)));
  drawText(rgba, width, height, facts.state, 6, 6 + 10 * nameScale, scale, white);
  drawText(rgba, width, height, `${progress}%`, 6, 6 + 10 * nameScale + line, scale + 1, white);
  const barY = height - 6 * scale - 6;
  fillRect(rgba, width, height, 6, barY, width - 12, 6 * scale, [20, 20, 20]);
  fillRect(rgba, width, height, 6, barY, ((width - 12) * progress) / 100, 6 * scale, [250, 200, 40]);
  return jpeg.encode({ data: rgba, width, height }, 70).data;
}

/** One camera's picture, made again only when what it shows changes. */
export class PictureCache {
  private key = '';
  private picture: Buffer | null = null;

  constructor(private readonly size: PictureSize = DEFAULT_PICTURE_SIZE) {}

  get(facts: PictureFacts): Buffer {
    const key = `${facts.name}\u0000${facts.state}\u0000${Math.round(facts.progress)}`;
    if (!this.picture || key !== this.key) {
      this.picture = renderPicture(facts, this.size);
      this.key = key;
    }
    return this.picture;
  }
}
