import { PNG } from 'pngjs';
import { PreviewError } from '../../service/preview/errors';
import { decodePng, encodePng, imageInfo, placeholderPng, toDisplayImage } from '../../service/preview/png';
import { decodeQoi, encodeQoi } from '../../service/preview/qoi';
import { jpegHeader, thumbnailPng, thumbnailQoi } from './builders';

const qoiHeader = (w: number, h: number, channels = 4) => {
  const b = Buffer.alloc(14);
  b.write('qoif', 0, 'latin1');
  b.writeUInt32BE(w, 4);
  b.writeUInt32BE(h, 8);
  b[12] = channels;
  return b;
};
const QOI_END = Buffer.from([0, 0, 0, 0, 0, 0, 0, 1]);
const px = (img: { width: number; data: Buffer }, x: number, y: number) => [...img.data.subarray((y * img.width + x) * 4, (y * img.width + x) * 4 + 4)];

describe('QOI decoding', () => {
  test('every op of the format decodes to the pixels the spec defines', () => {
    // 8 pixels: RGB, RUN x2, DIFF, LUMA, INDEX (back to the first colour), RGBA, then the end marker.
    const ops = Buffer.from([
      0xfe, 100, 150, 200, // RGB (100,150,200)
      0xc0 | 1, // RUN of 2
      0x40 | (3 << 4) | (2 << 2) | 1, // DIFF dr=+1 dg=0 db=-1 -> (101,150,199)
      0x80 | (32 + 10), (8 + 2) << 4 | (8 - 3), // LUMA dg=+10, dr-dg=+2, db-dg=-3 -> (113,160,206)
      (100 * 3 + 150 * 5 + 200 * 7 + 255 * 11) % 64, // INDEX of (100,150,200,255)
      0xff, 1, 2, 3, 4, // RGBA
    ]);
    const img = decodeQoi(Buffer.concat([qoiHeader(8, 1), ops, QOI_END]));
    expect([img.width, img.height]).toEqual([8, 1]);
    expect(px(img, 0, 0)).toEqual([100, 150, 200, 255]);
    expect(px(img, 1, 0)).toEqual([100, 150, 200, 255]);
    expect(px(img, 2, 0)).toEqual([100, 150, 200, 255]);
    expect(px(img, 3, 0)).toEqual([101, 150, 199, 255]);
    expect(px(img, 4, 0)).toEqual([113, 160, 206, 255]);
    expect(px(img, 5, 0)).toEqual([100, 150, 200, 255]);
    expect(px(img, 6, 0)).toEqual([1, 2, 3, 4]);
  });

  test('a picture survives QOI encoding and decoding pixel for pixel', () => {
    const png = PNG.sync.read(thumbnailPng(313, 173, 30));
    const back = decodeQoi(encodeQoi({ width: 313, height: 173, data: png.data }));
    expect(back.data.equals(png.data)).toBe(true);
  });

  test('cut-off, foreign and oversized QOI data is refused with a PreviewError code', () => {
    const good = thumbnailQoi(32, 32);
    expect(() => decodeQoi(good.subarray(0, 40))).toThrow(expect.objectContaining({ code: 'TRUNCATED' }));
    expect(() => decodeQoi(good.subarray(0, 10))).toThrow(expect.objectContaining({ code: 'TRUNCATED' }));
    expect(() => decodeQoi(Buffer.from('notaqoi-image-at-all'))).toThrow(expect.objectContaining({ code: 'MALFORMED' }));
    expect(() => decodeQoi(Buffer.concat([qoiHeader(0, 5), QOI_END]))).toThrow(expect.objectContaining({ code: 'MALFORMED' }));
    expect(() => decodeQoi(Buffer.concat([qoiHeader(100000, 100000), QOI_END]))).toThrow(expect.objectContaining({ code: 'TOO_LARGE' }));
    expect(() => decodeQoi(Buffer.concat([qoiHeader(4, 4, 7), QOI_END]))).toThrow(PreviewError);
  });
});

describe('PNG, JPEG and QOI sniffing', () => {
  test('imageInfo reads format and size from the header alone', () => {
    expect(imageInfo(thumbnailPng(64, 48))).toEqual({ format: 'png', width: 64, height: 48 });
    expect(imageInfo(thumbnailQoi(16, 9))).toEqual({ format: 'qoi', width: 16, height: 9 });
    expect(imageInfo(jpegHeader(640, 480))).toEqual({ format: 'jpg', width: 640, height: 480 });
    expect(imageInfo(Buffer.from('GIF89a....'))).toBeNull();
    expect(imageInfo(thumbnailPng(64, 48).subarray(0, 12))).toBeNull();
  });

  test('toDisplayImage passes PNG and JPEG through and converts QOI to an identical PNG', () => {
    const png = thumbnailPng(40, 30);
    expect(toDisplayImage(png)).toMatchObject({ mime: 'image/png', width: 40, height: 30, data: png });
    expect(toDisplayImage(jpegHeader(8, 8))).toMatchObject({ mime: 'image/jpeg', width: 8, height: 8 });
    const converted = toDisplayImage(thumbnailQoi(40, 30));
    expect(converted.mime).toBe('image/png');
    expect(decodePng(converted.data).data.equals(decodePng(png).data)).toBe(true);
    expect(() => toDisplayImage(Buffer.from('plain text'))).toThrow(expect.objectContaining({ code: 'MALFORMED' }));
  });

  test('encodePng checks the buffer against the size', () => {
    const rgba = Buffer.alloc(4 * 3 * 2, 255);
    expect(decodePng(encodePng(rgba, 3, 2))).toMatchObject({ width: 3, height: 2 });
    expect(() => encodePng(rgba, 4, 2)).toThrow(expect.objectContaining({ code: 'MALFORMED' }));
    expect(() => encodePng(Buffer.alloc(0), 0, 0)).toThrow(expect.objectContaining({ code: 'TOO_LARGE' }));
    expect(() => decodePng(Buffer.from('not a png'))).toThrow(expect.objectContaining({ code: 'MALFORMED' }));
  });
});

describe('the placeholder', () => {
  test('is a neutral grey card with a darker "no preview" mark in the middle and rounded transparent corners', () => {
    const img = decodePng(placeholderPng(256));
    expect([img.width, img.height]).toEqual([256, 256]);
    const at = (x: number, y: number) => px(img, x, y);
    expect(at(0, 0)[3]).toBe(0); // rounded corner
    const card = at(30, 128);
    expect(card[3]).toBe(255);
    expect(card[0]).toBe(card[2] - 6); // a neutral, slightly cool grey
    // The ring crosses the horizontal centre line; the bar crosses the centre.
    const centre = at(128, 128);
    expect(centre[0]).toBeLessThan(card[0] - 40);
    const ringX = Math.round(128 - 256 * 0.22 + 3);
    expect(at(ringX, 128)[0]).toBeLessThan(card[0] - 40);
    expect(decodePng(placeholderPng(320, 200))).toMatchObject({ width: 320, height: 200 });
    expect(() => placeholderPng(2)).toThrow(PreviewError);
  });
});
