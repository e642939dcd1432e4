/**
 * What a camera failure means to an API client. CameraMissing is the one
 * failure that is no fault: the printer says it has no camera (a PrusaLink
 * printer without one), which the API answers like a printer without a
 * camera (409 CAMERA_UNAVAILABLE).
 */
import { DomainError } from '../errors';
import { CameraError } from './source';

export class CameraMissing extends CameraError {
  constructor(message: string) {
    super('UNSUPPORTED', message);
  }
}

export const cameraUnavailable = (printerId: string, reason: string) =>
  new DomainError(409, 'CAMERA_UNAVAILABLE', `Printer "${printerId}" has no camera to show: ${reason}`, { printer_id: printerId, reason });

/** 502 PRINTER_OFFLINE (unreachable), 502 CAMERA_ERROR (refused code, no frame in time, garbage), 501 CAMERA_UNSUPPORTED, 409 for a missing camera. */
export function cameraDomainError(printerId: string, error: CameraError): DomainError {
  const details = { printer_id: printerId, cause: error.code.toLowerCase() };
  if (error instanceof CameraMissing) return cameraUnavailable(printerId, error.message);
  switch (error.code) {
    case 'OFFLINE':
      return new DomainError(502, 'PRINTER_OFFLINE', `The camera of printer "${printerId}" cannot be reached: ${error.message}`, details);
    case 'UNSUPPORTED':
      return new DomainError(501, 'CAMERA_UNSUPPORTED', error.message, details);
    case 'AUTH':
      return new DomainError(502, 'CAMERA_ERROR', `The camera of printer "${printerId}" refused the connection: ${error.message}`, details);
    case 'TIMEOUT':
      return new DomainError(502, 'CAMERA_ERROR', `The camera of printer "${printerId}" sent no picture: ${error.message}`, details);
    default:
      return new DomainError(502, 'CAMERA_ERROR', `The camera of printer "${printerId}" failed: ${error.message}`, details);
  }
}
