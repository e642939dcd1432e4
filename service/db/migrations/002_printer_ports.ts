import type { Kysely } from 'kysely';
import { ddl } from '../ddl';

/** Per-printer port overrides (simulators, NAT'd printers); NULL means the protocol's real port. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await ddl(db)`ALTER TABLE printers ADD COLUMN mqtt_port INTEGER CHECK (mqtt_port BETWEEN 1 AND 65535)`.execute(db);
  await ddl(db)`ALTER TABLE printers ADD COLUMN ftps_port INTEGER CHECK (ftps_port BETWEEN 1 AND 65535)`.execute(db);
  await ddl(db)`ALTER TABLE printers ADD COLUMN http_port INTEGER CHECK (http_port BETWEEN 1 AND 65535)`.execute(db);
}
