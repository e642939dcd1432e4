/** The simulated PrusaLink printer: see prusa/simulator.ts. */
export { PrusaSimulator, type PrusaSimulatorOptions, type PrusaFaults, type PrusaPrinterConfig } from './prusa/simulator';
export { SimStorage, shortName } from './prusa/files';
export { SimPrinter } from './prusa/printer';
