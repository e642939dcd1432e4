export { KlipperDriver, type KlipperDriverOptions } from './driver';
export { mapPrintStatsState, mergeStatus, toState, SUBSCRIBED } from './state';
