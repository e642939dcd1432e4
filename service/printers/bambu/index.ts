export { BambuDriver, type BambuDriverOptions, type BambuDriverLogger } from './driver';
export { BambuFtp, BAMBU_FOLDERS } from './ftp';
