/**
 * The one interface every camera protocol implements. Only service/cameras/ and
 * service/printers/ know camera protocols; the hub and the API see CameraSource.
 */
export interface CameraFrame {
  jpeg: Buffer;
  /** Date.now() when received */
  at: number;
}

export type CameraErrorCode = 'OFFLINE' | 'AUTH' | 'TIMEOUT' | 'PROTOCOL' | 'UNSUPPORTED';

export class CameraError extends Error {
  constructor(
    readonly code: CameraErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** One upstream camera connection. start() opens it (idempotent); frames and errors go to the listeners; close() ends it and all its sockets/children. */
export interface CameraSource {
  readonly kind: 'bambu_tls' | 'rtsp' | 'prusalink' | 'mjpeg' | 'snapshot';
  start(): void;
  onFrame(listener: (frame: CameraFrame) => void): () => void;
  onError(listener: (error: CameraError) => void): () => void;
  close(): Promise<void>;
}
