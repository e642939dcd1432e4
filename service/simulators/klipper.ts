export { KlipperSimulator, type KlipperSimulatorOptions, type KlipperFaults } from './klipper/simulator';
