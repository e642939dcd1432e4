import { crc32, inflateSync } from 'node:zlib';
import { unzipSync, strFromU8 } from 'fflate';
import { PNG } from 'pngjs';
import { bambu3mf, seedFiles } from '../../service/simulators/seed-files';

const file = (suffix: string) => seedFiles().find((f) => f.name.endsWith(suffix))!.data;

describe('simulator seed files are real formats', () => {
  test('the .gcode.3mf is a zip with plate G-code, a PNG thumbnail and slice_info', () => {
    const zip = unzipSync(file('.gcode.3mf'));
    expect(Object.keys(zip)).toEqual(expect.arrayContaining(['Metadata/plate_1.gcode', 'Metadata/plate_1.png', 'Metadata/slice_info.config', '_rels/.rels']));
    const png = PNG.sync.read(Buffer.from(zip['Metadata/plate_1.png']));
    expect([png.width, png.height]).toEqual([256, 256]);
    expect(strFromU8(zip['Metadata/slice_info.config'])).toContain('<metadata key="prediction" value="622"/>');
  });

  test('the .gcode has decodable thumbnail blocks whose length is the base64 length', () => {
    const text = file('.gcode').toString();
    const blocks = [...text.matchAll(/; thumbnail begin (\d+)x(\d+) (\d+)\n([\s\S]*?); thumbnail end/g)];
    expect(blocks).toHaveLength(2);
    for (const [, w, h, len, body] of blocks) {
      const b64 = body.replace(/^; /gm, '').replace(/\n/g, '');
      expect(b64.length).toBe(Number(len));
      const png = PNG.sync.read(Buffer.from(b64, 'base64'));
      expect([png.width, png.height]).toEqual([Number(w), Number(h)]);
    }
    expect(text).toContain('; estimated printing time (normal mode) = 12m 30s');
  });

  test('the .bgcode has a GCDE header and blocks with correct CRC32s', () => {
    const buf = file('.bgcode');
    expect(buf.subarray(0, 4).toString()).toBe('GCDE');
    expect(buf.readUInt16LE(8)).toBe(1);
    const types: number[] = [];
    for (let off = 10; off < buf.length; ) {
      const type = buf.readUInt16LE(off);
      const compression = buf.readUInt16LE(off + 2);
      const size = buf.readUInt32LE(off + 4);
      const headerLen = compression ? 12 : 8;
      const dataLen = compression ? buf.readUInt32LE(off + 8) : size;
      const paramsLen = type === 5 ? 6 : 2;
      const end = off + headerLen + paramsLen + dataLen;
      expect(buf.readUInt32LE(end)).toBe(crc32(buf.subarray(off, end)) >>> 0);
      if (compression === 1) expect(inflateSync(buf.subarray(off + headerLen + paramsLen, end)).length).toBe(size);
      types.push(type);
      off = end + 4;
    }
    expect(types).toEqual([0, 3, 5, 5, 4, 2, 1]);
  });

  test('the .stl is a binary STL with its triangle count', () => {
    const stl = file('.stl');
    expect(stl.readUInt32LE(80)).toBe(12);
    expect(stl.length).toBe(84 + 12 * 50);
  });

  test('each printer gets files sliced for its model, with their filament list', () => {
    const sliceInfo = (data: Buffer) => strFromU8(unzipSync(data)['Metadata/slice_info.config']);
    const settings = (data: Buffer) => JSON.parse(strFromU8(unzipSync(data)['Metadata/project_settings.config'])) as Record<string, unknown>;
    const x1c = seedFiles({ bambu: 'X1C' }).find((f) => f.name.endsWith('.gcode.3mf'))!.data;
    expect(sliceInfo(x1c)).toContain('<metadata key="printer_model_id" value="BL-P001"/>');
    expect(sliceInfo(x1c)).toMatch(/<filament id="1" tray_info_idx="GFA00" type="PLA" color="#FFFFFF"/);
    expect(settings(x1c)).toMatchObject({ printer_model: 'Bambu Lab X1 Carbon', filament_type: ['PLA'], filament_colour: ['#FFFFFF'], nozzle_diameter: ['0.4'] });
    expect(sliceInfo(file('.gcode.3mf'))).toContain('value="C12"'); // the default stays a P1S file

    const two = bambu3mf({ model: 'A1', filaments: [{ type: 'PLA', color: '#FFFFFF' }, { type: 'PETG', color: '#000000' }] });
    expect([...sliceInfo(two).matchAll(/<filament id="(\d)"[^>]*type="(\w+)" color="(#\w+)"/g)].map((m) => m.slice(1))).toEqual([
      ['1', 'PLA', '#FFFFFF'],
      ['2', 'PETG', '#000000'],
    ]);
    expect(sliceInfo(two)).toContain('value="N2S"');
    expect(strFromU8(unzipSync(two)['Metadata/plate_1.gcode'])).toContain('; filament_type = PLA;PETG');

    const coreOne = seedFiles({ prusa: 'Core One' });
    expect(coreOne.find((f) => f.name.endsWith('.gcode'))!.data.toString()).toContain('; printer_model = COREONE');
    expect(file('.gcode').toString()).toContain('; printer_model = MK4S');
    expect(file('.gcode').toString()).toContain('; filament_type = PLA');
    expect(file('.bgcode').includes(Buffer.from('printer_model=MK4S\n'))).toBe(true);
  });
});
