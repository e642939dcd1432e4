/**
 * Camera routes: a snapshot (one JPEG) and a live MJPEG stream per printer.
 * Read routes like any other (viewer role and up when access control is on).
 * Frames go to the client only: never to the log, the metrics or /ws.
 */
import type { ServiceContext } from '../context';
import { DomainError } from '../errors';
import { defineRoute, type AnyRoute } from '../http/route';
import { CameraSnapshotResponse, CameraStreamResponse } from '../schemas/cameras';
import { PrinterIdParams } from '../schemas/printers';

const ERRORS_TEXT =
  '404 PRINTER_NOT_FOUND; 409 CAMERA_UNAVAILABLE when the printer has no camera (or is inactive); 502 PRINTER_OFFLINE when the printer or its camera cannot be reached; ' +
  '502 CAMERA_ERROR with the cause (access code refused, no frame within camera_timeout_s, a broken stream); 501 CAMERA_UNSUPPORTED for an RTSPS camera without ffmpeg.';

export function cameraRoutes({ cameras }: ServiceContext): AnyRoute[] {
  return [
    defineRoute({
      method: 'get',
      path: '/printers/{printer_id}/camera/snapshot',
      tag: 'Cameras',
      summary: "A JPEG from the printer's camera, at most 2 s old",
      description: `Served from the live stream when someone watches; otherwise the camera is opened on demand (and closed camera_idle_s later). With access control on, the token may also come as the \`access_token\` query parameter. ${ERRORS_TEXT}`,
      params: PrinterIdParams,
      response: CameraSnapshotResponse,
      rawResponse: { contentType: 'image/jpeg', description: 'The picture (Cache-Control: no-store)' },
      errors: [409, 501, 502],
      async handler({ params, res }) {
        const frame = await cameras.snapshot(params.printer_id);
        res.status(200).set({ 'Content-Type': 'image/jpeg', 'Cache-Control': 'no-store', 'Content-Length': String(frame.jpeg.length) });
        res.set('X-Frame-Age-Ms', String(Math.max(0, Date.now() - frame.at)));
        res.end(frame.jpeg);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/printers/{printer_id}/camera/stream',
      tag: 'Cameras',
      summary: "The printer's camera as a live MJPEG stream (multipart/x-mixed-replace)",
      description:
        'For an <img src> or a video player: one JPEG part per frame, at most camera_max_fps per second, for as long as the client reads. ' +
        'With access control on, an <img src> may give the token as the `access_token` query parameter. ' +
        'All viewers of a printer share one connection to the camera. At most camera_max_viewers streams are served at once (429 CAMERA_VIEWERS_EXCEEDED); ' +
        'a viewer that stops reading is skipped and then dropped, never buffered. ' +
        `Errors before the first frame: ${ERRORS_TEXT}`,
      params: PrinterIdParams,
      response: CameraStreamResponse,
      rawResponse: { contentType: 'multipart/x-mixed-replace; boundary=printfarm-frame', description: 'A never-ending stream of image/jpeg parts' },
      errors: [409, 501, 502],
      async handler({ params, req, res }) {
        try {
          await cameras.stream(params.printer_id, res);
        } catch (err) {
          if (err instanceof DomainError && err.status === 429) res.setHeader('Retry-After', '10');
          throw err;
        }
        // A client that went away while the first frame came gets nothing more.
        if (req.destroyed && !res.headersSent) res.destroy();
      },
    }),
  ];
}
