/** Camera responses are not JSON: the schemas name what the documentation shows (binary bodies). */
import { z } from 'zod';

export const CameraSnapshotResponse = z.string().meta({ description: 'image/jpeg', format: 'binary' });
export const CameraStreamResponse = z.string().meta({ description: 'multipart/x-mixed-replace of image/jpeg parts', format: 'binary' });
