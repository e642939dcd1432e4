import {
  bedTemperatureKey,
  cleanSlicerName,
  listValues,
  mergeMetadata,
  metadataFromCura,
  metadataFromSlicerKeys,
  parseBool,
  parseDuration,
  parseNumber,
  parsePercent,
} from '../../service/preview/metadata';

describe('slicer value parsing', () => {
  test('durations: "1d 2h 3m 4s" and its shorter forms, plain seconds, nonsense is null', () => {
    expect(parseDuration('1d 2h 3m 4s')).toBe(93784);
    expect(parseDuration('3m 41s')).toBe(221);
    expect(parseDuration('20s')).toBe(20);
    expect(parseDuration('2h 5m')).toBe(7500);
    expect(parseDuration('02h 05m 07s')).toBe(7507);
    expect(parseDuration('6085')).toBe(6085);
    expect(parseDuration(' 10m 22s ')).toBe(622);
    expect(parseDuration('soon')).toBeNull();
    expect(parseDuration('')).toBeNull();
    expect(parseDuration(undefined)).toBeNull();
  });

  test('lists, numbers, percentages and booleans the way slicers write them', () => {
    expect(listValues('PLA;PETG')).toEqual(['PLA', 'PETG']);
    expect(listValues('"PLA";"PLA"')).toEqual(['PLA', 'PLA']);
    expect(parseNumber('220,225')).toBe(220);
    expect(parseNumber('220,225', 1)).toBe(225);
    expect(parseNumber('220,225', 5)).toBe(220);
    expect(parseNumber('.2')).toBe(0.2);
    expect(parseNumber('abc')).toBeNull();
    expect(parsePercent('15%')).toBe(15);
    expect(parsePercent('0.15')).toBe(15);
    expect(parsePercent('40')).toBe(40);
    expect(parseBool('1')).toBe(true);
    expect(parseBool('True')).toBe(true);
    expect(parseBool('false')).toBe(false);
    expect(parseBool('0')).toBe(false);
    expect(parseBool('maybe')).toBeNull();
  });

  test('Bambu/Orca bed types map to their per-plate temperature keys', () => {
    expect(bedTemperatureKey('Textured PEI Plate')).toBe('textured_plate_temp');
    expect(bedTemperatureKey('High Temp Plate')).toBe('hot_plate_temp');
    expect(bedTemperatureKey('Cool Plate')).toBe('cool_plate_temp');
    expect(bedTemperatureKey('Engineering Plate')).toBe('eng_plate_temp');
    expect(bedTemperatureKey('Supertack Plate')).toBe('supertack_plate_temp');
    expect(bedTemperatureKey('Textured Cool Plate')).toBe('textured_cool_plate_temp');
    expect(bedTemperatureKey('Glass')).toBeNull();
  });

  test('producer names are cleaned of build suffixes and dates', () => {
    expect(cleanSlicerName('PrusaSlicer 2.8.1+linux-x64-GTK3 on 2024-10-21 at 06:38:01 UTC')).toBe('PrusaSlicer 2.8.1');
    expect(cleanSlicerName('BambuStudio-02.01.00.59')).toBe('BambuStudio 02.01.00.59');
    expect(cleanSlicerName('Cura_SteamEngine 5.6.0')).toBe('Cura 5.6.0');
    expect(cleanSlicerName('OrcaSlicer 2.1.1')).toBe('OrcaSlicer 2.1.1');
    expect(cleanSlicerName('')).toBeNull();
  });
});

describe('normalised metadata', () => {
  test('PrusaSlicer keys: footer time and weight, config values of the first extruder', () => {
    const m = metadataFromSlicerKeys(
      {
        'estimated printing time (normal mode)': '1d 2h 3m 4s',
        'filament used [g]': '1.20, 0, 0.29',
        layer_height: '0.15',
        fill_density: '20%',
        filament_type: 'PETG;PLA;PLA',
        temperature: '240,215,215',
        bed_temperature: '60,60,65',
        support_material: '1',
        printer_model: 'MK3SMMU2S',
      },
      { slicer: 'PrusaSlicer 2.5.0+linux' },
    );
    expect(m).toEqual({
      estimated_print_time: 93784,
      layer_height: 0.15,
      infill: 20,
      layer_count: null,
      support_material: true,
      material_type: 'PETG, PLA',
      nozzle_temperature: 240,
      bed_temperature: 60,
      filament_used_g: 1.49,
      slicer: 'PrusaSlicer 2.5.0',
      printer_model: 'MK3SMMU2S',
    });
  });

  test('Bambu keys: header time and layers, the bed temperature of the plate type, the used filament', () => {
    const m = metadataFromSlicerKeys(
      {
        'model printing time': '4m 54s',
        'total estimated time': '10m 22s',
        'total layer number': '29',
        'total filament weight [g]': '0.65',
        curr_bed_type: 'Textured PEI Plate',
        hot_plate_temp: '55;70',
        textured_plate_temp: '65;70',
        nozzle_temperature: '220;250',
        sparse_infill_density: '25%',
        enable_support: '0',
        printer_model_id: 'N2S',
      },
      { filamentIndex: 1 },
    );
    expect(m).toMatchObject({
      estimated_print_time: 622,
      layer_count: 29,
      filament_used_g: 0.65,
      bed_temperature: 70,
      nozzle_temperature: 250,
      infill: 25,
      support_material: false,
      printer_model: 'Bambu Lab A1',
      slicer: null,
    });
  });

  test('Cura header keys and the SETTING_3 dump', () => {
    const settings = '{"global_quality": "[values]\\\\ninfill_sparse_density = 20\\\\nsupport_enable = True\\\\nmaterial_print_temperature = 200\\\\nmaterial_bed_temperature = 60\\\\n"}';
    expect(metadataFromCura({ TIME: '6085', 'Layer height': '0.2', LAYER_COUNT: '244', 'Generated with': 'Cura_SteamEngine 5.6.0' }, settings)).toEqual({
      estimated_print_time: 6085,
      layer_height: 0.2,
      infill: 20,
      layer_count: 244,
      support_material: true,
      material_type: null,
      nozzle_temperature: 200,
      bed_temperature: 60,
      filament_used_g: null,
      slicer: 'Cura 5.6.0',
      printer_model: null,
    });
  });

  test('mergeMetadata keeps the first non-null value of each field', () => {
    const m = mergeMetadata({ layer_height: 0.2, infill: null }, { layer_height: 0.3, infill: 15 }, null, { slicer: 'X' });
    expect(m).toMatchObject({ layer_height: 0.2, infill: 15, slicer: 'X', layer_count: null });
  });
});
