import type { Kysely } from 'kysely';
import { ddl } from '../ddl';

/**
 * Cameras: a port override for the printer's own camera (NULL: 6000 or 322 by model) and a
 * camera_url (http(s) MJPEG stream or snapshot, rtsp(s)) that replaces the built-in camera.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await ddl(db)`ALTER TABLE printers ADD COLUMN camera_port INTEGER CHECK (camera_port BETWEEN 1 AND 65535)`.execute(db);
  await ddl(db)`ALTER TABLE printers ADD COLUMN camera_url TEXT CHECK (length(camera_url) <= 2048)`.execute(db);
}
