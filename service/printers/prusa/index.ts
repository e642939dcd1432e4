export { PrusaDriver, type PrusaDriverOptions } from './driver';
export { mapPrusaState, mergePrusaState } from './state';
export { digestResponse, parseDigestChallenge, DigestSession } from './digest';
