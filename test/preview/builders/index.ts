/**
 * Real-format inputs made in memory for the preview tests, one module per
 * format; this index lets tests import them all from './builders'.
 */
export * from './seed';
export * from './images';
export * from './gcode';
export * from './bgcode';
export * from './threemf';
export * from './meshes';
