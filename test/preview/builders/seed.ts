/**
 * The simulator's seed files for the preview tests: a real 3MF project,
 * G-code, BGCode and STL as the simulated printers store them.
 */
import { seedFiles } from '../../../service/simulators/seed-files';

/** The simulator's seed files (built once per process: their PNGs are slow to encode under jest). */
export const seed = {
  threemf: () => seedFiles().find((f) => f.name.endsWith('.gcode.3mf'))!.data,
  gcode: () => seedFiles().find((f) => f.name.endsWith('.gcode'))!.data,
  bgcode: () => seedFiles().find((f) => f.name.endsWith('.bgcode'))!.data,
  stl: () => seedFiles().find((f) => f.name.endsWith('.stl'))!.data,
};
